/// A place in a server's change feed: the cursor a page answers with, and the position from which
/// an answered write's change is visible (`Outbox-Visible-At`). Both halves compare them, so the
/// engine can tell whether a page has passed a write it sent.
///
/// Three numbers, ordered as written: the server's **epoch** (raised at each restore from a
/// backup or reset, so a position of another life of the server never compares as this one's),
/// then two the backend chooses. A PostgreSQL feed uses the writing transaction's id and a
/// sequence within the table (`(epoch, xid, seq)`); a feed with one writer at a time, a change
/// number and 0. The promise every backend makes: a page whose cursor is at or past `p` has
/// delivered every change visible at `p`.
///
/// On the wire it is text, `"<epoch>-<major>-<minor>"` in decimal without signs or leading zeros
/// (`"3-41-0"`); anything else is refused by ``init(text:)``, naming what is wrong.
public struct FeedPosition: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var epoch: UInt64
    public var major: UInt64
    public var minor: UInt64

    public init(epoch: UInt64, major: UInt64, minor: UInt64 = 0) {
        self.epoch = epoch
        self.major = major
        self.minor = minor
    }

    /// The start of an epoch's feed: before every change of it.
    public static func start(of epoch: UInt64) -> FeedPosition { FeedPosition(epoch: epoch, major: 0, minor: 0) }

    public var text: String { "\(epoch)-\(major)-\(minor)" }
    public var description: String { text }

    public static func < (left: FeedPosition, right: FeedPosition) -> Bool {
        (left.epoch, left.major, left.minor) < (right.epoch, right.major, right.minor)
    }

    /// Whether a page at `cursor` (or a snapshot read from it on) has delivered what is visible
    /// at this position: at or before it, which a position of an older epoch always is (the epoch
    /// compares first), and one of a newer never.
    public func isDelivered(by cursor: FeedPosition) -> Bool { self <= cursor }

    /// Why a text is not a position: said so that a server's author knows what to fix.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads the wire's text of a position.
    /// - Throws: ``Problem`` naming the text and what is wrong with it.
    public init(text: String) throws(Problem) {
        let parts = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw Problem(description: "feed position '\(Self.shown(text))' is not three numbers joined by '-' (epoch-major-minor)")
        }
        var numbers: [UInt64] = []
        for (part, name) in zip(parts, ["epoch", "major", "minor"]) {
            guard let number = Self.decimal(part) else {
                throw Problem(description: "feed position '\(Self.shown(text))': its \(name) is not a decimal number from 0 to \(UInt64.max) without a sign or leading zeros")
            }
            numbers.append(number)
        }
        self.init(epoch: numbers[0], major: numbers[1], minor: numbers[2])
    }

    /// A decimal without sign or leading zeros that fits 64 bits; `nil` otherwise.
    private static func decimal(_ digits: Substring.UTF8View.SubSequence) -> UInt64? {
        guard let first = digits.first, !(first == UInt8(ascii: "0") && digits.count > 1) else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { return nil }
            value = sum
        }
        return value
    }

    /// At most 64 characters of a refused text, so an error never carries a body's worth.
    private static func shown(_ text: String) -> String {
        text.count <= 64 ? text : String(text.prefix(64)) + "..."
    }
}

extension ByteWriter {
    /// A feed position in the journal's records: its epoch, major and minor, each a u64.
    public mutating func write(position: FeedPosition) {
        write(position.epoch)
        write(position.major)
        write(position.minor)
    }
}

extension ByteReader {
    public mutating func readPosition(_ what: StaticString) throws(DecodingProblem) -> FeedPosition {
        FeedPosition(epoch: try readUInt64(what), major: try readUInt64(what), minor: try readUInt64(what))
    }
}
