import Foundation
import OutboxWire
import OutboxCrypto

/// An event body's fields in the record format: how each kind is written and read, side by side,
/// in the order `Docs/journal-format.md` lists them. ``RecordCodec`` only dispatches on the kind.
protocol RecordBody {
    func write(to writer: inout ByteWriter)
    init(reading reader: inout ByteReader) throws(DecodingProblem)
}

extension Enqueued: RecordBody {
    func write(to writer: inout ByteWriter) {
        // Sealed, the payload field holds its ciphertext and the label and summary are empty.
        writer.write(request.businessID)
        writer.write(request.operationType)
        writer.write(request.method)
        writer.write(request.endpoint)
        if let sealed { writer.write(bytes: sealed.payload) } else { writer.write(bytes: request.payload) }
        writer.write(request.entityID)
        writer.write(request.category)
        writer.write(sealed == nil ? request.entityLabel : "")
        writer.write(sealed == nil ? request.summary : "")
        writer.write(UInt32(request.payloadVersion))
        writer.write(requestHash)
        writer.write(account)
        writer.writeOptional(sealed) { $0.write(bytes: $1.presentation) }
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
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
        self.init(request: request, requestHash: hash, account: account, sealed: sealed)
    }
}

extension AttemptStarted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(attempt)
        writer.write(trigger.code)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(attempt: try reader.readAttempt(), trigger: try reader.readCode(WakeReason.self, "wake reason"))
    }
}

extension AttemptFinished: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(attempt)
        writer.write(outcome: self.outcome)
        writer.write(self.disposition.code)
        writer.write(self.errorCode)
        writer.write(self.errorMessage)
        writer.write(self.retryAfter)
        writer.write(self.approvalRequestID)
        writer.write(self.serverRevision)
        writer.write(nextAttemptAt)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        let attempt = try reader.readAttempt()
        let classification = Classification(
            outcome: try reader.readOutcome(),
            disposition: try reader.readCode(Disposition.self, "disposition"),
            errorCode: try reader.readOptionalString("error code"),
            errorMessage: try reader.readOptionalString("error message"),
            retryAfter: try reader.readOptionalDate("retry-after"),
            approvalRequestID: try reader.readOptionalString("approval request id"),
            serverRevision: try reader.readOptionalString("server revision")
        )
        self.init(attempt: attempt, classification, nextAttemptAt: try reader.readOptionalDate("next attempt"))
    }
}

extension AttemptAbandoned: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(attempt) }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(attempt: try reader.readAttempt())
    }
}

extension Withdrawn: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(errorCode)
        writer.write(errorMessage)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(errorCode: try reader.readString("error code"), errorMessage: try reader.readString("error message"))
    }
}

extension Requeued: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(requestedBy.code) }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(requestedBy: try reader.readCode(Requester.self, "requester"))
    }
}

extension Discarded: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(requestedBy.code)
        writer.write(reason.code)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(requestedBy: try reader.readCode(Requester.self, "requester"),
                  reason: try reader.readCode(DiscardReason.self, "discard reason"))
    }
}

extension ApprovalDecided: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(approved)
        writer.write(reference)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(approved: try reader.readBool("approved"), reference: try reader.readOptionalString("decision reference"))
    }
}

extension SessionPaused: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(reason)
        writer.writeOptional(triggeredBy) { $0.write($1) }
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        let reason = try reader.readString("pause reason")
        let trigger = try reader.readOptional("triggering operation") { (reader) throws(DecodingProblem) in
            try reader.readOperationID()
        }
        self.init(reason: reason, triggeredBy: trigger)
    }
}

extension JournalOpened: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(UInt16(formatVersion))
        writer.write(engineVersion)
        writer.write(appVersion)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(formatVersion: Int(try reader.readUInt16("format version")),
                  engineVersion: try reader.readString("engine version"),
                  appVersion: try reader.readOptionalString("app version"))
    }
}

