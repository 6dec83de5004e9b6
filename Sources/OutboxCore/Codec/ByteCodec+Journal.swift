import Foundation
package import OutboxCrypto
package import OutboxWire

/// The journal's own field types in the byte codec: digests, operation ids, one-byte codes.
extension ByteWriter {
    package mutating func write(_ digest: SHA256Digest) { digest.withUnsafeBytes { write(raw: $0) } }

    package mutating func write(_ id: OperationID) {
        withUnsafeBytes(of: id.uuid.uuid) { write(raw: $0) }
    }

    /// A duration in seconds, as its IEEE 754 bits: exact on the way back.
    package mutating func write(seconds: Double) { write(seconds.bitPattern) }
}

extension ByteReader {
    /// A duration in seconds: finite and not negative, else damage.
    package mutating func readSeconds(_ what: StaticString = "seconds") throws(DecodingProblem) -> Double {
        let seconds = Double(bitPattern: try readUInt64(what))
        guard seconds.isFinite, seconds >= 0 else { throw DecodingProblem("\(what) is not a duration") }
        return seconds
    }

    package mutating func readDigest(_ what: StaticString = "digest") throws(DecodingProblem) -> SHA256Digest {
        // 32 bytes taken: the initializer cannot fail.
        try withRaw(SHA256Digest.byteCount, what) { SHA256Digest(raw: $0)! }
    }

    package mutating func readOperationID(_ what: StaticString = "operation id") throws(DecodingProblem) -> OperationID {
        // 16 bytes taken: the initializer cannot fail.
        try withRaw(16, what) { OperationID(uuid: UUID(uuid: $0.loadUnaligned(as: uuid_t.self))) }
    }

    /// Reads a one-byte code of a ``JournalCode`` enum.
    package mutating func readCode<T: JournalCode>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T {
        let code = try readUInt8(what)
        guard let value = T(code: code) else { throw DecodingProblem("unknown \(what) code \(code)") }
        return value
    }
}
