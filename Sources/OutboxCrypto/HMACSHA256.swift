#if canImport(CryptoKit)
import CryptoKit
#else
import CSodium
#endif

/// HMAC-SHA256 (RFC 2104) with a key of any length: CryptoKit on Apple platforms, libsodium's
/// `crypto_auth_hmacsha256` on Linux.
///
/// ```swift
/// let code = HMACSHA256.authenticationCode(for: Array("GET\n1700000000\n/v1/AUTH_test/c/o".utf8),
///                                          key: Array("secret".utf8))
/// code.count   // 32
/// ```
public enum HMACSHA256 {
    /// The code's size in bytes.
    public static let byteCount = 32

    /// The 32-byte authentication code of `message` under `key`.
    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        #else
        ensureSodiumReady
        var state = crypto_auth_hmacsha256_state()
        var code = [UInt8](repeating: 0, count: byteCount)
        // libsodium's HMAC takes any key length (a longer one is hashed first, as RFC 2104 says)
        // and cannot fail for any input; a nonzero result is a broken library.
        // An empty key still needs a pointer; libsodium reads none of its bytes.
        let initialized = (key.isEmpty ? [0] : key).withUnsafeBufferPointer {
            crypto_auth_hmacsha256_init(&state, $0.baseAddress!, key.count)
        }
        precondition(initialized == 0, "crypto_auth_hmacsha256_init failed")
        let updated = message.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        precondition(updated == 0, "crypto_auth_hmacsha256_update failed")
        let finished = code.withUnsafeMutableBufferPointer { crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        precondition(finished == 0, "crypto_auth_hmacsha256_final failed")
        return code
        #endif
    }
}
