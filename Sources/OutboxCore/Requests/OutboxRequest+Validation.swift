import Foundation
import OutboxWire

extension OutboxRequest {
    /// The payload limit unless the configuration says otherwise: 1 MiB. Attachments do not
    /// belong in the outbox.
    public static let defaultMaxPayloadBytes = 1 << 20

    /// The methods of a write.
    public static let allowedMethods: Set<String> = ["POST", "PUT", "PATCH", "DELETE"]

    /// The longest text a field other than the payload may hold, in UTF-8 bytes.
    public static let maxFieldBytes = 1024

    /// The longest business id, in UTF-8 bytes: it enters the lane index's keys, which LMDB caps
    /// at 511 bytes with their suffixes (Docs/journal-format.md, "Keys and their bounds").
    public static let maxBusinessIDBytes = 128

    /// The longest operation type, in UTF-8 bytes: an identifier such as "product.create".
    public static let maxOperationTypeBytes = 128

    /// The longest entity id, in UTF-8 bytes: it enters the lane index's keys.
    public static let maxEntityIDBytes = 255

    /// The longest category, in UTF-8 bytes: it enters the Sync tab index's keys.
    public static let maxCategoryBytes = 255

    /// The longest endpoint, in UTF-8 bytes.
    public static let maxEndpointBytes = 2048

    /// Checks every field before anything is written.
    ///
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the first field at fault
    ///   and how to fix it. The payload's content is never quoted.
    public func validate(maxPayloadBytes: Int = OutboxRequest.defaultMaxPayloadBytes) throws(OutboxError) {
        try Self.requireText(businessID, field: "businessID", example: "the business's id", limit: Self.maxBusinessIDBytes)
        try Self.requireText(operationType, field: "operationType", example: "\"product.create\"", limit: Self.maxOperationTypeBytes)
        if Self.containsWhiteSpace(operationType) {
            throw .invalidRequest(field: "operationType", problem: "must not contain white space, like \"product.create\"")
        }
        guard Self.allowedMethods.contains(method) else {
            throw .invalidRequest(
                field: "method",
                problem: "must be one of POST, PUT, PATCH or DELETE (upper case); got \"\(method.prefix(16))\""
            )
        }
        try Self.validateEndpoint(endpoint)
        guard payload.count <= maxPayloadBytes else {
            throw .invalidRequest(
                field: "payload",
                problem: "is \(payload.count) bytes, over the limit of \(maxPayloadBytes); send attachments outside the outbox"
            )
        }
        do {
            try JSONNode.check(Array(payload))
        } catch {
            throw .invalidRequest(field: "payload", problem: "must be JSON: \(error.reason)")
        }
        if let entityID {
            try Self.requireText(entityID, field: "entityID", example: "the record's id, or nil for a lane of its own", limit: Self.maxEntityIDBytes)
        }
        try Self.requireText(category, field: "category", example: "the Sync tab card, like \"Products\"", limit: Self.maxCategoryBytes)
        try Self.limitText(entityLabel, field: "entityLabel")
        try Self.limitText(summary, field: "summary")
        guard payloadVersion >= 1 && payloadVersion <= Int(UInt32.max) else {
            throw .invalidRequest(field: "payloadVersion", problem: "must be 1 or more; got \(payloadVersion)")
        }
        if let baseRevision, let problem = Self.revisionProblem(baseRevision) {
            throw .invalidRequest(field: "baseRevision", problem: problem)
        }
        guard dependsOn.count <= Self.maxDependencies else {
            throw .invalidRequest(field: "dependsOn", problem: "names \(dependsOn.count) operations; at most \(Self.maxDependencies) are allowed")
        }
        guard Set(dependsOn).count == dependsOn.count else {
            throw .invalidRequest(field: "dependsOn", problem: "names an operation twice; name each once")
        }
        if let operationID, dependsOn.contains(operationID) {
            throw .invalidRequest(field: "dependsOn", problem: "names the operation itself; a write cannot wait for itself")
        }
    }

