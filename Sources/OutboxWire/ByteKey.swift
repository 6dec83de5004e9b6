/// Text used as a key, equal, hashed and ordered by its UTF-8 bytes.
///
/// Swift's `String` compares by Unicode canonical equivalence: `"café"` written with `é`
/// (NFC, `C3 A9`) and with `e` and a combining accent (NFD, `65 CC 81`) are `==` and hash
/// alike, so a `[String: V]` keeps one entry where PostgreSQL and LMDB, which compare bytes,
/// keep two. Every key the server half keeps in a Swift collection (idempotency keys, business
/// ids, operation types, record ids) is a `ByteKey`, or a type whose `==` is the same byte
/// comparison, so a store in memory and a store in a database agree on what "the same key" is.
/// Nothing is normalized: NFC and NFD are two keys.
///
/// ```swift
/// let nfc = ByteKey("caf\u{E9}"), nfd = ByteKey("cafe\u{301}")
/// nfc == nfd            // false, though "caf\u{E9}" == "cafe\u{301}" is true
/// ```
public struct ByteKey: Hashable, Comparable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The text, exactly as given.
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    public init(stringLiteral text: String) {
        self.text = text
    }

    /// The UTF-8 bytes the key is compared by.
    public var utf8: String.UTF8View { text.utf8 }

    public static func == (lhs: ByteKey, rhs: ByteKey) -> Bool {
        lhs.text.hasSameBytes(as: rhs.text)
    }

    public func hash(into hasher: inout Hasher) {
        text.hashBytes(into: &hasher)
    }

    /// Byte order, as PostgreSQL's `COLLATE "C"` and LMDB's default comparison sort UTF-8.
    public static func < (lhs: ByteKey, rhs: ByteKey) -> Bool {
        lhs.text.utf8.lexicographicallyPrecedes(rhs.text.utf8)
    }

    public var description: String { text }
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
