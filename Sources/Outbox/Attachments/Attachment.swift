public import Foundation
public import OutboxCore

/// A file a write carries: a photo, a delivery note, a signature.
///
/// The engine keeps the bytes in the journal's directory (written whole and fsynced before the
/// write is saved), uploads them to object storage through the server's short-lived grants, and
/// sends the write only once the server completed the object. The write's payload names the
/// attachment by ``id``, so the payload is fixed at enqueue like every other.
///
/// ```swift
/// let photo = Attachment(file: pickedURL, contentType: "image/jpeg", name: "note.jpg")
/// let payload = #"{"product":"p-7","delivery_note":"\#(photo.id)"}"#
/// try await outbox.enqueue(request, changing: [], attaching: [photo])
/// ```
public struct Attachment: Sendable {
    /// Where the bytes come from.
    public enum Source: Sendable {
        /// A file on disk, copied into the journal's directory. `moving`: the engine takes the
        /// file, removing the original once the write that keeps its copy is saved (a save that
        /// fails or is cut short leaves it); otherwise the original is left alone.
        case file(URL, moving: Bool)
        /// Bytes in memory (a signature drawn on screen).
        case bytes(Data)
    }

    public var id: AttachmentID
    public var source: Source
    /// Its media type (`image/jpeg`), sent to the server with the grant request.
    public var contentType: String
    /// The name shown to the member and support (`note.jpg`).
    public var name: String

    /// A file on disk. The name defaults to the file's.
    public init(id: AttachmentID = AttachmentID(), file: URL, moving: Bool = false, contentType: String, name: String? = nil) {
        self.id = id
        self.source = .file(file, moving: moving)
        self.contentType = contentType
        self.name = name ?? file.lastPathComponent
    }

    /// Bytes in memory.
    public init(id: AttachmentID = AttachmentID(), bytes: Data, contentType: String, name: String) {
        self.id = id
        self.source = .bytes(bytes)
        self.contentType = contentType
        self.name = name
    }

    /// Its size in bytes, read from the file system for a file; `nil` when the file cannot be
    /// read (then enqueue refuses it, naming why).
    public var size: Int64? {
        switch source {
        case .bytes(let data): return Int64(data.count)
        case .file(let url, _):
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                attributes[.type] as? FileAttributeType == .typeRegular,
                let size = attributes[.size] as? NSNumber
            else { return nil }
            return size.int64Value
        }
    }
}

extension OutboxConfiguration {
    /// How the engine keeps and uploads attachments.
    public struct AttachmentSettings: Sendable, Equatable {
        /// The largest file accepted; a larger one is refused at enqueue.
        public var maxFileBytes: Int64 = 256 << 20
        /// The most attachments one write may carry.
        public var maxPerWrite: Int = 10
        /// The most bytes of attachments the device keeps at once, apart from the journal (whose
        /// writes keep their own reserve): past it, an enqueue with a file is refused before
        /// anything is saved, and ``Outbox/canKeep(attachmentBytes:)`` says so before the member
        /// confirms.
        public var budgetBytes: Int64 = 2 << 30
        /// How long a settled write's files stay on the device (the member may still export them);
        /// a discarded write's go at once.
        public var keepSeconds: TimeInterval = 7 * 86_400
        /// The server's endpoint that grants an upload (`POST`), and under it `/<id>/complete`.
        public var uploadsEndpoint: String = "/uploads"

        public init() {}
    }
}
