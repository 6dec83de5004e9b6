public import Foundation
import OutboxCrypto

/// The identity of one attachment, made on the device before the write that carries it: the
/// write's payload names it (so the payload is frozen at enqueue like every payload), and the
/// server's upload and completion are claimed under it.
public struct AttachmentID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var uuid: UUID

    public init(uuid: UUID) {
        self.uuid = uuid
    }

    /// A fresh random identity.
    public init() {
        self.uuid = UUID()
    }

    /// Parses a UUID string such as `"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"`.
    public init?(_ text: String) {
        guard let uuid = UUID(uuidString: text) else { return nil }
        self.uuid = uuid
    }

    /// The canonical upper-case UUID string: what the payload and the server name it by.
    public var description: String { OperationID(uuid: uuid).uuidString }

    /// The `Idempotency-Key` of one of the attachment's requests to the server: a name-based
    /// UUID of its id and `purpose` (`"grant-2"`, `"complete"`). The same request sent again
    /// carries the same key, so the server answers it the same; another purpose is another key.
    public func requestKey(_ purpose: String) -> String {
        var bytes = SHA256Digest(ofConcatenated: [OperationID(uuid: uuid).bytes, Array(purpose.utf8)]).bytes.prefix(16).map { $0 }
        bytes[6] = (bytes[6] & 0x0F) | 0x50   // version 5: name-based
        bytes[8] = (bytes[8] & 0x3F) | 0x80   // the RFC 4122 variant
        return OperationID(bytes: bytes)!.uuidString
    }

    public static func < (lhs: AttachmentID, rhs: AttachmentID) -> Bool {
        OperationID(uuid: lhs.uuid) < OperationID(uuid: rhs.uuid)
    }
}

extension AttachmentID: Codable {
    /// Encoded as its UUID string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = AttachmentID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a UUID: \(text)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
