/// A string compared byte for byte: text used as a key, equal, hashed and ordered by its UTF-8
/// bytes, on both halves (the engine's configuration, counters and metrics; the server's claims,
/// records and counts).
///
/// Swift's `String` compares by Unicode canonical equivalence: `"café"` written with `é`
/// (NFC, `C3 A9`) and with `e` and a combining accent (NFD, `65 CC 81`) are `==` and hash
/// alike, so a `[String: V]` keeps one entry where PostgreSQL and LMDB, which compare bytes,
/// keep two. Every key either half keeps in a Swift collection (idempotency keys, business
/// ids, operation types, categories, record ids) is an `ExactString`, or a type whose `==` is the same byte
/// comparison, so a store in memory and a store in a database agree on what "the same key" is.
/// Nothing is normalized: NFC and NFD are two keys.
///
/// ```swift
/// let nfc = ExactString("caf\u{E9}"), nfd = ExactString("cafe\u{301}")
/// nfc == nfd            // false, though "caf\u{E9}" == "cafe\u{301}" is true
/// ```
public struct ExactString: Hashable, Comparable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The text, exactly as given.
    public let string: String

    public init(_ string: String) {
        self.string = string
    }

    public init(stringLiteral string: String) {
        self.string = string
    }

    /// The UTF-8 bytes the key is compared by.
    public var utf8: String.UTF8View { string.utf8 }

    public static func == (lhs: ExactString, rhs: ExactString) -> Bool {
        lhs.string.hasSameBytes(as: rhs.string)
    }

    public func hash(into hasher: inout Hasher) {
        string.hashBytes(into: &hasher)
    }

    /// Byte order, as PostgreSQL's `COLLATE "C"` and LMDB's default comparison sort UTF-8.
    public static func < (lhs: ExactString, rhs: ExactString) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    public var description: String { string }
}

extension String {
    /// Whether the two hold the same UTF-8 bytes: `==` without Unicode canonical equivalence.
    package func hasSameBytes(as other: String) -> Bool {
        utf8.count == other.utf8.count && utf8.elementsEqual(other.utf8)
    }

    /// Feeds the UTF-8 bytes and their count to `hasher`, for types whose `==` is
    /// ``hasSameBytes(as:)``.
    package func hashBytes(into hasher: inout Hasher) {
        let done: Void? = utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
        hasher.combine(utf8.count)
    }

    /// Whether it holds a control character (Unicode category Cc: U+0000 to U+001F, U+007F to
    /// U+009F), which a header cannot carry and PostgreSQL's `text` refuses (U+0000).
    package var containsControlCharacter: Bool {
        unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
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
