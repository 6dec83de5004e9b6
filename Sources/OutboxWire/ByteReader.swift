public import Foundation

/// Why bytes could not be decoded.
public struct DecodingProblem: Error, Equatable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Reads big-endian fields written by ``ByteWriter``, refusing anything out of bounds.
///
/// Public and inlinable, not for apps (no product exports it) but so that each call inlines and
/// specializes in the module that makes it: stored states are decoded field by field on the hot
/// paths of the writer and the reads. (A `package` method is not inlined across modules.)
public struct ByteReader {
    @usableFromInline let bytes: [UInt8]
    /// Where the next field starts. (Settable only so that the inlinable methods can move it.)
    public var position: Int
    @usableFromInline let end: Int

    @inlinable public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.position = start
        self.end = end ?? bytes.count
    }

    @inlinable public var isAtEnd: Bool { position == end }
    @inlinable public var remaining: Int { end - position }

    /// Checks that `count` more bytes are there and moves past them.
    /// - Returns: where they start.
    @inlinable mutating func advance(_ count: Int, _ what: StaticString) throws(DecodingProblem) -> Int {
        guard count >= 0, count <= remaining else {
            throw DecodingProblem("truncated \(what): needs \(count) bytes, \(remaining) left")
        }
        defer { position += count }
        return position
    }

    /// Moves past a `bytes` or `string` field (a u32 length, then that many bytes) unread.
    @inlinable public mutating func skipBytes(_ what: StaticString = "bytes") throws(DecodingProblem) {
        _ = try advance(Int(try readUInt32(what)), what)
    }

    /// Moves past `count` bytes unread.
    @inlinable public mutating func skip(_ count: Int, _ what: StaticString = "bytes") throws(DecodingProblem) {
        _ = try advance(count, what)
    }

    /// Lends `count` bytes to `body` without copying them.
    @inlinable mutating func borrow<R>(
        _ count: Int,
        _ what: StaticString,
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(DecodingProblem) -> R {
        let start = try advance(count, what)
        return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    @inlinable mutating func integer<T: FixedWidthInteger>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T {
        try borrow(MemoryLayout<T>.size, what) { T(bigEndian: $0.loadUnaligned(as: T.self)) }
    }

    @inlinable public mutating func readUInt8(_ what: StaticString = "byte") throws(DecodingProblem) -> UInt8 {
        try integer(UInt8.self, what)
    }
    @inlinable public mutating func readUInt16(_ what: StaticString = "u16") throws(DecodingProblem) -> UInt16 {
        try integer(UInt16.self, what)
    }
    @inlinable public mutating func readUInt32(_ what: StaticString = "u32") throws(DecodingProblem) -> UInt32 {
        try integer(UInt32.self, what)
    }
    @inlinable public mutating func readUInt64(_ what: StaticString = "u64") throws(DecodingProblem) -> UInt64 {
        try integer(UInt64.self, what)
    }

    @inlinable public mutating func readBool(_ what: StaticString = "flag") throws(DecodingProblem) -> Bool {
        switch try readUInt8(what) {
        case 0: return false
        case 1: return true
        case let other: throw DecodingProblem("\(what) is \(other), expected 0 or 1")
        }
    }

    /// The farthest a stored moment may lie from 2001, in seconds: ten thousand years.
    public static let maxMomentSeconds: Double = 10_000 * 365.25 * 86_400

    @inlinable public mutating func readDate(_ what: StaticString = "moment") throws(DecodingProblem) -> Date {
        let seconds = Double(bitPattern: try readUInt64(what))
        guard seconds.isFinite else { throw DecodingProblem("\(what) is not a finite moment") }
        // No clock writes a moment ten thousand years from 2001: such bytes are damage.
        guard abs(seconds) <= Self.maxMomentSeconds else { throw DecodingProblem("\(what) is not a moment any clock writes") }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    @inlinable public mutating func readBytes(_ what: StaticString = "bytes") throws(DecodingProblem) -> [UInt8] {
        let count = Int(try readUInt32(what))
        return try borrow(count, what) { Array($0) }
    }

    /// A `bytes` field as `Data`, copied once.
    @inlinable public mutating func readData(_ what: StaticString = "bytes") throws(DecodingProblem) -> Data {
        let count = Int(try readUInt32(what))
        return try borrow(count, what) { Data($0) }
    }

    /// Moves past a `bytes` field. - Returns: where its bytes lie, to read them later with
    /// ``data(in:)`` (a field another refers to).
    @inlinable public mutating func skipBytesKeepingRange(_ what: StaticString = "bytes") throws(DecodingProblem) -> Range<Int> {
        let count = Int(try readUInt32(what))
        let start = try advance(count, what)
        return start..<(start + count)
    }

    /// The bytes of a range ``skipBytesKeepingRange(_:)`` answered, as `Data`.
    @inlinable public func data(in range: Range<Int>) -> Data {
        bytes.withUnsafeBytes { Data(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Whether the next `string` field holds exactly the bytes of `text`; moves past it either way.
    @inlinable public mutating func readString(matching text: String, _ what: StaticString = "text") throws(DecodingProblem) -> Bool {
        let count = Int(try readUInt32(what))
        return try borrow(count, what) { field in
            var text = text
            return text.withUTF8 { $0.count == field.count && (field.isEmpty || memcmp($0.baseAddress!, field.baseAddress!, field.count) == 0) }
        }
    }

    /// `count` bytes as they are, with no length before them.
    @inlinable public mutating func readRaw(_ count: Int, _ what: StaticString = "bytes") throws(DecodingProblem) -> [UInt8] {
        try borrow(count, what) { Array($0) }
    }

    /// `count` bytes as they are, lent to `body` without copying them.
    @inlinable public mutating func withRaw<R>(_ count: Int, _ what: StaticString, _ body: (UnsafeRawBufferPointer) -> R) throws(DecodingProblem) -> R {
        try borrow(count, what, body)
    }

    /// UTF-8 text with a u16 length: for short fields (claim keys, header names).
    @inlinable public mutating func readShortString(_ what: StaticString = "text") throws(DecodingProblem) -> String {
        let count = Int(try readUInt16(what))
        guard let text = try borrow(count, what, { Self.validatedString($0.assumingMemoryBound(to: UInt8.self)) }) else {
            throw DecodingProblem("\(what) is not valid UTF-8")
        }
        return text
    }

    @inlinable public mutating func readString(_ what: StaticString = "text") throws(DecodingProblem) -> String {
        let count = Int(try readUInt32(what))
        let text = try borrow(count, what) { Self.validatedString($0.assumingMemoryBound(to: UInt8.self)) }
        guard let text else {
            throw DecodingProblem("\(what) is not valid UTF-8")
        }
        return text
    }

    /// The text of valid UTF-8 bytes; `nil` for invalid ones. ASCII, the usual case, is checked
    /// eight bytes at a time and taken as it is.
    @inlinable static func validatedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
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

    @inlinable public mutating func readOptional<T>(
        _ what: StaticString,
        _ readValue: (inout ByteReader) throws(DecodingProblem) -> T
    ) throws(DecodingProblem) -> T? {
        try readBool(what) ? try readValue(&self) : nil
    }

    @inlinable public mutating func readOptionalString(_ what: StaticString) throws(DecodingProblem) -> String? {
        try readOptional(what) { (reader) throws(DecodingProblem) in try reader.readString(what) }
    }

    @inlinable public mutating func readOptionalDate(_ what: StaticString) throws(DecodingProblem) -> Date? {
        try readOptional(what) { (reader) throws(DecodingProblem) in try reader.readDate(what) }
    }

    @inlinable public func expectEnd(_ what: StaticString) throws(DecodingProblem) {
        guard isAtEnd else { throw DecodingProblem("\(remaining) unexpected bytes after \(what)") }
    }
}
