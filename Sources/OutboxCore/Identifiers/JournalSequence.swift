/// A position in the journal: strictly increasing, gap-free, starting at 1.
///
/// The only order that counts. Wall-clock moments are for display; nothing is ordered or
/// expired by them.
public struct JournalSequence: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public init(integerLiteral value: UInt64) {
        self.rawValue = value
    }

    /// The position before the first event: an empty journal's last sequence.
    public static let zero = JournalSequence(rawValue: 0)

    /// The position right after this one.
    public var next: JournalSequence { JournalSequence(rawValue: rawValue + 1) }

    /// The 8-byte big-endian key the event is stored under, so keys sort in journal order.
    public var key: [UInt8] { rawValue.bigEndianBytes }

    /// Reads a key written by ``key``.
    public init?(key: some Collection<UInt8>) {
        guard key.count == 8 else { return nil }
        self.rawValue = key.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Reads a key as LMDB lends it, without going through a collection.
    public init?(key: UnsafeRawBufferPointer) {
        guard key.count == 8 else { return nil }
        self.rawValue = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    public static func < (lhs: JournalSequence, rhs: JournalSequence) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { String(rawValue) }
}

extension FixedWidthInteger {
    /// The value's bytes, most significant first.
    package var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }
}

extension JournalSequence: Codable {
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
