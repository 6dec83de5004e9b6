package import Foundation
import OutboxWire

/// The journal's binary record format, version ``formatVersion`` (documented in
/// `Docs/journal-format.md`); it reads every earlier version too.
///
/// ```text
/// offset  size  field
///      0     2  format version (u16, big-endian)
///      2     1  kind code
///      3     1  flags: bit 0 set when the event belongs to an operation
///      4     8  seq (u64), equal to the record's key
///     12    16  operation id (zero bytes for an engine event)
///     28     8  recorded-at: IEEE 754 bits of seconds since 2001-01-01T00:00:00Z (u64)
///     36     8  uptime: IEEE 754 bits of seconds since boot (all ones: not known)
///     44    16  boot id (zero bytes: not known)
///     60     4  body length n (u32)
///     64     n  body, the kind's fields in catalogue order
///   64+n     4  CRC-32C of bytes 0 ..< 64+n (u32)
/// ```
///
/// Version 1 had no uptime and no boot id: its body length sits at 36 and its body at 40, and
/// some bodies hold fewer fields (each kind's reader knows which).
///
/// Every format version keeps two things where they are: the version in the first two bytes,
/// and the checksum over everything before it in the last four. So a damaged record is told
/// apart from one written by a newer engine before anything else is read.
package enum RecordCodec {
    /// The format this engine writes and the newest it reads.
    package static let formatVersion = 7

    /// The header's size in the format this engine writes.
    static let headerSize = 64
    /// The header's size in format version 1.
    static let version1HeaderSize = 40
    static let checksumSize = 4

    /// The header's size in a record of `version`.
    static func headerSize(version: Int) -> Int { version == 1 ? version1HeaderSize : headerSize }
    /// Uptime bits meaning "not known".
    private static let unknownUptimeBits = UInt64.max
    private static let hasOperationFlag: UInt8 = 0x01

    /// The kind a record says it is, read without any check: a hint for sizing and routing,
    /// never a substitute for ``decodeHeader(_:seq:)``.
    package static func uncheckedKind(of record: UnsafeRawBufferPointer) -> JournalEventKind? {
        record.count > 2 ? JournalEventKind(code: record[2]) : nil
    }

    /// The operation a record says it belongs to, read without any check (`nil` for an engine
    /// event): a hint for routing, never a substitute for ``decodeHeader(_:seq:)``.
    package static func uncheckedOperationID(of record: UnsafeRawBufferPointer) -> OperationID? {
        guard record.count >= version1HeaderSize, record[3] & hasOperationFlag != 0 else { return nil }
        return OperationID(uuid: UUID(uuid: record.loadUnaligned(fromByteOffset: 12, as: uuid_t.self)))
    }

    // MARK: Encoding

    /// Whether `bytes` start as a record stored under `key` would: a format version this engine
    /// reads and the key's seq in the header. Says nothing of the rest; ``decode(_:seq:unseal:)``
    /// checks it.
    package static func looksLikeRecord(_ bytes: [UInt8], key: [UInt8]) -> Bool {
        bytes.count >= version1HeaderSize + checksumSize && key.count == 8 && bytes[0] == 0
            && (1...formatVersion).contains(Int(bytes[1])) && bytes[4..<12].elementsEqual(key)
    }

    /// The record for `event`, in the format this engine writes.
    package static func encode(_ event: JournalEvent) -> [UInt8] {
        let prepared = prepare(operationID: event.operationID, body: event.body)
        var record = [UInt8](repeating: 0, count: prepared.count)
        record.withUnsafeMutableBytes { prepared.finish(into: $0, seq: event.seq, recordedAt: event.recordedAt, uptime: event.uptime) }
        return record
    }

    /// Encodes everything of a record but what only the journal's writer knows (its seq, moment
    /// and uptime), and checks its body: the work a producer does on its own task, so that the
    /// writer only fills in the header and finishes the checksum (``PreparedRecord/finish(into:seq:recordedAt:uptime:)``).
    package static func prepare(operationID: OperationID?, body: JournalEventBody) -> PreparedRecord {
        precondition(body.kind.isOperationEvent == (operationID != nil), "operation id must match the kind")
        var writer = ByteWriter(capacity: headerSize + 128)
        writer.write(UInt16(formatVersion))
        writer.write(body.kind.code)
        writer.write(operationID == nil ? UInt8(0) : hasOperationFlag)
        // Seq, recorded-at, uptime and boot id: filled in by the writer.
        for _ in 0..<8 { writer.write(UInt8(0)) }
        if let id = operationID {
            writer.write(id)
        } else {
            for _ in 0..<16 { writer.write(UInt8(0)) }
        }
        for _ in 0..<32 { writer.write(UInt8(0)) }
        let lengthOffset = writer.bytes.count
        writer.write(UInt32(0))
        encodeBody(body, into: &writer)
        writer.patch(UInt32(writer.bytes.count - headerSize), at: lengthOffset)
        let bodyRegister = writer.bytes.withUnsafeBytes { CRC32C.register(of: UnsafeRawBufferPointer(rebasing: $0[headerSize...]), from: 0) }
        return PreparedRecord(bytes: writer.bytes, bodyRegister: bodyRegister)
    }

    /// A record encoded but for its seq, moment and uptime (``RecordCodec/prepare(operationID:body:)``).
    package struct PreparedRecord: Sendable {
        /// The header (seq, moment, uptime and boot id zero) and the body; no checksum yet.
        let bytes: [UInt8]
        /// The CRC-32C register after the body alone, from zero (``CRC32C/register(of:from:)``).
        let bodyRegister: UInt32

        /// The finished record's size.
        package var count: Int { bytes.count + checksumSize }

        /// Writes the finished record into `buffer` (``count`` bytes): the bytes, the seq, moment
        /// and uptime in the header, and the checksum of the whole, from the header's register
        /// carried past the body's length and the body's own, without reading the body again.
        package func finish(into buffer: UnsafeMutableRawBufferPointer, seq: JournalSequence, recordedAt: Date, uptime: Uptime?) {
            precondition(buffer.count == count, "a record of \(count) bytes finished into \(buffer.count)")
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            buffer.storeBytes(of: seq.rawValue.bigEndian, toByteOffset: 4, as: UInt64.self)
            buffer.storeBytes(of: recordedAt.timeIntervalSinceReferenceDate.bitPattern.bigEndian, toByteOffset: 28, as: UInt64.self)
            buffer.storeBytes(of: (uptime?.seconds.bitPattern ?? unknownUptimeBits).bigEndian, toByteOffset: 36, as: UInt64.self)
            withUnsafeBytes(of: (uptime?.bootID ?? UUID(uuid: UUID.zero)).uuid) { boot in
                UnsafeMutableRawBufferPointer(rebasing: buffer[44..<60]).copyMemory(from: boot)
            }
            let header = CRC32C.register(of: UnsafeRawBufferPointer(rebasing: buffer[..<headerSize]), from: 0xFFFF_FFFF)
            let register = CRC32C.register(afterZeros: bytes.count - headerSize, from: header) ^ bodyRegister
            buffer.storeBytes(of: (register ^ 0xFFFF_FFFF).bigEndian, toByteOffset: bytes.count, as: UInt32.self)
        }
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
        case .superseded(let superseded): superseded.write(to: &writer)
        case .rebased(let rebased): rebased.write(to: &writer)
        case .dependencyEnded(let ended): ended.write(to: &writer)
        case .sessionPaused(let paused): paused.write(to: &writer)
        case .sessionResumed: break
        case .journalOpened(let opened): opened.write(to: &writer)
        case .compacted(let compacted): compacted.write(to: &writer)
        case .sessionChanged(let changed): changed.write(to: &writer)
        case .heldOnRollback(let held): held.write(to: &writer)
        case .rollbackAcknowledged(let acknowledged): acknowledged.write(to: &writer)
        case .recordsWritten(let written): written.write(to: &writer)
        case .recordBaseDropped(let dropped): dropped.write(to: &writer)
        case .deletedOnServer(let deleted): deleted.write(to: &writer)
        case .pageApplied(let page): page.write(to: &writer)
        case .pageRefused(let refused): refused.write(to: &writer)
        case .resnapshotStarted(let started): started.write(to: &writer)
        case .snapshotPageStaged(let staged): staged.write(to: &writer)
        case .resnapshotFinished(let finished): finished.write(to: &writer)
        case .resnapshotAbandoned(let abandoned): abandoned.write(to: &writer)
        case .summaryChecked(let checked): checked.write(to: &writer)
        case .routeChanged(let changed): changed.write(to: &writer)
        case .claimMayBeForgotten(let claim): claim.write(to: &writer)
        case .installationAdopted(let adopted): adopted.write(to: &writer)
        case .attachmentGranted(let granted): granted.write(to: &writer)
        case .segmentLanded(let landed): landed.write(to: &writer)
        case .attachmentCompleted(let completed): completed.write(to: &writer)
        case .attachmentRefused(let refused): refused.write(to: &writer)
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
        package var uptime: Uptime?
        package var bodyLength: Int
    }

    /// Checks a record's checksum and format version, and reads its header.
    ///
    /// - Parameter seq: the key the record was stored under, named in every error.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for a checksum mismatch or a header
    ///   that makes no sense; ``OutboxError/newerFormat(found:supported:)`` for a sound record
    ///   written by a newer format.
    package static func decodeHeader(_ record: [UInt8], seq: JournalSequence) throws(OutboxError) -> Header {
        guard record.count >= version1HeaderSize + checksumSize else {
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
            var uptime: Uptime?
            if version >= 2 {
                let bits = try reader.readUInt64("uptime")
                let boot = UUID(uuid: try reader.readOperationID("boot id").uuid.uuid)
                if bits != unknownUptimeBits, boot != UUID(uuid: UUID.zero) {
                    uptime = Uptime(seconds: Double(bitPattern: bits), bootID: boot)
                }
            }
            guard kind.formatVersion <= version else { throw DecodingProblem("a \(kind) event in a version \(version) record") }
            let header = headerSize(version: version)
            let bodyLength = Int(try reader.readUInt32("body length"))
            guard bodyLength == bodyEnd - header else {
                throw DecodingProblem("body length \(bodyLength) does not match the record's \(bodyEnd - header)")
            }
            return Header(
                formatVersion: version,
                kind: kind,
                seq: storedSeq,
                operationID: hasOperation ? idBytes : nil,
                recordedAt: recordedAt,
                uptime: uptime,
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

    /// The record changes of an `enqueued` record, read without decoding its request (the reads
    /// of a record's view need its changes alone); checksum first, as every read.
    /// - Throws: as ``decodeHeader(_:seq:)``; ``OutboxError/journalCorrupt(seq:reason:)`` for a
    ///   body that does not decode, or a record of another kind.
    package static func changes(of record: [UInt8], seq: JournalSequence) throws(OutboxError) -> [RecordWrite] {
        try enqueuedBody(of: record, seq: seq, empty: []) { (reader) throws(DecodingProblem) in try Enqueued.changes(reading: &reader) }
    }

    /// An `enqueued` record's change to `key` alone (a record's view reads one change of a write
    /// that may change several), the others passed over unread; checksum first, as every read.
    /// - Returns: `nil` when the write does not change `key`.
    /// - Throws: as ``changes(of:seq:)``.
    package static func change(to key: RecordKey, of record: [UInt8], seq: JournalSequence) throws(OutboxError) -> RecordWrite? {
        try enqueuedBody(of: record, seq: seq, empty: nil) { (reader) throws(DecodingProblem) in try Enqueued.change(to: key, reading: &reader) }
    }

    /// Reads an `enqueued` record's body past its header with `read`; `empty` for a record of a
    /// format before records.
    private static func enqueuedBody<T>(of record: [UInt8], seq: JournalSequence, empty: T,
                                        _ read: (inout ByteReader) throws(DecodingProblem) -> T) throws(OutboxError) -> T {
        let header = try decodeHeader(record, seq: seq)
        guard header.kind == .enqueued else { throw .journalCorrupt(seq: seq, reason: "a \(header.kind) record where an enqueued one was expected") }
        guard header.formatVersion >= 3 else { return empty }
        do {
            var reader = ByteReader(record, from: headerSize(version: header.formatVersion), to: record.count - checksumSize)
            return try read(&reader)
        } catch {
            throw .journalCorrupt(seq: seq, reason: "\(error)")
        }
    }

    /// Decodes a whole record, checksum first.
    /// - Throws: as ``decodeHeader(_:seq:)``, and ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a body that does not decode.
    /// Opens the sealed fields of a record: an `enqueued` event's payload, label and summary, and
    /// the server's current record an `attemptFinished` of a conflict kept.
    package struct Unsealer: Sendable {
        package var request: @Sendable (SealedRequest, OperationID) throws -> (payload: Data, entityLabel: String, summary: String)
        package var serverCurrent: @Sendable ([UInt8], OperationID) throws -> Data
        /// A record change's value an `enqueued` event sealed.
        package var recordValue: @Sendable ([UInt8], OperationID, RecordKey) throws -> Data

        package init(
            request: @escaping @Sendable (SealedRequest, OperationID) throws -> (payload: Data, entityLabel: String, summary: String),
            serverCurrent: @escaping @Sendable ([UInt8], OperationID) throws -> Data,
            recordValue: @escaping @Sendable ([UInt8], OperationID, RecordKey) throws -> Data
        ) {
            self.request = request
            self.serverCurrent = serverCurrent
            self.recordValue = recordValue
        }
    }

    /// Decodes a whole record, checksum first.
    /// - Parameter unseal: opens sealed fields; without it they stay sealed (the plaintext
    ///   fields empty).
    /// - Throws: as ``decodeHeader(_:seq:)``, and ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a body that does not decode; the unsealer's error when the sealed fields do not open.
    package static func decode(_ record: [UInt8], seq: JournalSequence, unseal: Unsealer? = nil) throws(OutboxError) -> JournalEvent {
        let header = try decodeHeader(record, seq: seq)
        var body: JournalEventBody
        do {
            var reader = ByteReader(record, from: headerSize(version: header.formatVersion), to: record.count - checksumSize)
            body = try decodeBody(header.kind, &reader, version: header.formatVersion)
            try reader.expectEnd("the body")
        } catch {
            throw .journalCorrupt(seq: seq, reason: "\(error)")
        }
        if case .enqueued(var enqueued) = body, let id = header.operationID {
            // The app's id is the operation's: stored once, in the header.
            if enqueued.request.operationID != nil { enqueued.request.operationID = id }
            if let sealed = enqueued.sealed, let unseal {
                do {
                    let opened = try unseal.request(sealed, id)
                    enqueued.request.payload = opened.payload
                    enqueued.request.entityLabel = opened.entityLabel
                    enqueued.request.summary = opened.summary
                    for index in enqueued.changes.indices {
                        guard let sealedValue = enqueued.changes[index].sealedValue else { continue }
                        enqueued.changes[index].value = try unseal.recordValue(sealedValue, id, enqueued.changes[index].key)
                    }
                } catch let error as OutboxError {
                    throw error
                } catch {
                    throw .journalCorrupt(seq: seq, reason: "its sealed fields do not open: \(error)")
                }
            }
            body = .enqueued(enqueued)
        }
        if case .attemptFinished(var finished) = body, let sealed = finished.sealedServerCurrent, let unseal, let id = header.operationID {
            do {
                finished.classification.serverCurrent = try unseal.serverCurrent(sealed, id)
            } catch let error as OutboxError {
                throw error
            } catch {
                throw .journalCorrupt(seq: seq, reason: "its sealed fields do not open: \(error)")
            }
            body = .attemptFinished(finished)
        }
        return JournalEvent(seq: header.seq, operationID: header.operationID, recordedAt: header.recordedAt, uptime: header.uptime, body: body)
    }

    private static func decodeBody(
        _ kind: JournalEventKind, _ reader: inout ByteReader, version: Int
    ) throws(DecodingProblem) -> JournalEventBody {
        switch kind {
        case .enqueued: .enqueued(try Enqueued(reading: &reader, version: version))
        case .attemptStarted: .attemptStarted(try AttemptStarted(reading: &reader, version: version))
        case .attemptFinished: .attemptFinished(try AttemptFinished(reading: &reader, version: version))
        case .attemptAbandoned: .attemptAbandoned(try AttemptAbandoned(reading: &reader, version: version))
        case .withdrawn: .withdrawn(try Withdrawn(reading: &reader, version: version))
        case .requeued: .requeued(try Requeued(reading: &reader, version: version))
        case .discarded: .discarded(try Discarded(reading: &reader, version: version))
        case .approvalDecided: .approvalDecided(try ApprovalDecided(reading: &reader, version: version))
        case .superseded: .superseded(try Superseded(reading: &reader, version: version))
        case .rebased: .rebased(try Rebased(reading: &reader, version: version))
        case .dependencyEnded: .dependencyEnded(try DependencyEnded(reading: &reader, version: version))
        case .sessionPaused: .sessionPaused(try SessionPaused(reading: &reader, version: version))
        case .sessionResumed: .sessionResumed
        case .journalOpened: .journalOpened(try JournalOpened(reading: &reader, version: version))
        case .compacted: .compacted(try Compacted(reading: &reader, version: version))
        case .sessionChanged: .sessionChanged(try SessionChanged(reading: &reader, version: version))
        case .heldOnRollback: .heldOnRollback(try HeldOnRollback(reading: &reader, version: version))
        case .rollbackAcknowledged: .rollbackAcknowledged(try RollbackAcknowledged(reading: &reader, version: version))
        case .recordsWritten: .recordsWritten(try RecordsWritten(reading: &reader, version: version))
        case .recordBaseDropped: .recordBaseDropped(try RecordBaseDropped(reading: &reader, version: version))
        case .deletedOnServer: .deletedOnServer(try DeletedOnServer(reading: &reader, version: version))
        case .pageApplied: .pageApplied(try PageApplied(reading: &reader, version: version))
        case .pageRefused: .pageRefused(try PageRefused(reading: &reader, version: version))
        case .resnapshotStarted: .resnapshotStarted(try ResnapshotStarted(reading: &reader, version: version))
        case .snapshotPageStaged: .snapshotPageStaged(try SnapshotPageStaged(reading: &reader, version: version))
        case .resnapshotFinished: .resnapshotFinished(try ResnapshotFinished(reading: &reader, version: version))
        case .resnapshotAbandoned: .resnapshotAbandoned(try ResnapshotAbandoned(reading: &reader, version: version))
        case .summaryChecked: .summaryChecked(try SummaryChecked(reading: &reader, version: version))
        case .routeChanged: .routeChanged(try RouteChanged(reading: &reader, version: version))
        case .claimMayBeForgotten: .claimMayBeForgotten(try ClaimMayBeForgotten(reading: &reader, version: version))
        case .installationAdopted: .installationAdopted(try InstallationAdopted(reading: &reader, version: version))
        case .attachmentGranted: .attachmentGranted(try AttachmentGranted(reading: &reader, version: version))
        case .segmentLanded: .segmentLanded(try SegmentLanded(reading: &reader, version: version))
        case .attachmentCompleted: .attachmentCompleted(try AttachmentCompleted(reading: &reader, version: version))
        case .attachmentRefused: .attachmentRefused(try AttachmentRefused(reading: &reader, version: version))
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}