extension Compacted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(firstSeq.rawValue)
        writer.write(lastSeq.rawValue)
        writer.write(UInt64(removedCount))
        writer.write(digest)
        writer.write(UInt32(operations.count))
        for operation in operations { operation.write(to: &writer) }
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        let first = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        let last = JournalSequence(rawValue: try reader.readUInt64("last seq"))
        let removed = Int(try reader.readUInt64("removed count"))
        let digest = try reader.readDigest("compaction digest")
        let count = Int(try reader.readUInt32("compacted operation count"))
        guard count <= reader.remaining else { throw DecodingProblem("\(count) compacted operations cannot fit") }
        var operations: [CompactedOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count { operations.append(try CompactedOperation(reading: &reader)) }
        self.init(firstSeq: first, lastSeq: last, removedCount: removed, digest: digest, operations: operations)
    }
}

/// A compacted operation's ledger row: in `compacted` events and compacted states alike.
extension CompactedOperation: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(id)
        writer.write(operationType)
        writer.write(status.code)
        writer.write(firstSeq.rawValue)
        writer.write(createdAt)
        writer.write(changedAt)
        writer.write(UInt32(attemptCount))
        writer.write(latestOutcome?.code ?? OutcomeCategory.noCode)
        writer.write(lastErrorCode)
        writer.write(serverRevision)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        let id = try reader.readOperationID()
        let type = try reader.readString("operation type")
        let status = try reader.readCode(OutboxStatus.self, "status")
        guard status.isTerminal else { throw DecodingProblem("a compacted operation is \(status), not terminal") }
        let firstSeq = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        let createdAt = try reader.readDate("created at")
        let changedAt = try reader.readDate("changed at")
        let attempts = Int(try reader.readUInt32("attempt count"))
        let outcome = try reader.readOptionalCode(OutcomeCategory.self, "latest outcome")
        self.init(
            id: id, operationType: type, status: status, firstSeq: firstSeq, createdAt: createdAt,
            changedAt: changedAt, attemptCount: attempts, latestOutcome: outcome,
            lastErrorCode: try reader.readOptionalString("error code"),
            serverRevision: try reader.readOptionalString("server revision")
        )
    }
}

// MARK: - Shared fields

/// The tag before an attempt's outcome, in records and in stored states.
enum OutcomeTag: UInt8 {
    /// No attempt has an outcome yet (stored states only).
    case none = 0
    case response = 1
    case noResponse = 2
    case notSent = 3
}

extension OutcomeCategory {
    /// The byte stored for "no outcome yet": the codes themselves start at 1.
    static let noCode: UInt8 = 0
}

extension ByteWriter {
    mutating func write(_ attempt: AttemptNumber) {
        write(UInt32(attempt.rawValue))
    }

    mutating func write(outcome: AttemptOutcome?) {
        switch outcome {
        case nil:
            write(OutcomeTag.none.rawValue)
        case .response(let statusCode)?:
            write(OutcomeTag.response.rawValue)
            write(UInt16(clamping: statusCode))
        case .noResponse(let failure)?:
            write(OutcomeTag.noResponse.rawValue)
            write(failure.code)
        case .notSent?:
            write(OutcomeTag.notSent.rawValue)
        }
    }
}

extension ByteReader {
    mutating func readAttempt() throws(DecodingProblem) -> AttemptNumber {
        let value = try readUInt32("attempt number")
        guard value >= 1 else { throw DecodingProblem("attempt number 0") }
        return AttemptNumber(rawValue: Int(value))
    }

    /// An outcome; in a record it is always there.
    mutating func readOutcome() throws(DecodingProblem) -> AttemptOutcome {
        guard let outcome = try readOptionalOutcome() else { throw DecodingProblem("an attempt's outcome is missing") }
        return outcome
    }

    /// An outcome, or none (tag 0) in a stored state.
    mutating func readOptionalOutcome() throws(DecodingProblem) -> AttemptOutcome? {
        let tag = try readUInt8("outcome")
        switch OutcomeTag(rawValue: tag) {
        case .none?: return nil
        case .response?: return .response(statusCode: Int(try readUInt16("status code")))
        case .noResponse?: return .noResponse(try readCode(TransportFailure.self, "transport failure"))
        case .notSent?: return .notSent
        case nil: throw DecodingProblem("unknown outcome tag \(tag)")
        }
    }

    /// A code that may be absent, stored as 0.
    mutating func readOptionalCode<T: JournalCode>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T? {
        let code = try readUInt8(what)
        guard code != 0 else { return nil }
        guard let value = T(code: code) else { throw DecodingProblem("unknown \(what) code \(code)") }
        return value
    }
}
