import OutboxWire

/// The value of a request's `Idempotency-Key` header, checked.
///
/// The client sends one key per logical write and sends it again, unchanged, on every retry.
/// Surrounding white space is dropped (HTTP ignores it); what remains must be 1 to
/// ``maxBytes`` bytes without control characters. Keys are equal and hashed by their UTF-8
/// bytes, never by Unicode canonical equivalence: `k-café` in NFC and in NFD are two keys, as
/// they are in PostgreSQL and LMDB. Nothing is normalized.
///
/// ```swift
/// switch IdempotencyKey.parse(request.header("Idempotency-Key")) {
/// case .success(let key): ...
/// case .failure(let problem): ...   // answer 400
/// }
/// ```
public struct IdempotencyKey: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The longest key accepted, in UTF-8 bytes.
    public static let maxBytes = 255

    /// Why a header value is not a usable key.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// No header, or only white space.
        case missing
        /// Longer than ``IdempotencyKey/maxBytes``.
        case tooLong(bytes: Int)
        /// Holds a control character.
        case controlCharacter

        public var description: String {
            switch self {
            case .missing:
                "the Idempotency-Key header is required on this request and must not be blank"
            case .tooLong(let bytes):
                "the Idempotency-Key header is \(bytes) bytes long; the most accepted is \(IdempotencyKey.maxBytes)"
            case .controlCharacter:
                "the Idempotency-Key header holds a control character"
            }
        }
    }

    /// The key as checked: trimmed, non-empty, at most ``maxBytes`` bytes.
    public let rawValue: String

    /// Wraps a key known to be valid; `nil` unless ``parse(_:)`` would accept it unchanged.
    public init?(rawValue: String) {
        guard case .success(let key) = Self.parse(rawValue), key.rawValue.hasSameBytes(as: rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(checked: String) {
        rawValue = checked
    }

    /// Checks a header's value: `nil` (no header) and blank values are ``Problem/missing``.
    public static func parse(_ header: String?) -> Result<IdempotencyKey, Problem> {
        guard let header else { return .failure(.missing) }
        let trimmed = header.trimmingHTTPWhitespace()
        if trimmed.isEmpty { return .failure(.missing) }
        let bytes = trimmed.utf8.count
        if bytes > maxBytes { return .failure(.tooLong(bytes: bytes)) }
        if trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return .failure(.controlCharacter)
        }
        return .success(IdempotencyKey(checked: trimmed))
    }

    public var description: String { rawValue }

    public static func == (lhs: IdempotencyKey, rhs: IdempotencyKey) -> Bool {
        lhs.rawValue.hasSameBytes(as: rhs.rawValue)
    }

    public func hash(into hasher: inout Hasher) {
        rawValue.hashBytes(into: &hasher)
    }
}

extension String {
    /// Drops leading and trailing spaces and tabs (HTTP's optional white space) and line breaks,
    /// byte by byte: what remains keeps its bytes exactly (a combining mark after a space stays).
    func trimmingHTTPWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        // Cut at ASCII bytes only: the rest is still UTF-8.
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
