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
        let b = Array(bytes)
        uuid = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                           b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    public static func < (lhs: OperationID, rhs: OperationID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
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
