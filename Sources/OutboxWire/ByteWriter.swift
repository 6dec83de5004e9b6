public import Foundation

/// Why a value could not be encoded.
public struct EncodingProblem: Error, Equatable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Appends big-endian fields to a byte buffer: the encoding side of every binary form the
/// package stores (journal records, stored states, idempotency claims).
///
/// Public and inlinable, not for apps (no product exports it) but so that each call inlines and
/// specializes in the module that makes it: the stored states and records are encoded field by
/// field on the writer's hot path. (A `package` method is not inlined across modules.)
public struct ByteWriter {
    /// What was written. (Settable only so that the inlinable methods can append to it.)
    public var bytes: [UInt8]

    @inlinable public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity: one writer reused for many values.
    @inlinable public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inlinable public mutating func write(_ value: UInt8) { bytes.append(value) }
    @inlinable public mutating func write(_ value: UInt16) { append(bigEndian: value) }
    @inlinable public mutating func write(_ value: UInt32) { append(bigEndian: value) }
    @inlinable public mutating func write(_ value: UInt64) { append(bigEndian: value) }

    /// Appends an integer's bytes, most significant first, without an intermediate array.
    @inlinable mutating func append(bigEndian value: some FixedWidthInteger) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
    @inlinable public mutating func write(_ value: Bool) { bytes.append(value ? 1 : 0) }

    /// A moment as the IEEE 754 bits of its seconds since 2001-01-01T00:00:00Z, the reference
    /// date `Date` itself counts from: exact on the way back.
    @inlinable public mutating func write(_ date: Date) { write(date.timeIntervalSinceReferenceDate.bitPattern) }

    /// A length-prefixed (u32) byte run.
    @inlinable public mutating func write(bytes run: some Collection<UInt8>) {
        write(UInt32(run.count))
        bytes.append(contentsOf: run)
    }

    /// A length-prefixed UTF-8 string.
    @inlinable public mutating func write(_ text: String) {
        var text = text
        // Contiguous UTF-8 (every native string) is copied in one run, not byte by byte.
        text.withUTF8 { write(bytes: $0) }
    }

    /// Bytes as they are, with no length before them.
    @inlinable public mutating func write(raw run: some Sequence<UInt8>) { bytes.append(contentsOf: run) }

    /// UTF-8 text with a u16 length: for short fields (claim keys, header names).
    /// - Throws: when the text is longer than a u16 can say.
    @inlinable public mutating func writeShort(_ text: String) throws(EncodingProblem) {
        let utf8 = Array(text.utf8)
        guard let count = UInt16(exactly: utf8.count) else {
            throw EncodingProblem("a text field of \(utf8.count) bytes is over 65,535")
        }
        write(count)
        bytes.append(contentsOf: utf8)
    }

    /// A presence byte, then the value when present.
    @inlinable public mutating func writeOptional<T>(_ value: T?, _ writeValue: (inout ByteWriter, T) -> Void) {
        guard let value else {
            write(UInt8(0))
            return
        }
        write(UInt8(1))
        writeValue(&self, value)
    }

    @inlinable public mutating func write(_ text: String?) { writeOptional(text) { $0.write($1) } }
    @inlinable public mutating func write(_ date: Date?) { writeOptional(date) { $0.write($1) } }

    /// Overwrites four bytes at `offset` (used to fill in a length after the fact).
    @inlinable public mutating func patch(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.bigEndian) { field in
            for index in 0..<4 { bytes[offset + index] = field[index] }
        }
    }
}
