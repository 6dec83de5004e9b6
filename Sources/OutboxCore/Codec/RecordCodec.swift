public import Foundation

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
public enum RecordCodec {
    /// The format this engine writes and the newest it reads.
    public static let formatVersion = 1

    static let headerSize = 40
    static let checksumSize = 4
    private static let hasOperationFlag: UInt8 = 0x01

    /// The kind a record says it is, read without any check: a hint for sizing and routing,
    /// never a substitute for ``decodeHeader(_:seq:)``.
    public static func uncheckedKind(of record: UnsafeRawBufferPointer) -> JournalEventKind? {
        record.count > 2 ? JournalEventKind(code: record[2]) : nil
    }

    /// The operation a record says it belongs to, read without any check (`nil` for an engine
    /// event): a hint for routing, never a substitute for ``decodeHeader(_:seq:)``.
    public static func uncheckedOperationID(of record: UnsafeRawBufferPointer) -> OperationID? {
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

    public static func encode(_ event: JournalEvent) -> [UInt8] {
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
        case .enqueued(let enqueued):
            let request = enqueued.request
            let sealed = enqueued.sealed
            writer.write(request.businessID)
            writer.write(request.operationType)
            writer.write(request.method)
            writer.write(request.endpoint)
            // Sealed, the payload field holds its ciphertext and the label and summary are empty.
            if let sealed { writer.write(bytes: sealed.payload) } else { writer.write(bytes: request.payload) }
            writer.write(request.entityID)
            writer.write(request.category)
            writer.write(sealed == nil ? request.entityLabel : "")
            writer.write(sealed == nil ? request.summary : "")
            writer.write(UInt32(request.payloadVersion))
            writer.write(enqueued.requestHash)
            writer.write(enqueued.account)
            writer.writeOptional(sealed) { $0.write(bytes: $1.presentation) }
        case .attemptStarted(let started):
            writer.write(UInt32(started.attempt.rawValue))
            writer.write(started.trigger.code)
        case .attemptFinished(let finished):
            writer.write(UInt32(finished.attempt.rawValue))
            switch finished.outcome {
            case .response(let statusCode):
                writer.write(UInt8(1))
                writer.write(UInt16(clamping: statusCode))
            case .noResponse(let failure):
                writer.write(UInt8(2))
                writer.write(failure.code)
            case .notSent:
                writer.write(UInt8(3))
            }
            writer.write(finished.disposition.code)
            writer.write(finished.errorCode)
            writer.write(finished.errorMessage)
            writer.write(finished.retryAfter)
            writer.write(finished.approvalRequestID)
            writer.write(finished.serverRevision)
            writer.write(finished.nextAttemptAt)
        case .attemptAbandoned(let abandoned):
            writer.write(UInt32(abandoned.attempt.rawValue))
        case .withdrawn(let withdrawn):
            writer.write(withdrawn.errorCode)
            writer.write(withdrawn.errorMessage)
        case .requeued(let requeued):
            writer.write(requeued.requestedBy.code)
        case .discarded(let discarded):
            writer.write(discarded.requestedBy.code)
            writer.write(discarded.reason.code)
        case .approvalDecided(let decision):
            writer.write(decision.approved)
            writer.write(decision.reference)
        case .sessionPaused(let paused):
            writer.write(paused.reason)
            writer.writeOptional(paused.triggeredBy) { $0.write($1) }
        case .sessionResumed:
            break
        case .journalOpened(let opened):
            writer.write(UInt16(opened.formatVersion))
            writer.write(opened.engineVersion)
            writer.write(opened.appVersion)
        case .compacted(let compacted):
            writer.write(compacted.firstSeq.rawValue)
            writer.write(compacted.lastSeq.rawValue)
            writer.write(UInt64(compacted.removedCount))
            writer.write(compacted.digest)
            writer.write(UInt32(compacted.operations.count))
            for operation in compacted.operations { writer.write(operation) }
        }
    }

    // MARK: Decoding

