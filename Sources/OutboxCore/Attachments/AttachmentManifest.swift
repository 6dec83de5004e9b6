public import Foundation
public import OutboxCrypto

/// What the journal keeps of one attachment in the `enqueued` event that carries it: its
/// identity, how the member named it, and the size and SHA-256 of the file the engine holds
/// (`attachments/<sha256>` in the journal's directory, durable before that commit).
package struct AttachmentManifest: Sendable, Equatable {
    public var id: AttachmentID
    /// The file's name as the member or the app gave it (`note.jpg`): shown, never a path.
    public var name: String
    /// Its media type (`image/jpeg`), sent to the server with the grant request.
    public var contentType: String
    /// Its size in bytes.
    public var size: Int64
    /// The SHA-256 of its bytes: the name of its local file and what the server's completion
    /// must answer.
    public var sha256: SHA256Digest

    public init(id: AttachmentID, name: String, contentType: String, size: Int64, sha256: SHA256Digest) {
        self.id = id
        self.name = name
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
    }
}

/// One segment of an attachment that reached the object store: its number (from 1), its size
/// and the store's ETag for it, as the completion names them.
package struct LandedSegment: Sendable, Equatable {
    public var number: Int
    public var size: Int64
    public var etag: String

    public init(number: Int, size: Int64, etag: String) {
        self.number = number
        self.size = size
        self.etag = etag
    }
}

/// An attachment's upload as its events left it: the grant's shape, the segments landed, the
/// completion or the refusal. Part of its write's state (``OperationState/attachments``).
package struct AttachmentUpload: Sendable, Equatable {
    package var manifest: AttachmentManifest
    /// The segment size the server's grant set; `nil` before the first grant.
    package var segmentSize: Int64?
    /// Grants recorded so far: the next grant request is number `grants + 1`, its key
    /// derived from that (``AttachmentID/requestKey(_:)``), so a request whose answer was lost
    /// is answered the same, and one after an expiry is a new grant.
    package var grants = 0
    /// Refusals recorded so far: a person's retry after one asks the server anew (its
    /// requests' keys name it), where the same key would be answered with the same refusal.
    package var refusals = 0
    /// Landed segments, by number.
    package var landed: [LandedSegment] = []
    /// The object the server completed, and the hash it answered.
    package var completedObject: String?
    /// Why the attachment was refused (``ErrorCode``), until a person retries its write.
    package var refusedCode: String?

    package init(manifest: AttachmentManifest) {
        self.manifest = manifest
    }

    package var id: AttachmentID { manifest.id }

    /// The purpose that keys the next grant request (``AttachmentID/requestKey(_:)``).
    package var nextGrantPurpose: String { "grant-\(grants + 1)-\(refusals)" }
    /// The purpose that keys the completion request.
    package var completionPurpose: String { "complete-\(refusals)" }
    package var isCompleted: Bool { completedObject != nil }

    /// How many segments the file takes at `segmentSize` (one for an empty file).
    package static func segmentCount(size: Int64, segmentSize: Int64) -> Int {
        size == 0 ? 1 : Int((size + segmentSize - 1) / segmentSize)
    }

    /// The bytes the store holds: all of them once completed, else the landed segments'.
    package var landedBytes: Int64 {
        isCompleted ? manifest.size : landed.reduce(0) { $0 + $1.size }
    }
}
