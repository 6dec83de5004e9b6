public import Foundation

/// The identity of one queued write, fixed on the device when it is enqueued.
///
/// Its UUID string is the `Idempotency-Key` sent on every attempt, so a server that has already
/// applied the write recognizes every replay of it.
public struct OperationID: Hashable, Sendable, Comparable, CustomStringConvertible {
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

    /// The value of the `Idempotency-Key` header.
    public var idempotencyKey: String { uuid.uuidString }

    public var description: String { uuid.uuidString }

    /// The 16 bytes of the UUID, as stored in the journal.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    /// Reads the 16 bytes written by ``bytes``.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes) }
        uuid = UUID(uuid: raw)
    }

    /// Hashes the 16 bytes in one run.
    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: uuid.uuid) { hasher.combine(bytes: $0) }
    }

    public static func == (lhs: OperationID, rhs: OperationID) -> Bool {
        lhs.uuid == rhs.uuid
    }

    /// The order of the 16 bytes, as the journal's indexes sort them.
    public static func < (lhs: OperationID, rhs: OperationID) -> Bool {
        withUnsafeBytes(of: lhs.uuid.uuid) { left in
            withUnsafeBytes(of: rhs.uuid.uuid) { right in left.lexicographicallyPrecedes(right) }
        }
    }
}

extension OperationID: Codable {
    /// Encoded as its UUID string, the idempotency key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = OperationID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a UUID: \(text)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uuid.uuidString)
    }
}
