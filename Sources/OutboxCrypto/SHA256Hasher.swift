#if canImport(CryptoKit)
import CryptoKit
#else
import CSodium
#endif

/// SHA-256 over bytes that arrive in pieces: a file read a chunk at a time is hashed without
/// ever being whole in memory (an attachment's file, as it is copied and as it is checked).
///
/// ```swift
/// var hasher = SHA256Hasher()
/// hasher.update(chunk)
/// let digest = hasher.finalize()
/// ```
public struct SHA256Hasher: Sendable {
    #if canImport(CryptoKit)
    private var state = CryptoKit.SHA256()
    #else
    private var state: crypto_hash_sha256_state
    #endif

    public init() {
        #if !canImport(CryptoKit)
        ensureSodiumReady
        state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        #endif
    }

    /// Adds the next bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        #if canImport(CryptoKit)
        state.update(bufferPointer: bytes)
        #else
        _ = crypto_hash_sha256_update(&state, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        #endif
    }

    /// Adds the next bytes.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything added.
    public func finalize() -> SHA256Digest {
        #if canImport(CryptoKit)
        return SHA256Digest(bytes: Array(state.finalize()))!
        #else
        var copy = state
        var out = [UInt8](repeating: 0, count: SHA256Digest.byteCount)
        out.withUnsafeMutableBufferPointer { _ = crypto_hash_sha256_final(&copy, $0.baseAddress!) }
        return SHA256Digest(bytes: out)!
        #endif
    }
}

extension SHA256Digest {
    /// Reads 64 hex digits (either case), as ``hex`` writes them; `nil` for anything else.
    public init?(hex text: some StringProtocol) {
        let digits = Array(text.utf8)
        guard digits.count == 2 * Self.byteCount else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.init(bytes: bytes)
    }
}