    /// The most operations one write may depend on.
    public static let maxDependencies = 64

    /// The longest base revision, in bytes.
    public static let maxRevisionBytes = 256

    /// Why `revision` cannot be sent as `If-Match: "<revision>"`; `nil` when it can. An entity
    /// tag's opaque part: printable ASCII without `"` or white space (RFC 9110 `etagc`).
    package static func revisionProblem(_ revision: String) -> String? {
        if revision.isEmpty { return "must not be empty; give the record's revision as the server returned it, or nil" }
        if revision.utf8.count > maxRevisionBytes {
            return "is \(revision.utf8.count) bytes, over the limit of \(maxRevisionBytes)"
        }
        if let bad = revision.utf8.first(where: { $0 <= 0x20 || $0 == 0x22 || $0 >= 0x7F }) {
            return "holds byte 0x\(String(bad, radix: 16)), which an entity tag cannot carry: printable ASCII without quotes or spaces"
        }
        return nil
    }

    private static func requireText(_ text: String, field: String, example: String, limit: Int = maxFieldBytes) throws(OutboxError) {
        if text.isEmpty || Self.isAllWhiteSpace(text) {
            throw .invalidRequest(field: field, problem: "must not be empty; give \(example)")
        }
        try limitText(text, field: field, limit: limit)
    }

    private static func limitText(_ text: String, field: String, limit: Int = maxFieldBytes) throws(OutboxError) {
        if text.utf8.count > limit {
            throw .invalidRequest(field: field, problem: "is \(text.utf8.count) bytes (UTF-8), over the limit of \(limit)")
        }
        if Self.containsControl(text) {
            throw .invalidRequest(field: field, problem: "must not contain control characters")
        }
    }

    private static func validateEndpoint(_ endpoint: String) throws(OutboxError) {
        guard endpoint.utf8.count <= maxEndpointBytes else {
            throw .invalidRequest(field: "endpoint", problem: "is \(endpoint.utf8.count) bytes, over the limit of \(maxEndpointBytes)")
        }
        if let problem = endpointProblem(endpoint) {
            throw .invalidRequest(field: "endpoint", problem: problem)
        }
    }

