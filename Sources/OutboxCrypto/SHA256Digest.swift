public import Foundation

#if canImport(CryptoKit)
import CryptoKit
#else
import CSodium
#endif

/// A SHA-256 digest: 32 bytes, compared and printed as lowercase hex.
///
/// Computed by a well-kept implementation, never our own: CryptoKit on Apple platforms,
/// libsodium's `crypto_hash_sha256` on Linux.
///
/// ```swift
/// let digest = SHA256Digest(of: payload)
/// digest.hex   // "9f86d081884c7d65..."
/// ```
public struct SHA256Digest: Hashable, Sendable, CustomStringConvertible {
    /// The digest's size in bytes.
    public static let byteCount = 32

    // The 32 bytes as four big-endian words, held inline: a digest is read with every record
    // value and every request, and an inline value costs no allocation to decode, copy or compare.
    private let w0, w1, w2, w3: UInt64

    /// The 32 digest bytes.
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.byteCount) { buffer, count in
            withUnsafeBytes { buffer.baseAddress!.initialize(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: Self.byteCount) }
            count = Self.byteCount
        }
    }

    /// Lends the 32 digest bytes to `body`, without copying them into an array.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return try Swift.withUnsafeBytes(of: &words) { try body($0) }
    }

    /// Wraps digest bytes read back from storage.
    /// - Returns: `nil` unless `bytes` holds exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard let digest = bytes.withUnsafeBytes({ SHA256Digest(raw: $0) }) else { return nil }
        self = digest
    }

    /// Wraps 32 digest bytes lent in place.
    /// - Returns: `nil` unless `raw` holds exactly 32 bytes.
    public init?(raw: UnsafeRawBufferPointer) {
        guard raw.count == Self.byteCount else { return nil }
        w0 = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        w1 = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        w2 = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        w3 = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
    }

    /// Hashes `data`.
    public init(of data: some ContiguousBytes) {
        self.init(bytes: data.withUnsafeBytes { SHA256Digest.hash($0) })!
    }

    /// Hashes several byte runs as one message, without joining them first.
    public init(ofConcatenated parts: [[UInt8]]) {
        self.init(bytes: SHA256Digest.hash(parts: parts))!
    }

    /// Lowercase hexadecimal, 64 characters.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    #if canImport(CryptoKit)
    private static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        Array(CryptoKit.SHA256.hash(data: buffer))
    }

    private static func hash(parts: [[UInt8]]) -> [UInt8] {
        var hasher = CryptoKit.SHA256()
        for part in parts { hasher.update(data: part) }
        return Array(hasher.finalize())
    }
    #else
    private static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        ensureSodiumReady
        var out = [UInt8](repeating: 0, count: byteCount)
        let rc = out.withUnsafeMutableBufferPointer { outBuffer in
            crypto_hash_sha256(
                outBuffer.baseAddress!,
                buffer.baseAddress?.assumingMemoryBound(to: UInt8.self),
                UInt64(buffer.count)
            )
        }
        // libsodium's SHA-256 cannot fail for any input; a nonzero result is a broken library.
        precondition(rc == 0, "crypto_hash_sha256 failed")
        return out
    }

    private static func hash(parts: [[UInt8]]) -> [UInt8] {
        ensureSodiumReady
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        for part in parts {
            _ = part.withUnsafeBufferPointer { crypto_hash_sha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        }
        var out = [UInt8](repeating: 0, count: byteCount)
        out.withUnsafeMutableBufferPointer { _ = crypto_hash_sha256_final(&state, $0.baseAddress!) }
        return out
    }
    #endif
}
