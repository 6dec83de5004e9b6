import Foundation
import OutboxCrypto
import OutboxWire

/// Why stored claim bytes could not be read back, or a claim could not be stored.
public struct ClaimCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    /// Where in the bytes the problem was found.
    public var offset: Int

    public var description: String { "claim record: \(reason) at byte \(offset)" }
}

/// The binary form of claims, for stores that keep bytes (`LMDBClaimStore`).
///
/// A key is the three parts of a ``ClaimID``, each a big-endian `UInt16` length and UTF-8:
/// (business id, operation type, key), so claims of one business sort together. A record is:
///
/// ```text
/// u8 version (1) | 32 bytes fingerprint | f64 takenAt | u8 state
///   state 1, in progress: 16 bytes token | f64 leaseExpiresAt
///   state 2, completed:   f64 completedAt | u16 status | u16 header count
///                         (u16 name length, name, u16 value length, value)*
///                         u32 body length, body
/// ```
///
/// Integers are big-endian; dates are the bits of `timeIntervalSinceReferenceDate`, exact.
package enum ClaimCodec {
    static let version: UInt8 = 1
    private static let inProgressTag: UInt8 = 1
    private static let completedTag: UInt8 = 2

    // MARK: Keys

    /// The longest key LMDB stores (`mdb_env_get_maxkeysize` of the default build): a longer one
    /// is refused here, as an error, rather than handed to LMDB, which treats it as misuse.
    static let maxKeyBytes = 511

    package static func key(for id: ClaimID) throws(ClaimCodingError) -> [UInt8] {
        var writer = ByteWriter()
        do {
            try writer.writeShort(id.scope.businessID)
            try writer.writeShort(id.scope.operationType)
            try writer.writeShort(id.key.rawValue)
        } catch {
            throw ClaimCodingError(reason: error.reason, offset: writer.bytes.count)
        }
        guard writer.bytes.count <= maxKeyBytes else {
            throw ClaimCodingError(
                reason: "the claim's key (business id, operation type and key, with their lengths) is \(writer.bytes.count) bytes;"
                    + " LMDB keys hold at most \(maxKeyBytes): the server must bound the business id", offset: 0)
        }
        return writer.bytes
    }

    package static func id(fromKey bytes: some Collection<UInt8>) throws(ClaimCodingError) -> ClaimID {
        var reader = ByteReader(Array(bytes))
        let id = try reading(&reader) { (reader) throws(DecodingProblem) in
            let business = try reader.readShortString("business id")
            let operation = try reader.readShortString("operation type")
            let rawKey = try reader.readShortString("key")
            try reader.expectEnd("the claim key")
            return (business, operation, rawKey)
        }
        guard let key = IdempotencyKey(rawValue: id.2) else {
            throw ClaimCodingError(reason: "stored key is not a valid Idempotency-Key", offset: 0)
        }
        return ClaimID(scope: ClaimScope(businessID: id.0, operationType: id.1), key: key)
    }

    // MARK: Records

    package static func encode(_ record: ClaimRecord) throws(ClaimCodingError) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writer.write(version)
        writer.write(raw: record.fingerprint.bytes)
        writer.write(record.takenAt)
        switch record.state {
        case .inProgress(let token, let leaseExpiresAt):
            writer.write(inProgressTag)
            withUnsafeBytes(of: token.uuid.uuid) { writer.write(raw: $0) }
            writer.write(leaseExpiresAt)
        case .completed(let response, let completedAt):
            writer.write(completedTag)
            writer.write(completedAt)
            guard let status = UInt16(exactly: response.status) else {
                throw ClaimCodingError(reason: "status \(response.status) out of range", offset: writer.bytes.count)
            }
            writer.write(status)
            guard let count = UInt16(exactly: response.headers.count) else {
                throw ClaimCodingError(reason: "too many headers", offset: writer.bytes.count)
            }
            writer.write(count)
            do {
                for header in response.headers {
                    try writer.writeShort(header.name)
                    try writer.writeShort(header.value)
                }
            } catch {
                throw ClaimCodingError(reason: error.reason, offset: writer.bytes.count)
            }
            guard UInt32(exactly: response.body.count) != nil else {
                throw ClaimCodingError(reason: "body too large", offset: writer.bytes.count)
            }
            writer.write(bytes: response.body)
        }
        return writer.bytes
    }

    package static func decode(_ bytes: some Collection<UInt8>) throws(ClaimCodingError) -> ClaimRecord {
        var reader = ByteReader(Array(bytes))
        return try reading(&reader) { (reader) throws(DecodingProblem) in
            let storedVersion = try reader.readUInt8("version")
            guard storedVersion == version else { throw DecodingProblem("unknown version \(storedVersion)") }
            // 32 bytes taken: the initializer cannot fail.
            let fingerprint = SHA256Digest(bytes: try reader.readRaw(SHA256Digest.byteCount, "fingerprint"))!
            let takenAt = try reader.readDate("taken at")
            let state: ClaimRecord.State
            switch try reader.readUInt8("state") {
            case inProgressTag:
                let token = try reader.withRaw(16, "token") { ClaimToken(uuid: UUID(uuid: $0.loadUnaligned(as: uuid_t.self))) }
                state = .inProgress(token: token, leaseExpiresAt: try reader.readDate("lease"))
            case completedTag:
                let completedAt = try reader.readDate("completed at")
                let status = Int(try reader.readUInt16("status"))
                let count = Int(try reader.readUInt16("header count"))
                var headers: [ClaimResponse.Header] = []
                headers.reserveCapacity(min(count, reader.remaining / 4))
                for _ in 0..<count {
                    let name = try reader.readShortString("header name")
                    let value = try reader.readShortString("header value")
                    headers.append(ClaimResponse.Header(name: name, value: value))
                }
                let body = Data(try reader.readBytes("body"))
                state = .completed(response: ClaimResponse(status: status, headers: headers, body: body), completedAt: completedAt)
            case let tag:
                throw DecodingProblem("unknown state \(tag)")
            }
            try reader.expectEnd("the claim")
            return ClaimRecord(fingerprint: fingerprint, takenAt: takenAt, state: state)
        }
    }

    /// Runs `body` on `reader`; a problem is reported where the reader stood.
    private static func reading<R>(
        _ reader: inout ByteReader, _ body: (inout ByteReader) throws(DecodingProblem) -> R
    ) throws(ClaimCodingError) -> R {
        do {
            return try body(&reader)
        } catch {
            throw ClaimCodingError(reason: error.reason, offset: reader.position)
        }
    }
}
