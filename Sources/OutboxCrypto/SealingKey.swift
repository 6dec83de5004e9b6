public import Foundation

#if canImport(CryptoKit)
import CryptoKit
#else
import CSodium
#endif

/// A 32-byte key for sealing data at rest with ChaCha20-Poly1305 (IETF, 96-bit nonces), from a
/// well-kept implementation: CryptoKit on Apple platforms, libsodium on Linux.
///
/// ```swift
/// let key = try SealingKey(bytes: keychainBytes)    // 32 bytes from the app's keychain
/// let sealed = key.seal(payload, authenticating: id.bytes)
/// let opened = try key.open(sealed, authenticating: id.bytes)
/// ```
///
/// A sealed value is the 12-byte random nonce, the ciphertext and the 16-byte tag. Opening with
/// another key, other associated data, or altered bytes fails: never garbage.
public struct SealingKey: Sendable, Equatable {
    public static let byteCount = 32
    static let nonceCount = 12
    static let tagCount = 16

    let bytes: [UInt8]

    /// - Throws: ``SealingError/badKeyLength(_:)`` unless `bytes` holds exactly 32 bytes.
    public init(bytes: some Collection<UInt8>) throws(SealingError) {
        guard bytes.count == Self.byteCount else { throw .badKeyLength(bytes.count) }
        self.bytes = Array(bytes)
    }

    /// Lends the key's bytes (to store it in the keychain, or write a key file for support).
    public func withUnsafeKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// A fresh random key.
    public static func random() -> SealingKey {
        var generator = SystemRandomNumberGenerator()
        // 32 random bytes: the initializer cannot fail.
        return try! SealingKey(bytes: (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// Seals `plaintext`, binding it to `associatedData` (which is not stored).
    public func seal(_ plaintext: some ContiguousBytes, authenticating associatedData: [UInt8]) -> [UInt8] {
        let message = plaintext.withUnsafeBytes { Array($0) }
        #if canImport(CryptoKit)
        // With a 32-byte key and a fresh random nonce sealing cannot fail. ChaChaPoly's
        // combined form is the nonce, the ciphertext and the tag, as documented.
        let box = try! ChaChaPoly.seal(message, using: SymmetricKey(data: bytes), authenticating: associatedData)
        return Array(box.combined)
        #else
        ensureSodiumReady
        var nonce = [UInt8](repeating: 0, count: Self.nonceCount)
        nonce.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, Self.nonceCount) }
        var ciphertext = [UInt8](repeating: 0, count: message.count + Self.tagCount)
        var written: UInt64 = 0
        let rc = crypto_aead_chacha20poly1305_ietf_encrypt(
            &ciphertext, &written, message, UInt64(message.count), associatedData, UInt64(associatedData.count),
            nil, nonce, bytes
        )
        // Encryption cannot fail for any input of these sizes; a nonzero result is a broken library.
        precondition(rc == 0 && Int(written) == ciphertext.count, "crypto_aead_chacha20poly1305_ietf_encrypt failed")
        return nonce + ciphertext
        #endif
    }

    /// Opens a value sealed with this key and `associatedData`.
    /// - Throws: ``SealingError/cannotOpen`` for another key, other associated data, or damage.
    public func open(_ sealed: [UInt8], authenticating associatedData: [UInt8]) throws(SealingError) -> [UInt8] {
        guard sealed.count >= Self.nonceCount + Self.tagCount else { throw .cannotOpen }
        #if canImport(CryptoKit)
        do {
            let box = try ChaChaPoly.SealedBox(combined: sealed)
            return Array(try ChaChaPoly.open(box, using: SymmetricKey(data: bytes), authenticating: associatedData))
        } catch {
            throw .cannotOpen
        }
        #else
        ensureSodiumReady
        let nonce = Array(sealed.prefix(Self.nonceCount))
        let ciphertext = Array(sealed.dropFirst(Self.nonceCount))
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count - Self.tagCount)
        var written: UInt64 = 0
        let rc = crypto_aead_chacha20poly1305_ietf_decrypt(
            &plaintext, &written, nil, ciphertext, UInt64(ciphertext.count), associatedData,
            UInt64(associatedData.count), nonce, bytes
        )
        guard rc == 0 else { throw .cannotOpen }
        return Array(plaintext.prefix(Int(written)))
        #endif
    }
}

/// Why a key or a sealed value was refused.
public enum SealingError: Error, Equatable, Sendable, CustomStringConvertible {
    case badKeyLength(Int)
    case cannotOpen

    public var description: String {
        switch self {
        case .badKeyLength(let count): "an encryption key is 32 bytes; this one is \(count)"
        case .cannotOpen: "the sealed value does not open with this key: a wrong key, or damaged bytes"
        }
    }
}

#if !canImport(CryptoKit)
/// libsodium must be initialized once before use; `sodium_init` is safe to call repeatedly.
let ensureSodiumReady: Void = {
    // -1 means the library could not initialize (no entropy source): nothing can be sealed.
    precondition(sodium_init() >= 0, "libsodium failed to initialize")
}()
#endif
