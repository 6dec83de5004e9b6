import Foundation
import OutboxCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How an attachment's file is kept when the journal is encrypted at rest: sealed in chunks, so
/// it is written and read a chunk at a time (memory never grows with the file) and a segment is
/// opened without reading the rest.
///
/// ```
/// header:  "OBXSEAL1" (8) · file id (16, random) · chunk size (4, big-endian)
/// chunk i: ChaCha20-Poly1305 of up to `chunk size` bytes (nonce 12 · ciphertext · tag 16),
///          bound to the file id, i, and whether it is the last chunk
/// ```
///
/// Every chunk but the last holds `chunk size` bytes; the last holds the rest (an empty file is
/// one empty last chunk). Binding each chunk to its place and to being last means a file cut at
/// a chunk's edge, chunks swapped, or a chunk moved from another file fails to open: never
/// garbage. The plaintext's SHA-256 (the file's name) is checked by whoever reads it whole.
struct SealedFileFormat: Sendable {
    static let magic = Array("OBXSEAL1".utf8)
    static let headerBytes = 8 + 16 + 4
    /// A sealed chunk's bytes beyond its plaintext: the nonce and the tag.
    static let chunkOverhead = 28
    /// The plaintext bytes of every chunk but the last.
    static let chunkBytes = 1 << 20

    let key: SealingKey

    /// The header of a new sealed file, with its random file id.
    static func header() -> (bytes: [UInt8], fileID: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        let fileID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let size = UInt32(chunkBytes)
        return (magic + fileID + [UInt8(size >> 24), UInt8(size >> 16 & 0xff), UInt8(size >> 8 & 0xff), UInt8(size & 0xff)], fileID)
    }

    /// The file id and chunk size of a header, or `nil` when the bytes are not one.
    static func readHeader(_ bytes: [UInt8]) -> (fileID: [UInt8], chunkBytes: Int)? {
        guard bytes.count == headerBytes, Array(bytes[0..<8]) == magic else { return nil }
        let size = bytes[24..<28].reduce(0) { $0 << 8 | Int($1) }
        guard size > 0 else { return nil }
        return (Array(bytes[8..<24]), size)
    }

    private static func associatedData(fileID: [UInt8], index: Int, last: Bool) -> [UInt8] {
        var data = Array("attachment-chunk".utf8) + fileID
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: UInt64(index) >> UInt64(shift))) }
        data.append(last ? 1 : 0)
        return data
    }

    func seal(_ chunk: UnsafeRawBufferPointer, fileID: [UInt8], index: Int, last: Bool) -> [UInt8] {
        key.seal(chunk, authenticating: Self.associatedData(fileID: fileID, index: index, last: last))
    }

    func open(_ sealed: [UInt8], fileID: [UInt8], index: Int, last: Bool) throws(SealingError) -> [UInt8] {
        try key.open(sealed, authenticating: Self.associatedData(fileID: fileID, index: index, last: last))
    }

    /// The size of the sealed file of `plaintextBytes`.
    static func sealedSize(ofPlaintext plaintextBytes: Int64, chunkBytes: Int = chunkBytes) -> Int64 {
        let chunks = max(1, (plaintextBytes + Int64(chunkBytes) - 1) / Int64(chunkBytes))
        return Int64(headerBytes) + plaintextBytes + chunks * Int64(chunkOverhead)
    }

    /// The plaintext size a sealed file of `sealedBytes` holds; `nil` when no plaintext seals
    /// to that size (the file was cut).
    static func plaintextSize(ofSealed sealedBytes: Int64, chunkBytes: Int) -> Int64? {
        let body = sealedBytes - Int64(headerBytes)
        let stride = Int64(chunkBytes + chunkOverhead)
        guard body >= Int64(chunkOverhead) else { return nil }
        let chunks = (body + stride - 1) / stride
        let plaintext = body - chunks * Int64(chunkOverhead)
        guard plaintext >= 0, sealedSize(ofPlaintext: plaintext, chunkBytes: chunkBytes) == sealedBytes else { return nil }
        return plaintext
    }
}

/// Writes a sealed file a chunk at a time: a chunk is sealed once the next byte shows it is not
/// the last, so a file's length need not be known before it is read.
struct SealedFileWriter {
    let format: SealedFileFormat
    let fileID: [UInt8]
    private var held: [UInt8] = []
    private var index = 0
    /// Where each sealed chunk goes.
    let emit: (UnsafeRawBufferPointer) throws -> Void

