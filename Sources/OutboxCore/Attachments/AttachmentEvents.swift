// The bodies of the events of an attachment's upload (journal format 7). Each belongs to the
// write that carries the attachment, so the write's timeline is the attachment's proof.

public import Foundation
public import OutboxCrypto

/// The server granted an upload: the segment size, how many segments, and how long its signed
/// URLs last in the server's terms. The URLs themselves (their signatures) are never kept.
public struct AttachmentGranted: Sendable, Equatable {
    public var attachment: AttachmentID
    public var segmentSize: Int64
    public var segmentCount: Int
    /// The URLs' lifetime the server stated, in seconds; the engine measures the grant's age by
    /// the device's uptime from this event, never by its wall clock.
    public var lifetimeSeconds: Double

    public init(attachment: AttachmentID, segmentSize: Int64, segmentCount: Int, lifetimeSeconds: Double) {
        self.attachment = attachment
        self.segmentSize = segmentSize
        self.segmentCount = segmentCount
        self.lifetimeSeconds = lifetimeSeconds
    }
}

/// One segment reached the object store (its ETag answered, or a HEAD found it there).
public struct SegmentLanded: Sendable, Equatable {
    public var attachment: AttachmentID
    public var segment: LandedSegment

    public init(attachment: AttachmentID, segment: LandedSegment) {
        self.attachment = attachment
        self.segment = segment
    }
}

/// The server completed the object and answered its size and SHA-256, which matched the file's:
/// from this commit the write that refers to the attachment may be sent.
public struct AttachmentCompleted: Sendable, Equatable {
    public var attachment: AttachmentID
    /// The server's reference to the object (what the write's endpoint resolves the id to).
    public var object: String
    public var size: Int64
    public var sha256: SHA256Digest

    public init(attachment: AttachmentID, object: String, size: Int64, sha256: SHA256Digest) {
        self.attachment = attachment
        self.object = object
        self.size = size
        self.sha256 = sha256
    }
}

/// The attachment cannot be uploaded as it is: the server refused the grant (403, 413), the
/// store refused a segment for another reason than an expired grant, the completion answered
/// another object, or the local file is missing or damaged. Its write is held, failed, with the
/// file kept, until a person retries, exports or discards it.
public struct AttachmentRefused: Sendable, Equatable {
    public var attachment: AttachmentID
    /// The HTTP status that refused it; `nil` for a refusal found on the device.
    public var statusCode: Int?
    /// ``ErrorCode/attachmentRefused``, ``ErrorCode/attachmentDamaged`` or
    /// ``ErrorCode/attachmentMismatch``.
    public var errorCode: String
    /// The server's message, or what the engine found.
    public var message: String

    public init(attachment: AttachmentID, statusCode: Int?, errorCode: String, message: String) {
        self.attachment = attachment
        self.statusCode = statusCode
        self.errorCode = errorCode
        self.message = message
    }
}
