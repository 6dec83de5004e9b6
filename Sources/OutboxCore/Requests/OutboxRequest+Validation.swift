import Foundation

extension OutboxRequest {
    /// The payload limit unless the configuration says otherwise: 1 MiB. Attachments do not
    /// belong in the outbox.
    public static let defaultMaxPayloadBytes = 1 << 20

    /// The methods of a write.
    public static let allowedMethods: Set<String> = ["POST", "PUT", "PATCH", "DELETE"]

    /// The longest text a field other than the payload may hold, in UTF-8 bytes.
    public static let maxFieldBytes = 1024

    /// The longest endpoint, in UTF-8 bytes.
    public static let maxEndpointBytes = 2048

    /// Checks every field before anything is written.
    ///
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the first field at fault
    ///   and how to fix it. The payload's content is never quoted.
    public func validate(maxPayloadBytes: Int = OutboxRequest.defaultMaxPayloadBytes) throws(OutboxError) {
        try Self.requireText(businessID, field: "businessID", example: "the business's id")
        try Self.requireText(operationType, field: "operationType", example: "\"product.create\"")
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
            try JSONSyntax.validate(payload)
        } catch {
            throw .invalidRequest(field: "payload", problem: "must be JSON: \(error)")
        }
        if let entityID {
            try Self.requireText(entityID, field: "entityID", example: "the record's id, or nil for a lane of its own")
        }
        try Self.requireText(category, field: "category", example: "the Sync tab card, like \"Products\"")
        try Self.limitText(entityLabel, field: "entityLabel")
        try Self.limitText(summary, field: "summary")
        guard payloadVersion >= 1 && payloadVersion <= Int(UInt32.max) else {
            throw .invalidRequest(field: "payloadVersion", problem: "must be 1 or more; got \(payloadVersion)")
        }
    }

    private static func requireText(_ text: String, field: String, example: String) throws(OutboxError) {
        if text.isEmpty || Self.isAllWhiteSpace(text) {
            throw .invalidRequest(field: field, problem: "must not be empty; give \(example)")
        }
        try limitText(text, field: field)
    }

    private static func limitText(_ text: String, field: String) throws(OutboxError) {
        if text.utf8.count > maxFieldBytes {
            throw .invalidRequest(field: field, problem: "is \(text.utf8.count) bytes, over the limit of \(maxFieldBytes)")
        }
        if Self.containsControl(text) {
            throw .invalidRequest(field: field, problem: "must not contain control characters")
        }
    }

    private static func validateEndpoint(_ endpoint: String) throws(OutboxError) {
        let fix = "must be a path on the server starting with \"/\", like \"/products\""
        guard endpoint.hasPrefix("/"), !endpoint.hasPrefix("//") else {
            throw .invalidRequest(field: "endpoint", problem: "\(fix); got \"\(endpoint.prefix(64))\"")
        }
        guard endpoint.utf8.count <= maxEndpointBytes else {
            throw .invalidRequest(field: "endpoint", problem: "is over the limit of \(maxEndpointBytes) bytes")
        }
        guard isPlainPath(endpoint) || parsesAsRelativePath(endpoint) else {
            throw .invalidRequest(field: "endpoint", problem: "\(fix), percent-encoded, without a fragment; got \"\(endpoint.prefix(64))\"")
        }
    }

    /// Whether `URLComponents` reads `endpoint` as a path (and query) on the server: no white
    /// space or control character, no scheme, no host, no fragment.
    package static func parsesAsRelativePath(_ endpoint: String) -> Bool {
        guard !containsWhiteSpace(endpoint), !containsControl(endpoint), let components = URLComponents(string: endpoint) else {
            return false
        }
        return components.scheme == nil && components.host == nil && components.fragment == nil
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

    /// Whether `endpoint` is a path that needs no parsing to accept: "/" then only characters a
    /// URL path or query may hold as they are (RFC 3986 unreserved, sub-delimiters, ":", "@",
    /// "/", "?") and well-formed percent escapes. Anything else goes to `URLComponents`.
    package static func isPlainPath(_ endpoint: String) -> Bool {
        let bytes = Array(endpoint.utf8)
        guard bytes.first == UInt8(ascii: "/"), bytes.count < 2 || bytes[1] != UInt8(ascii: "/") else { return false }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else { return false }
                index += 3
                continue
            }
            guard byte.isPlainURLCharacter else { return false }
            index += 1
        }
        return true
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    var isPlainURLCharacter: Bool {
        if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
        {
            return true
        }
        return "-._~!$&'()*+,;=:@/?".utf8.contains(self)
    }
}