    /// Why `endpoint` cannot be journaled and sent byte for byte, and how to fix it; `nil` when
    /// it can.
    ///
    /// An endpoint is an absolute path (`/`, not `//`), optionally followed by `?` and a query,
    /// holding only what RFC 3986 allows there as it is: unreserved characters, sub-delimiters,
    /// `:`, `@` and `/` (and `?` in the query), with every `%` starting an escape of two hex
    /// digits. Anything else would be re-encoded by `URL` or by the HTTP client on its way out,
    /// so the server would get other bytes than the journal holds: no fragment, backslash,
    /// space, control or non-ASCII character, and no `.` or `..` path segment (clients remove
    /// dot segments before sending). The transport checks stored rows against the same rule.
    package static func endpointProblem(_ endpoint: String) -> String? {
        var endpoint = endpoint
        return endpoint.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/") else {
                return "must be a path on the server starting with \"/\", like \"/products\"; got \(quoted(bytes))"
            }
            if bytes.count > 1, bytes[1] == UInt8(ascii: "/") {
                return "must start with a single \"/\" (\"//\" would name another server), like \"/products\"; got \(quoted(bytes))"
            }
            var inQuery = false
            var segmentStart = 1
            var index = 1
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "%"):
                    guard index + 2 < bytes.count, bytes[index + 1].isASCIIHexDigit, bytes[index + 2].isASCIIHexDigit else {
                        return "holds a \"%\" not followed by two hex digits (\(quoted(UnsafeBufferPointer(rebasing: bytes[index..<min(index + 3, bytes.count)]))));"
                            + " percent-encode a literal \"%\" as %25"
                    }
                    index += 3
                    continue
                case UInt8(ascii: "/") where !inQuery, UInt8(ascii: "?") where !inQuery:
                    if let dots = dotSegment(bytes[segmentStart..<index]) { return dots }
                    segmentStart = index + 1
                    inQuery = byte == UInt8(ascii: "?")
                case UInt8(ascii: "#"):
                    return "must not hold a fragment: \"#\" and what follows it are never sent; remove it, or percent-encode a literal \"#\" as %23"
                case UInt8(ascii: "\\"):
                    return "must not hold a backslash, which URLs re-encode and some servers read as \"/\"; percent-encode it as %5C"
                case UInt8(ascii: " "):
                    return "must not hold a space; percent-encode it as %20"
                case 0x80...:
                    let scalar = String(decoding: UnsafeBufferPointer(rebasing: bytes[index...].prefix(4)), as: UTF8.self).unicodeScalars.first
                    let named = scalar.map { "\($0.codePoint) as \(percentEncoded(String($0).utf8))" } ?? "it as \(percentEncoded([byte]))"
                    return "must be ASCII: percent-encode the UTF-8 bytes of \(named)"
                case ..<0x20, 0x7F:
                    return "must not hold control characters (\(Unicode.Scalar(byte).codePoint)); percent-encode it as \(percentEncoded([byte]))"
                default:
                    guard byte.isURLPathCharacter || (inQuery && byte == UInt8(ascii: "?")) else {
                        return "must not hold \"\(Unicode.Scalar(byte))\" as it is, which a URL does not allow; percent-encode it as \(percentEncoded([byte]))"
                    }
                }
                index += 1
            }
            if !inQuery, let dots = dotSegment(bytes[segmentStart...]) { return dots }
            return nil
        }
    }

    /// The problem with a path segment that is `.` or `..`, which clients resolve away.
    private static func dotSegment(_ segment: Slice<UnsafeBufferPointer<UInt8>>) -> String? {
        guard segment.count == 1 || segment.count == 2, segment.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return nil }
        return "must not hold the path segment \"\(segment.count == 1 ? "." : "..")\": HTTP clients resolve dot segments away"
            + " before sending (RFC 3986 §5.2.4), so the server would get another path; write the path it stands for"
    }

    /// The first 64 characters of `bytes` (UTF-8), quoted, control characters escaped.
    private static func quoted(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(String(decoding: bytes, as: UTF8.self).prefix(64)).debugDescription
    }

    /// `bytes` as percent-escapes: `%C3%BC` for the UTF-8 of "ü".
    private static func percentEncoded(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { "%\(digits[Int($0 >> 4)])\(digits[Int($0 & 0xF)])" }.joined()
    }

    // MARK: Character checks, ASCII first
    //
    // Nearly every field is ASCII, where each check is a comparison of bytes; only text with
    // other characters asks Unicode's properties.

    /// ASCII characters with the White_Space property: tab, line feed, vertical tab, form feed,
    /// carriage return, space.
    private static func isASCIIWhiteSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }

    package static func containsWhiteSpace(_ text: String) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.contains(where: isASCIIWhiteSpace) }
        return text.unicodeScalars.contains { $0.properties.isWhitespace }
    }

    package static func isAllWhiteSpace(_ text: String) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.allSatisfy(isASCIIWhiteSpace) }
        return text.allSatisfy(\.isWhitespace)
    }

    /// Whether `text` holds a character of the general category Control (Cc).
    package static func containsControl(_ text: String) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.contains { $0 < 0x20 || $0 == 0x7F } }
        return text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

private extension UInt8 {
    var isASCIIHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    /// What RFC 3986 lets a path hold as it is (`pchar` and "/"): unreserved characters,
    /// sub-delimiters, ":" and "@". Escapes are checked on their own.
    var isURLPathCharacter: Bool {
        if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
        {
            return true
        }
        return "-._~!$&'()*+,;=:@/".utf8.contains(self)
    }
}

private extension Unicode.Scalar {
    /// `U+00FC`.
    var codePoint: String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
