import Foundation
import OutboxCrypto

/// Why stored claim bytes could not be read back, or a claim could not be stored.
public struct ClaimCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    /// Where in the bytes the problem was found.
    public var offset: Int

    public var description: String { "claim record: \(reason) at byte \(offset)" }
}

/// The binary form of claims, for stores that keep bytes (``LMDBClaimStore``).
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
enum ClaimCodec {
    static let version: UInt8 = 1
    private static let inProgressTag: UInt8 = 1
    private static let completedTag: UInt8 = 2

    // MARK: Keys

    static func key(for id: ClaimID) throws(ClaimCodingError) -> [UInt8] {
        var writer = ClaimByteWriter()
        try writer.string16(id.scope.businessID)
        try writer.string16(id.scope.operationType)
        try writer.string16(id.key.rawValue)
        return writer.bytes
    }

    static func id(fromKey bytes: some Collection<UInt8>) throws(ClaimCodingError) -> ClaimID {
        var reader = ClaimByteReader(Array(bytes))
        let business = try reader.string16()
        let operation = try reader.string16()
        let rawKey = try reader.string16()
        try reader.expectEnd()
        guard let key = IdempotencyKey(rawValue: rawKey) else {
            throw ClaimCodingError(reason: "stored key is not a valid Idempotency-Key", offset: 0)
        }
        return ClaimID(scope: ClaimScope(businessID: business, operationType: operation), key: key)
    }

    // MARK: Records

    static func encode(_ record: ClaimRecord) throws(ClaimCodingError) -> [UInt8] {
        var writer = ClaimByteWriter()
        writer.uint8(version)
        writer.raw(record.fingerprint.bytes)
        writer.date(record.takenAt)
        switch record.state {
        case .inProgress(let token, let leaseExpiresAt):
            writer.uint8(inProgressTag)
            writer.raw(withUnsafeBytes(of: token.uuid.uuid) { Array($0) })
            writer.date(leaseExpiresAt)
        case .completed(let response, let completedAt):
            writer.uint8(completedTag)
            writer.date(completedAt)
            guard let status = UInt16(exactly: response.status) else {
                throw ClaimCodingError(reason: "status \(response.status) out of range", offset: writer.bytes.count)
            }
            writer.uint16(status)
            guard let count = UInt16(exactly: response.headers.count) else {
                throw ClaimCodingError(reason: "too many headers", offset: writer.bytes.count)
            }
            writer.uint16(count)
            for header in response.headers {
                try writer.string16(header.name)
                try writer.string16(header.value)
            }
            guard let length = UInt32(exactly: response.body.count) else {
                throw ClaimCodingError(reason: "body too large", offset: writer.bytes.count)
            }
            writer.uint32(length)
            writer.raw(response.body)
        }
        return writer.bytes
    }

    static func decode(_ bytes: some Collection<UInt8>) throws(ClaimCodingError) -> ClaimRecord {
        var reader = ClaimByteReader(Array(bytes))
        let storedVersion = try reader.uint8()
        guard storedVersion == version else {
            throw ClaimCodingError(reason: "unknown version \(storedVersion)", offset: 0)
        }
        let fingerprintOffset = reader.offset
        guard let fingerprint = SHA256Digest(bytes: try reader.raw(SHA256Digest.byteCount)) else {
            throw ClaimCodingError(reason: "bad fingerprint", offset: fingerprintOffset)
        }
        let takenAt = try reader.date()
        let tagOffset = reader.offset
        let state: ClaimRecord.State
        switch try reader.uint8() {
        case inProgressTag:
            let tokenBytes = try reader.raw(16)
            let uuid = UUID(uuid: (
                tokenBytes[0], tokenBytes[1], tokenBytes[2], tokenBytes[3], tokenBytes[4], tokenBytes[5],
                tokenBytes[6], tokenBytes[7], tokenBytes[8], tokenBytes[9], tokenBytes[10], tokenBytes[11],
                tokenBytes[12], tokenBytes[13], tokenBytes[14], tokenBytes[15]))
            state = .inProgress(token: ClaimToken(uuid: uuid), leaseExpiresAt: try reader.date())
        case completedTag:
            let completedAt = try reader.date()
            let status = Int(try reader.uint16())
            let count = Int(try reader.uint16())
            var headers: [ClaimResponse.Header] = []
            headers.reserveCapacity(count)
            for _ in 0..<count {
                let name = try reader.string16()
                let value = try reader.string16()
                headers.append(ClaimResponse.Header(name: name, value: value))
            }
            let length = Int(try reader.uint32())
            let body = Data(try reader.raw(length))
            state = .completed(response: ClaimResponse(status: status, headers: headers, body: body), completedAt: completedAt)
        case let tag:
            throw ClaimCodingError(reason: "unknown state \(tag)", offset: tagOffset)
        }
        try reader.expectEnd()
        return ClaimRecord(fingerprint: fingerprint, takenAt: takenAt, state: state)
    }
}

/// Appends big-endian fields.
struct ClaimByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func uint8(_ value: UInt8) { bytes.append(value) }

    mutating func uint16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xff))
    }

    mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }

    mutating func uint64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }

    mutating func date(_ date: Date) {
        uint64(date.timeIntervalSinceReferenceDate.bitPattern)
    }

    mutating func raw(_ run: some Sequence<UInt8>) { bytes.append(contentsOf: run) }

    mutating func string16(_ text: String) throws(ClaimCodingError) {
        let utf8 = Array(text.utf8)
        guard let length = UInt16(exactly: utf8.count) else {
            throw ClaimCodingError(reason: "a text field of \(utf8.count) bytes is too long", offset: bytes.count)
        }
        uint16(length)
        bytes.append(contentsOf: utf8)
    }
}

/// Reads what ``ClaimByteWriter`` wrote; every read past the end throws.
struct ClaimByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func raw(_ count: Int) throws(ClaimCodingError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else {
            throw ClaimCodingError(reason: "truncated: \(count) bytes expected", offset: offset)
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func uint8() throws(ClaimCodingError) -> UInt8 {
        try raw(1)[0]
    }

    mutating func uint16() throws(ClaimCodingError) -> UInt16 {
        try raw(2).reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func uint32() throws(ClaimCodingError) -> UInt32 {
        try raw(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func uint64() throws(ClaimCodingError) -> UInt64 {
        try raw(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func date() throws(ClaimCodingError) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(bitPattern: try uint64()))
    }

    mutating func string16() throws(ClaimCodingError) -> String {
        let start = offset
        let length = Int(try uint16())
        let utf8 = try raw(length)
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw ClaimCodingError(reason: "text is not UTF-8", offset: start)
        }
        return text
    }

    func expectEnd() throws(ClaimCodingError) {
        guard offset == bytes.count else {
            throw ClaimCodingError(reason: "\(bytes.count - offset) unexpected trailing bytes", offset: offset)
        }
    }
}
