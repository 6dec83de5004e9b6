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

    /// A fresh random identity: a version 4 UUID from the system's secure generator
    /// (`getrandom` on Linux, `arc4random` on Apple platforms). Foundation's `UUID()` on Linux
    /// opens and reads `/dev/urandom` for each one, a file opened per enqueue.
    public init() {
        var generator = SystemRandomNumberGenerator()
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: generator.next() as UInt64, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: generator.next() as UInt64, toByteOffset: 8, as: UInt64.self)
            raw[6] = raw[6] & 0x0F | 0x40  // version 4: random
            raw[8] = raw[8] & 0x3F | 0x80  // the RFC 9562 variant
        }
        self.uuid = UUID(uuid: bytes)
    }

    /// Parses a UUID string such as `"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"`.
    public init?(_ text: String) {
        guard let uuid = UUID(uuidString: text) else { return nil }
        self.uuid = uuid
    }

    /// The value of the `Idempotency-Key` header.
    public var idempotencyKey: String { uuidString }

    public var description: String { uuidString }

    /// The UUID in its canonical upper-case form, as `UUID.uuidString` writes it, formatted here
    /// directly: it names a lane and a request at every event, and Foundation formats it through
    /// `printf`.
    public var uuidString: String {
        let digits: StaticString = "0123456789ABCDEF"
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        text[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    text[index] = digits.utf8Start[Int(byte >> 4)]
                    text[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }

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
    /// (Compared as two big-endian words, the same order as byte by byte: ids are sorted by
    /// the hundred thousand when a journal is rebuilt.)
    public static func < (lhs: OperationID, rhs: OperationID) -> Bool {
        let (left, right) = (lhs.words, rhs.words)
        return left.high != right.high ? left.high < right.high : left.low < right.low
    }

    /// The 16 bytes as two unsigned words, the first eight bytes the high one.
    private var words: (high: UInt64, low: UInt64) {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            (UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)), UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
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
        try container.encode(uuidString)
    }
}