    init(format: SealedFileFormat, fileID: [UInt8], emit: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.format = format
        self.fileID = fileID
        self.emit = emit
        held.reserveCapacity(SealedFileFormat.chunkBytes)
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes[...]
        while !rest.isEmpty {
            if held.count == SealedFileFormat.chunkBytes {
                // More follows: the held chunk is not the last.
                try flush(last: false)
            }
            let take = min(rest.count, SealedFileFormat.chunkBytes - held.count)
            held.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
        }
    }

    /// Seals the last chunk (an empty one for an empty file).
    mutating func finish() throws {
        try flush(last: true)
    }

    private mutating func flush(last: Bool) throws {
        let sealed = held.withUnsafeBytes { format.seal($0, fileID: fileID, index: index, last: last) }
        try sealed.withUnsafeBytes { try emit($0) }
        held.removeAll(keepingCapacity: true)
        index += 1
    }
}

/// Opens a sealed file: any span of its plaintext (a segment) from the chunks that hold it, or
/// the whole of it a chunk at a time.
struct SealedFileReader {
    let input: Int32
    let format: SealedFileFormat
    let fileID: [UInt8]
    let chunkBytes: Int
    /// The plaintext's size, known from the file's.
    let plaintextBytes: Int64

    /// - Throws: ``AttachmentFileProblem/sealedWithoutKey`` when `format` is `nil` (no key);
    ///   ``AttachmentFileProblem/damaged(_:)`` for a header or size no sealed file has.
    init(_ input: Int32, format: SealedFileFormat?) throws(AttachmentFileProblem) {
        guard let format else { throw .sealedWithoutKey }
        var status = stat()
        guard fstat(input, &status) == 0 else { throw .damaged("it cannot be read") }
        var header = [UInt8](repeating: 0, count: SealedFileFormat.headerBytes)
        guard header.withUnsafeMutableBytes({ AttachmentFiles.readFully(input, into: $0, at: 0) }) else {
            throw .damaged("it is shorter than a sealed file's header")
        }
        guard let (fileID, chunkBytes) = SealedFileFormat.readHeader(header) else { throw .damaged("its sealed header is not one") }
        guard let plaintext = SealedFileFormat.plaintextSize(ofSealed: Int64(status.st_size), chunkBytes: chunkBytes) else {
            throw .damaged("its sealed length (\(status.st_size) bytes) was cut")
        }
        self.input = input
        self.format = format
        self.fileID = fileID
        self.chunkBytes = chunkBytes
        plaintextBytes = plaintext
    }

    private var chunkCount: Int { max(1, Int((plaintextBytes + Int64(chunkBytes) - 1) / Int64(chunkBytes))) }

    /// The plaintext of chunk `index`.
    func chunk(_ index: Int) throws(AttachmentFileProblem) -> [UInt8] {
        let start = Int64(index) * Int64(chunkBytes)
        let plain = Int(min(Int64(chunkBytes), plaintextBytes - start))
        var sealed = [UInt8](repeating: 0, count: plain + SealedFileFormat.chunkOverhead)
        let at = Int64(SealedFileFormat.headerBytes) + Int64(index) * Int64(chunkBytes + SealedFileFormat.chunkOverhead)
        guard sealed.withUnsafeMutableBytes({ AttachmentFiles.readFully(input, into: $0, at: at) }) else {
            throw .damaged("its sealed chunk \(index + 1) cannot be read whole")
        }
        do {
            return try format.open(sealed, fileID: fileID, index: index, last: index == chunkCount - 1)
        } catch {
            throw .damaged("its sealed chunk \(index + 1) does not open: damaged bytes, or another key")
        }
    }

    /// `length` bytes of plaintext at `offset`.
    func read(offset: Int64, length: Int) throws(AttachmentFileProblem) -> Data {
        guard offset >= 0, length >= 0, offset + Int64(length) <= plaintextBytes else {
            throw .damaged("the file is shorter than its manifest")
        }
        var data = Data(capacity: length)
        var position = offset
        while data.count < length {
            let index = Int(position / Int64(chunkBytes))
            let plain = try chunk(index)
            let from = Int(position - Int64(index) * Int64(chunkBytes))
            let take = min(plain.count - from, length - data.count)
            data.append(contentsOf: plain[from..<(from + take)])
            position += Int64(take)
        }
        return data
    }

    /// The whole plaintext, a chunk at a time.
    func readAll(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        for index in 0..<chunkCount {
            let plain = try chunk(index)
            try plain.withUnsafeBytes { try body($0) }
        }
    }
}