    /// The header fields, readable without decoding the body.
    public struct Header: Sendable, Equatable {
        public var formatVersion: Int
        public var kind: JournalEventKind
        public var seq: JournalSequence
        public var operationID: OperationID?
        public var recordedAt: Date
        public var bodyLength: Int
    }

    /// Checks a record's checksum and format version, and reads its header.
    ///
    /// - Parameter seq: the key the record was stored under, named in every error.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for a checksum mismatch or a header
    ///   that makes no sense; ``OutboxError/newerFormat(found:supported:)`` for a sound record
    ///   written by a newer format.
    public static func decodeHeader(_ record: [UInt8], seq: JournalSequence) throws(OutboxError) -> Header {
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
    public typealias Unsealer = @Sendable (SealedRequest, OperationID) throws -> (payload: Data, entityLabel: String, summary: String)

    /// Decodes a whole record, checksum first.
    /// - Parameter unseal: opens sealed fields; without it they stay sealed (the plaintext
    ///   fields empty).
    /// - Throws: as ``decodeHeader(_:seq:)``, and ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a body that does not decode; the unsealer's error when the sealed fields do not open.
    public static func decode(_ record: [UInt8], seq: JournalSequence, unseal: Unsealer? = nil) throws(OutboxError) -> JournalEvent {
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
        case .enqueued:
            let businessID = try reader.readString("business id")
            let operationType = try reader.readString("operation type")
            let method = try reader.readString("method")
            let endpoint = try reader.readString("endpoint")
            let payload = Data(try reader.readBytes("payload"))
            let entityID = try reader.readOptionalString("entity id")
            let category = try reader.readString("category")
            let entityLabel = try reader.readString("entity label")
            let summary = try reader.readString("summary")
            let payloadVersion = Int(try reader.readUInt32("payload version"))
            let hash = try reader.readDigest("request hash")
            let account = try reader.readString("account")
            let presentation = try reader.readOptional("sealed presentation") { (reader) throws(DecodingProblem) in
                try reader.readBytes("sealed presentation")
            }
            let sealed = presentation.map { SealedRequest(payload: Array(payload), presentation: $0) }
            let request = OutboxRequest(
                businessID: businessID, operationType: operationType, method: method, endpoint: endpoint,
                payload: sealed == nil ? payload : Data(), entityID: entityID, category: category, entityLabel: entityLabel,
                summary: summary, payloadVersion: payloadVersion
            )
            return .enqueued(Enqueued(request: request, requestHash: hash, account: account, sealed: sealed))
        case .attemptStarted:
            let attempt = try reader.readAttempt()
            let trigger = try reader.readCode(WakeReason.self, "wake reason")
            return .attemptStarted(AttemptStarted(attempt: attempt, trigger: trigger))
        case .attemptFinished:
            let attempt = try reader.readAttempt()
            let outcome: AttemptOutcome
            switch try reader.readUInt8("outcome") {
            case 1: outcome = .response(statusCode: Int(try reader.readUInt16("status code")))
            case 2: outcome = .noResponse(try reader.readCode(TransportFailure.self, "transport failure"))
            case 3: outcome = .notSent
            case let tag: throw DecodingProblem("unknown outcome tag \(tag)")
            }
            return .attemptFinished(
                AttemptFinished(
                    attempt: attempt,
                    outcome: outcome,
                    disposition: try reader.readCode(Disposition.self, "disposition"),
                    errorCode: try reader.readOptionalString("error code"),
                    errorMessage: try reader.readOptionalString("error message"),
                    retryAfter: try reader.readOptionalDate("retry-after"),
                    approvalRequestID: try reader.readOptionalString("approval request id"),
                    serverRevision: try reader.readOptionalString("server revision"),
                    nextAttemptAt: try reader.readOptionalDate("next attempt")
                )
            )
        case .attemptAbandoned:
            return .attemptAbandoned(AttemptAbandoned(attempt: try reader.readAttempt()))
        case .withdrawn:
            let code = try reader.readString("error code")
            let message = try reader.readString("error message")
            return .withdrawn(Withdrawn(errorCode: code, errorMessage: message))
        case .requeued:
            return .requeued(Requeued(requestedBy: try reader.readCode(Requester.self, "requester")))
        case .discarded:
            let requester = try reader.readCode(Requester.self, "requester")
            let reason = try reader.readCode(DiscardReason.self, "discard reason")
            return .discarded(Discarded(requestedBy: requester, reason: reason))
        case .approvalDecided:
            let approved = try reader.readBool("approved")
            let reference = try reader.readOptionalString("decision reference")
            return .approvalDecided(ApprovalDecided(approved: approved, reference: reference))
        case .sessionPaused:
            let reason = try reader.readString("pause reason")
            let trigger = try reader.readOptional("triggering operation") { (reader) throws(DecodingProblem) in
                try reader.readOperationID()
            }
            return .sessionPaused(SessionPaused(reason: reason, triggeredBy: trigger))
        case .sessionResumed:
            return .sessionResumed
        case .journalOpened:
            let version = Int(try reader.readUInt16("format version"))
            let engine = try reader.readString("engine version")
            let app = try reader.readOptionalString("app version")
            return .journalOpened(JournalOpened(formatVersion: version, engineVersion: engine, appVersion: app))
        case .compacted:
            let first = JournalSequence(rawValue: try reader.readUInt64("first seq"))
            let last = JournalSequence(rawValue: try reader.readUInt64("last seq"))
            let removed = Int(try reader.readUInt64("removed count"))
            let digest = try reader.readDigest("compaction digest")
            let count = Int(try reader.readUInt32("compacted operation count"))
            guard count <= reader.remaining else { throw DecodingProblem("\(count) compacted operations cannot fit") }
            var operations: [CompactedOperation] = []
            operations.reserveCapacity(count)
            for _ in 0..<count { operations.append(try reader.readCompactedOperation()) }
            return .compacted(Compacted(firstSeq: first, lastSeq: last, removedCount: removed, digest: digest, operations: operations))
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}

extension ByteReader {
    fileprivate mutating func readAttempt() throws(DecodingProblem) -> AttemptNumber {
        let value = try readUInt32("attempt number")
        guard value >= 1 else { throw DecodingProblem("attempt number 0") }
        return AttemptNumber(rawValue: Int(value))
    }
}

extension ByteWriter {
    /// A compacted operation's ledger row: in `compacted` events and compacted states alike.
    package mutating func write(_ operation: CompactedOperation) {
        write(operation.id)
        write(operation.operationType)
        write(operation.status.code)
        write(operation.firstSeq.rawValue)
        write(operation.createdAt)
        write(operation.changedAt)
        write(UInt32(operation.attemptCount))
        write(operation.latestOutcome?.code ?? 0)
        write(operation.lastErrorCode)
        write(operation.serverRevision)
    }
}

extension ByteReader {
    package mutating func readCompactedOperation() throws(DecodingProblem) -> CompactedOperation {
        let id = try readOperationID()
        let type = try readString("operation type")
        let status = try readCode(OutboxStatus.self, "status")
        guard status.isTerminal else { throw DecodingProblem("a compacted operation is \(status), not terminal") }
        let firstSeq = JournalSequence(rawValue: try readUInt64("first seq"))
        let createdAt = try readDate("created at")
        let changedAt = try readDate("changed at")
        let attempts = Int(try readUInt32("attempt count"))
        let outcomeCode = try readUInt8("latest outcome")
        var outcome: OutcomeCategory?
        if outcomeCode != 0 {
            guard let known = OutcomeCategory(code: outcomeCode) else { throw DecodingProblem("unknown outcome code \(outcomeCode)") }
            outcome = known
        }
        return CompactedOperation(
            id: id, operationType: type, status: status, firstSeq: firstSeq, createdAt: createdAt,
            changedAt: changedAt, attemptCount: attempts, latestOutcome: outcome,
            lastErrorCode: try readOptionalString("error code"),
            serverRevision: try readOptionalString("server revision")
        )
    }
}
