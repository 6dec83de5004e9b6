package import Foundation
import OutboxWire

/// The journal's binary record format, version 1 (documented in `Docs/journal-format.md`).
///
/// ```text
/// offset  size  field
///      0     2  format version (u16, big-endian): 1
///      2     1  kind code
///      3     1  flags: bit 0 set when the event belongs to an operation
///      4     8  seq (u64), equal to the record's key
///     12    16  operation id (zero bytes for an engine event)
///     28     8  recorded-at: IEEE 754 bits of seconds since 2001-01-01T00:00:00Z (u64)
///     36     4  body length n (u32)
///     40     n  body, the kind's fields in catalogue order
///   40+n     4  CRC-32C of bytes 0 ..< 40+n (u32)
/// ```
///
/// Every format version keeps two things where they are: the version in the first two bytes,
/// and the checksum over everything before it in the last four. So a damaged record is told
/// apart from one written by a newer engine before anything else is read.
package enum RecordCodec {
    /// The format this engine writes and the newest it reads.
    package static let formatVersion = 1

    static let headerSize = 40
    static let checksumSize = 4
    private static let hasOperationFlag: UInt8 = 0x01

    /// The kind a record says it is, read without any check: a hint for sizing and routing,
    /// never a substitute for ``decodeHeader(_:seq:)``.
    package static func uncheckedKind(of record: UnsafeRawBufferPointer) -> JournalEventKind? {
        record.count > 2 ? JournalEventKind(code: record[2]) : nil
    }

    /// The operation a record says it belongs to, read without any check (`nil` for an engine
    /// event): a hint for routing, never a substitute for ``decodeHeader(_:seq:)``.
    package static func uncheckedOperationID(of record: UnsafeRawBufferPointer) -> OperationID? {
        guard record.count >= headerSize, record[3] & hasOperationFlag != 0 else { return nil }
        return OperationID(uuid: UUID(uuid: record.loadUnaligned(fromByteOffset: 12, as: uuid_t.self)))
    }

    // MARK: Encoding

    /// The record for `event`.
    /// Whether `bytes` start as a record stored under `key` would: format version 1 and the
    /// key's seq in the header. Says nothing of the rest; ``decode(_:seq:unseal:)`` checks it.
    package static func looksLikeRecord(_ bytes: [UInt8], key: [UInt8]) -> Bool {
        bytes.count >= headerSize + checksumSize && key.count == 8 && bytes[0] == 0 && bytes[1] == UInt8(formatVersion)
            && bytes[4..<12].elementsEqual(key)
    }

    package static func encode(_ event: JournalEvent) -> [UInt8] {
        precondition(event.kind.isOperationEvent == (event.operationID != nil), "operation id must match the kind")
        var writer = ByteWriter(capacity: headerSize + 128)
        writer.write(UInt16(formatVersion))
        writer.write(event.kind.code)
        writer.write(event.operationID == nil ? UInt8(0) : hasOperationFlag)
        writer.write(event.seq.rawValue)
        if let id = event.operationID {
            writer.write(id)
        } else {
            for _ in 0..<16 { writer.write(UInt8(0)) }
        }
        writer.write(event.recordedAt)
        let lengthOffset = writer.bytes.count
        writer.write(UInt32(0))
        encodeBody(event.body, into: &writer)
        writer.patch(UInt32(writer.bytes.count - headerSize), at: lengthOffset)
        writer.write(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    private static func encodeBody(_ body: JournalEventBody, into writer: inout ByteWriter) {
        switch body {
        case .enqueued(let enqueued): enqueued.write(to: &writer)
        case .attemptStarted(let started): started.write(to: &writer)
        case .attemptFinished(let finished): finished.write(to: &writer)
        case .attemptAbandoned(let abandoned): abandoned.write(to: &writer)
        case .withdrawn(let withdrawn): withdrawn.write(to: &writer)
        case .requeued(let requeued): requeued.write(to: &writer)
        case .discarded(let discarded): discarded.write(to: &writer)
        case .approvalDecided(let decision): decision.write(to: &writer)
        case .sessionPaused(let paused): paused.write(to: &writer)
        case .sessionResumed: break
        case .journalOpened(let opened): opened.write(to: &writer)
        case .compacted(let compacted): compacted.write(to: &writer)
        }
    }

    // MARK: Decoding

    /// The header fields, readable without decoding the body.
    package struct Header: Sendable, Equatable {
        package var formatVersion: Int
        package var kind: JournalEventKind
        package var seq: JournalSequence
        package var operationID: OperationID?
        package var recordedAt: Date
        package var bodyLength: Int
    }

    /// Checks a record's checksum and format version, and reads its header.
    ///
    /// - Parameter seq: the key the record was stored under, named in every error.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for a checksum mismatch or a header
    ///   that makes no sense; ``OutboxError/newerFormat(found:supported:)`` for a sound record
    ///   written by a newer format.
    package static func decodeHeader(_ record: [UInt8], seq: JournalSequence) throws(OutboxError) -> Header {
        guard record.count >= headerSize + checksumSize else {
            throw .journalCorrupt(seq: seq, reason: "record is \(record.count) bytes, shorter than any record")
        }
        let bodyEnd = record.count - checksumSize
        let stored = record[bodyEnd...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let computed = record.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<bodyEnd])) }
        guard stored == computed else {
            throw .journalCorrupt(
                seq: seq,
                reason: "checksum mismatch (stored \(hex(stored)), computed \(hex(computed)))"
            )
        }
        do {
            var reader = ByteReader(record, to: bodyEnd)
            let version = Int(try reader.readUInt16("format version"))
            guard version <= formatVersion else { throw OutboxError.newerFormat(found: version, supported: formatVersion) }
            guard version >= 1 else { throw DecodingProblem("format version 0") }
            let kind = try reader.readCode(JournalEventKind.self, "event kind")
            let flags = try reader.readUInt8("flags")
            let storedSeq = JournalSequence(rawValue: try reader.readUInt64("seq"))
            guard storedSeq == seq else { throw DecodingProblem("record says seq \(storedSeq), stored under \(seq)") }
            let idBytes = try reader.readOperationID()
            let hasOperation = flags & hasOperationFlag != 0
            guard flags & ~hasOperationFlag == 0 else { throw DecodingProblem("unknown flags \(flags)") }
            guard hasOperation == kind.isOperationEvent else {
                throw DecodingProblem("\(kind) event \(hasOperation ? "with" : "without") an operation id")
            }
            let recordedAt = try reader.readDate("recorded-at")
            let bodyLength = Int(try reader.readUInt32("body length"))
            guard bodyLength == bodyEnd - headerSize else {
                throw DecodingProblem("body length \(bodyLength) does not match the record's \(bodyEnd - headerSize)")
            }
            return Header(
                formatVersion: version,
                kind: kind,
                seq: storedSeq,
                operationID: hasOperation ? idBytes : nil,
                recordedAt: recordedAt,
                bodyLength: bodyLength
            )
        } catch let error as OutboxError {
            throw error
        } catch let problem as DecodingProblem {
            throw .journalCorrupt(seq: seq, reason: problem.reason)
        } catch {
            throw .journalCorrupt(seq: seq, reason: "\(error)")
        }
    }

    /// Decodes a whole record, checksum first.
    /// - Throws: as ``decodeHeader(_:seq:)``, and ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a body that does not decode.
    /// Opens the sealed fields of an `enqueued` event: its plaintext payload, label and summary.
    package typealias Unsealer = @Sendable (SealedRequest, OperationID) throws -> (payload: Data, entityLabel: String, summary: String)

    /// Decodes a whole record, checksum first.
    /// - Parameter unseal: opens sealed fields; without it they stay sealed (the plaintext
    ///   fields empty).
    /// - Throws: as ``decodeHeader(_:seq:)``, and ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a body that does not decode; the unsealer's error when the sealed fields do not open.
    package static func decode(_ record: [UInt8], seq: JournalSequence, unseal: Unsealer? = nil) throws(OutboxError) -> JournalEvent {
        let header = try decodeHeader(record, seq: seq)
        var body: JournalEventBody
        do {
            var reader = ByteReader(record, from: headerSize, to: record.count - checksumSize)
            body = try decodeBody(header.kind, &reader)
            try reader.expectEnd("the body")
        } catch {
            throw .journalCorrupt(seq: seq, reason: "\(error)")
        }
        if case .enqueued(var enqueued) = body, let sealed = enqueued.sealed, let unseal, let id = header.operationID {
            do {
                let opened = try unseal(sealed, id)
                enqueued.request.payload = opened.payload
                enqueued.request.entityLabel = opened.entityLabel
                enqueued.request.summary = opened.summary
            } catch let error as OutboxError {
                throw error
            } catch {
                throw .journalCorrupt(seq: seq, reason: "its sealed fields do not open: \(error)")
            }
            body = .enqueued(enqueued)
        }
        return JournalEvent(seq: header.seq, operationID: header.operationID, recordedAt: header.recordedAt, body: body)
    }

    private static func decodeBody(_ kind: JournalEventKind, _ reader: inout ByteReader) throws(DecodingProblem) -> JournalEventBody {
        switch kind {
        case .enqueued: .enqueued(try Enqueued(reading: &reader))
        case .attemptStarted: .attemptStarted(try AttemptStarted(reading: &reader))
        case .attemptFinished: .attemptFinished(try AttemptFinished(reading: &reader))
        case .attemptAbandoned: .attemptAbandoned(try AttemptAbandoned(reading: &reader))
        case .withdrawn: .withdrawn(try Withdrawn(reading: &reader))
        case .requeued: .requeued(try Requeued(reading: &reader))
        case .discarded: .discarded(try Discarded(reading: &reader))
        case .approvalDecided: .approvalDecided(try ApprovalDecided(reading: &reader))
        case .sessionPaused: .sessionPaused(try SessionPaused(reading: &reader))
        case .sessionResumed: .sessionResumed
        case .journalOpened: .journalOpened(try JournalOpened(reading: &reader))
        case .compacted: .compacted(try Compacted(reading: &reader))
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}
