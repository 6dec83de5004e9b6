/// The number of an attempt to send one operation: 1 for the first, then 2, 3, ...
package struct AttemptNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public var rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    public init(integerLiteral value: Int) {
        self.rawValue = value
    }

    public var next: AttemptNumber { AttemptNumber(rawValue: rawValue + 1) }

    public static func < (lhs: AttemptNumber, rhs: AttemptNumber) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { String(rawValue) }
}
