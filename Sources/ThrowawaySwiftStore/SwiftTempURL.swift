import OutboxCrypto

/// The query that makes a Swift object URL a temporary URL (Swift's `tempurl` middleware):
/// anyone holding it may send `method` to `path` until `expiresUnixSeconds`, with no token.
///
/// The signature is the lowercase hex of HMAC-SHA256 over `"METHOD\nEXPIRES\nPATH"` under the
/// account's `X-Account-Meta-Temp-URL-Key`; 64 hex digits tell the middleware it is SHA-256 (no
/// `sha256:` prefix, which marks base64). The store must allow `sha256` in `allowed_digests`.
///
/// ```swift
/// let query = SwiftTempURL.query(method: "PUT", path: "/v1/AUTH_test/photos/p-1/0001",
///                                expiresUnixSeconds: 1_700_000_300, key: "secret")
/// // temp_url_sig=9c1e...&temp_url_expires=1700000300
/// ```
public enum SwiftTempURL {
    /// The lowercase hex HMAC-SHA256 of `"METHOD\nEXPIRES\nPATH"` under `key`.
    /// - Parameters:
    ///   - method: the HTTP method the URL allows (`PUT`, `GET`; a `GET` URL also allows `HEAD`).
    ///   - path: the object's path from `/v1/` on, as the server decodes it (not percent-encoded):
    ///     `/v1/AUTH_test/container/object`.
    ///   - expiresUnixSeconds: the last second the URL works, in seconds since 1970 (UTC).
    ///   - key: the account's (or the container's) temp URL key.
    public static func signature(method: String, path: String, expiresUnixSeconds: Int64, key: String) -> String {
        let body = "\(method)\n\(expiresUnixSeconds)\n\(path)"
        return hex(HMACSHA256.authenticationCode(for: Array(body.utf8), key: Array(key.utf8)))
    }

    /// `temp_url_sig=<signature>&temp_url_expires=<expiresUnixSeconds>`, to append to the object's
    /// URL after a `?`; see ``signature(method:path:expiresUnixSeconds:key:)`` for the parameters.
    public static func query(method: String, path: String, expiresUnixSeconds: Int64, key: String) -> String {
        let signature = signature(method: method, path: path, expiresUnixSeconds: expiresUnixSeconds, key: key)
        return "temp_url_sig=\(signature)&temp_url_expires=\(expiresUnixSeconds)"
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
