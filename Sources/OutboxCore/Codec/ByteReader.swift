package import Foundation
package import OutboxCrypto

/// Why bytes could not be decoded.
package struct DecodingProblem: Error, Equatable, CustomStringConvertible {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}

/// Reads big-endian fields written by ``ByteWriter``, refusing anything out of bounds.
package struct ByteReader {
    private let bytes: [UInt8]
    package private(set) var position: Int
    private let end: Int

    package init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.position = start
        self.end = end ?? bytes.count
    }

    package var isAtEnd: Bool { position == end }
    package var remaining: Int { end - position }

    private mutating func take(_ count: Int, _ what: StaticString) throws(DecodingProblem) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else {
            throw DecodingProblem("truncated \(what): needs \(count) bytes, \(remaining) left")
        }
        defer { position += count }
        return bytes[position..<position + count]
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T {
        try take(MemoryLayout<T>.size, what).reduce(T(0)) { $0 << 8 | T($1) }
    }

    package mutating func readUInt8(_ what: StaticString = "byte") throws(DecodingProblem) -> UInt8 {
        try integer(UInt8.self, what)
    }
    package mutating func readUInt16(_ what: StaticString = "u16") throws(DecodingProblem) -> UInt16 {
        try integer(UInt16.self, what)
    }
    package mutating func readUInt32(_ what: StaticString = "u32") throws(DecodingProblem) -> UInt32 {
        try integer(UInt32.self, what)
    }
    package mutating func readUInt64(_ what: StaticString = "u64") throws(DecodingProblem) -> UInt64 {
        try integer(UInt64.self, what)
    }

    package mutating func readBool(_ what: StaticString = "flag") throws(DecodingProblem) -> Bool {
        switch try readUInt8(what) {
        case 0: return false
        case 1: return true
        case let other: throw DecodingProblem("\(what) is \(other), expected 0 or 1")
        }
    }

    package mutating func readDate(_ what: StaticString = "moment") throws(DecodingProblem) -> Date {
        let seconds = Double(bitPattern: try readUInt64(what))
        guard seconds.isFinite else { throw DecodingProblem("\(what) is not a finite moment") }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    package mutating func readBytes(_ what: StaticString = "bytes") throws(DecodingProblem) -> [UInt8] {
        let count = Int(try readUInt32(what))
        return Array(try take(count, what))
    }

    package mutating func readString(_ what: StaticString = "text") throws(DecodingProblem) -> String {
        let count = Int(try readUInt32(what))
        let run = try take(count, what)
        guard let text = String(validating: run, as: UTF8.self) else {
            throw DecodingProblem("\(what) is not valid UTF-8")
        }
        return text
    }

    package mutating func readDigest(_ what: StaticString = "digest") throws(DecodingProblem) -> SHA256Digest {
        // 32 bytes taken: the initializer cannot fail.
        SHA256Digest(bytes: Array(try take(SHA256Digest.byteCount, what)))!
    }

    package mutating func readOperationID(_ what: StaticString = "operation id") throws(DecodingProblem) -> OperationID {
        // 16 bytes taken: the initializer cannot fail.
        OperationID(bytes: try take(16, what))!
    }

    package mutating func readOptional<T>(
        _ what: StaticString,
        _ readValue: (inout ByteReader) throws(DecodingProblem) -> T
    ) throws(DecodingProblem) -> T? {
        try readBool(what) ? try readValue(&self) : nil
    }

    package mutating func readOptionalString(_ what: StaticString) throws(DecodingProblem) -> String? {
        try readOptional(what) { (reader) throws(DecodingProblem) in try reader.readString(what) }
    }

    package mutating func readOptionalDate(_ what: StaticString) throws(DecodingProblem) -> Date? {
        try readOptional(what) { (reader) throws(DecodingProblem) in try reader.readDate(what) }
    }

    /// Reads a one-byte code of a ``JournalCode`` enum.
    package mutating func readCode<T: JournalCode>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T {
        let code = try readUInt8(what)
        guard let value = T(code: code) else { throw DecodingProblem("unknown \(what) code \(code)") }
        return value
    }

    package func expectEnd(_ what: StaticString) throws(DecodingProblem) {
        guard isAtEnd else { throw DecodingProblem("\(remaining) unexpected bytes after \(what)") }
    }
}
