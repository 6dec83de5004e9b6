// The bodies of the events of an attachment's upload (journal format 7). Each belongs to the
// write that carries the attachment, so the write's timeline is the attachment's proof.

package import Foundation
package import OutboxCrypto

/// The server granted an upload: the segment size, how many segments, and how long its signed
/// URLs last in the server's terms. The URLs themselves (their signatures) are never kept.
package struct AttachmentGranted: Sendable, Equatable {
    package var attachment: AttachmentID
    package var segmentSize: Int64
    package var segmentCount: Int
    /// The URLs' lifetime the server stated, in seconds; the engine measures the grant's age by
    /// the device's uptime from this event, never by its wall clock.
    package var lifetimeSeconds: Double

    package init(attachment: AttachmentID, segmentSize: Int64, segmentCount: Int, lifetimeSeconds: Double) {
        self.attachment = attachment
        self.segmentSize = segmentSize
        self.segmentCount = segmentCount
        self.lifetimeSeconds = lifetimeSeconds
    }
}

/// One segment reached the object store (its ETag answered, or a HEAD found it there).
package struct SegmentLanded: Sendable, Equatable {
    package var attachment: AttachmentID
    package var segment: LandedSegment

    package init(attachment: AttachmentID, segment: LandedSegment) {
        self.attachment = attachment
        self.segment = segment
    }
}

/// The server completed the object and answered its size and SHA-256, which matched the file's:
/// from this commit the write that refers to the attachment may be sent.
package struct AttachmentCompleted: Sendable, Equatable {
    package var attachment: AttachmentID
    /// The server's reference to the object (what the write's endpoint resolves the id to).
    package var object: String
    package var size: Int64
    package var sha256: SHA256Digest

    package init(attachment: AttachmentID, object: String, size: Int64, sha256: SHA256Digest) {
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
package struct AttachmentRefused: Sendable, Equatable {
    package var attachment: AttachmentID
    /// The HTTP status that refused it; `nil` for a refusal found on the device.
    package var statusCode: Int?
    /// ``ErrorCode/attachmentRefused``, ``ErrorCode/attachmentDamaged`` or
    /// ``ErrorCode/attachmentMismatch``.
    package var errorCode: String
    /// The server's message, or what the engine found.
    package var message: String

    package init(attachment: AttachmentID, statusCode: Int?, errorCode: String, message: String) {
        self.attachment = attachment
        self.statusCode = statusCode
        self.errorCode = errorCode
        self.message = message
    }
}
