/// A string compared byte for byte, by its UTF-8, never by canonical equivalence.
///
/// Swift's `String ==` and its hash call two strings equal when they are canonically
/// equivalent: "café" with a composed "é" (NFC) and with "e" and a combining accent (NFD) are
/// one `String` key, while LMDB and PostgreSQL compare bytes and keep two. A key that lives both
/// in a Swift dictionary or set and in a database is an `ExactString`, so the two never disagree
/// on what "the same key" is. No normalization is applied anywhere: NFC and NFD are two keys.
///
/// ```swift
/// let counts: [ExactString: Int] = ["caf\u{E9}": 1, "cafe\u{301}": 2]   // two keys
/// counts["caf\u{E9}"]   // 1
/// ```
public struct ExactString: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text, as given.
    public let string: String

    public init(_ string: String) {
        self.string = string
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The text's UTF-8 bytes: what equality, order and hashing read.
    public var utf8: String.UTF8View { string.utf8 }

    public static func == (left: ExactString, right: ExactString) -> Bool {
        left.string.utf8.elementsEqual(right.string.utf8)
    }

    /// Byte order, as LMDB orders keys.
    public static func < (left: ExactString, right: ExactString) -> Bool {
        left.string.utf8.lexicographicallyPrecedes(right.string.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { string }
}

extension ExactString: Codable, CodingKeyRepresentable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }

    /// A dictionary keyed by exact strings encodes as an object, like one keyed by `String`.
    public var codingKey: any CodingKey { Key(stringValue: string) }

    public init?<T: CodingKey>(codingKey: T) {
        self.init(codingKey.stringValue)
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
