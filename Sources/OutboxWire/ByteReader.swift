package import Foundation

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

    /// Checks that `count` more bytes are there and moves past them.
    /// - Returns: where they start.
    private mutating func advance(_ count: Int, _ what: StaticString) throws(DecodingProblem) -> Int {
        guard count >= 0, count <= remaining else {
            throw DecodingProblem("truncated \(what): needs \(count) bytes, \(remaining) left")
        }
        defer { position += count }
        return position
    }

    /// Lends `count` bytes to `body` without copying them.
    private mutating func borrow<R>(
        _ count: Int,
        _ what: StaticString,
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(DecodingProblem) -> R {
        let start = try advance(count, what)
        return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T {
        try borrow(MemoryLayout<T>.size, what) { T(bigEndian: $0.loadUnaligned(as: T.self)) }
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

    /// The farthest a stored moment may lie from 2001, in seconds: ten thousand years.
    package static let maxMomentSeconds: Double = 10_000 * 365.25 * 86_400

    package mutating func readDate(_ what: StaticString = "moment") throws(DecodingProblem) -> Date {
        let seconds = Double(bitPattern: try readUInt64(what))
        guard seconds.isFinite else { throw DecodingProblem("\(what) is not a finite moment") }
        // No clock writes a moment ten thousand years from 2001: such bytes are damage.
        guard abs(seconds) <= Self.maxMomentSeconds else { throw DecodingProblem("\(what) is not a moment any clock writes") }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    package mutating func readBytes(_ what: StaticString = "bytes") throws(DecodingProblem) -> [UInt8] {
        let count = Int(try readUInt32(what))
        return try borrow(count, what) { Array($0) }
    }

    /// `count` bytes as they are, with no length before them.
    package mutating func readRaw(_ count: Int, _ what: StaticString = "bytes") throws(DecodingProblem) -> [UInt8] {
        try borrow(count, what) { Array($0) }
    }

    /// `count` bytes as they are, lent to `body` without copying them.
    package mutating func withRaw<R>(_ count: Int, _ what: StaticString, _ body: (UnsafeRawBufferPointer) -> R) throws(DecodingProblem) -> R {
        try borrow(count, what, body)
    }

    /// UTF-8 text with a u16 length: for short fields (claim keys, header names).
    package mutating func readShortString(_ what: StaticString = "text") throws(DecodingProblem) -> String {
        let count = Int(try readUInt16(what))
        guard let text = try borrow(count, what, { Self.validatedString($0.assumingMemoryBound(to: UInt8.self)) }) else {
            throw DecodingProblem("\(what) is not valid UTF-8")
        }
        return text
    }

    package mutating func readString(_ what: StaticString = "text") throws(DecodingProblem) -> String {
        let count = Int(try readUInt32(what))
        let text = try borrow(count, what) { Self.validatedString($0.assumingMemoryBound(to: UInt8.self)) }
        guard let text else {
            throw DecodingProblem("\(what) is not valid UTF-8")
        }
        return text
    }

    /// The text of valid UTF-8 bytes; `nil` for invalid ones. ASCII, the usual case, is checked
    /// eight bytes at a time and taken as it is.
    private static func validatedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let raw = UnsafeRawBufferPointer(bytes)
        var index = 0
        var highBits: UInt64 = 0
        while index + 8 <= raw.count {
            highBits |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < raw.count {
            highBits |= UInt64(raw[index])
            index += 1
        }
        if highBits & 0x8080_8080_8080_8080 == 0 { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
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

    package func expectEnd(_ what: StaticString) throws(DecodingProblem) {
        guard isAtEnd else { throw DecodingProblem("\(remaining) unexpected bytes after \(what)") }
    }
}
