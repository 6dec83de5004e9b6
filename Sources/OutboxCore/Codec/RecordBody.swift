import Foundation
import OutboxWire
import OutboxCrypto

/// An event body's fields in the record format: how each kind is written and read, side by side,
/// in the order `Docs/journal-format.md` lists them. ``RecordCodec`` only dispatches on the kind.
///
/// A body is always written in the newest format; it is read in the format of its record, whose
/// version says which fields it holds (fields a version added come after the older ones).
protocol RecordBody {
    func write(to writer: inout ByteWriter)
    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem)
}

extension AttemptStarted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(attempt)
        writer.write(trigger.code)
        // Format 3.
        writer.write(sentRevision)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attempt: try reader.readAttempt(), trigger: try reader.readCode(WakeReason.self, "wake reason"),
                  sentRevision: version >= 3 ? try reader.readOptionalString("sent revision") : nil)
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
        // Format 2: the server's current record of a conflict, plaintext or sealed.
        if let sealed = sealedServerCurrent {
            writer.write(ServerCurrentTag.sealed.rawValue)
            writer.write(bytes: sealed)
        } else if let current = self.serverCurrent {
            writer.write(ServerCurrentTag.plaintext.rawValue)
            writer.write(bytes: current)
        } else {
            writer.write(ServerCurrentTag.none.rawValue)
        }
        // Format 3: the records' trail.
        writer.write(UInt32(confirmations.count))
        for confirmation in confirmations { confirmation.write(to: &writer) }
        // Format 4: where the feed shows the write.
        writer.writeOptional(visibleAt) { $0.write(position: $1) }
        // Format 5: its connected age when acknowledged.
        writer.writeOptional(connectedAgeSeconds) { $0.write(seconds: $1) }
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let attempt = try reader.readAttempt()
        var classification = Classification(
            outcome: try reader.readOutcome(),
            disposition: try reader.readCode(Disposition.self, "disposition"),
            errorCode: try reader.readOptionalString("error code"),
            errorMessage: try reader.readOptionalString("error message"),
            retryAfter: try reader.readOptionalDate("retry-after"),
            approvalRequestID: try reader.readOptionalString("approval request id"),
            serverRevision: try reader.readOptionalString("server revision")
        )
        let nextAttemptAt = try reader.readOptionalDate("next attempt")
        var sealed: [UInt8]?
        if version >= 2 {
            let tag = try reader.readUInt8("server current")
            switch ServerCurrentTag(rawValue: tag) {
            case .none?: break
            case .plaintext?: classification.serverCurrent = Data(try reader.readBytes("server current"))
            case .sealed?: sealed = try reader.readBytes("sealed server current")
            case nil: throw DecodingProblem("unknown server-current tag \(tag)")
            }
        }
        self.init(attempt: attempt, classification, nextAttemptAt: nextAttemptAt, sealedServerCurrent: sealed)
        if version >= 3 {
            let count = Int(try reader.readUInt32("confirmation count"))
            guard count <= reader.remaining else { throw DecodingProblem("\(count) record confirmations cannot fit") }
            for _ in 0..<count { confirmations.append(try RecordConfirmation(reading: &reader, version: version)) }
        }
        if version >= 4 {
            visibleAt = try reader.readOptional("visible at") { (reader) throws(DecodingProblem) in try reader.readPosition("visible at") }
        }
        if version >= 5 {
            connectedAgeSeconds = try reader.readOptional("connected age") { (reader) throws(DecodingProblem) in try reader.readSeconds("connected age") }
        }
    }
}

extension AttemptAbandoned: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(attempt) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attempt: try reader.readAttempt())
    }
}

extension Withdrawn: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(errorCode)
        writer.write(errorMessage)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(errorCode: try reader.readString("error code"), errorMessage: try reader.readString("error message"))
    }
}

extension Requeued: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(requestedBy.code) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(requestedBy: try reader.readCode(Requester.self, "requester"))
    }
}

extension Discarded: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(requestedBy.code)
        writer.write(reason.code)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(requestedBy: try reader.readCode(Requester.self, "requester"),
                  reason: try reader.readCode(DiscardReason.self, "discard reason"))
    }
}

extension ApprovalDecided: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(approved)
        writer.write(reference)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(approved: try reader.readBool("approved"), reference: try reader.readOptionalString("decision reference"))
    }
}

extension SessionPaused: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(reason)
        writer.writeOptional(triggeredBy) { $0.write($1) }
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
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
        writer.write(timeZone)
        // Format 6.
        writer.write(installation)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(formatVersion: Int(try reader.readUInt16("format version")),
                  engineVersion: try reader.readString("engine version"),
                  appVersion: try reader.readOptionalString("app version"),
                  timeZone: version >= 2 ? try reader.readOptionalString("time zone") : nil,
                  installation: version >= 6 ? try reader.readOptionalString("installation") : nil)
    }
}

extension InstallationAdopted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(previous)
        writer.write(installation)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(previous: try reader.readString("previous installation"), installation: try reader.readString("installation"))
    }
}

extension ClaimMayBeForgotten: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(firstAttemptAt)
        writer.write(seconds: retentionSeconds)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(firstAttemptAt: try reader.readDate("first attempt"), retentionSeconds: try reader.readSeconds("claim retention"))
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

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let first = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        let last = JournalSequence(rawValue: try reader.readUInt64("last seq"))
        let removed = Int(try reader.readUInt64("removed count"))
        let digest = try reader.readDigest("compaction digest")
        let count = Int(try reader.readUInt32("compacted operation count"))
        guard count <= reader.remaining else { throw DecodingProblem("\(count) compacted operations cannot fit") }
        var operations: [CompactedOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count { operations.append(try CompactedOperation(reading: &reader, version: version)) }
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
        // Format 2: who and what it was.
        writer.writeOptional(identity) { writer, identity in
            writer.write(identity.businessID)
            writer.write(identity.category)
            writer.write(identity.entityID)
            writer.write(identity.entityLabel)
            writer.write(identity.summary)
            writer.writeOptional(identity.sealedPresentation) { $0.write(bytes: $1) }
            writer.write(identity.requestHash)
            writer.writeOptional(identity.supersededBy) { $0.write($1) }
            writer.write(identity.method)
            writer.write(identity.endpoint)
            writer.write(UInt32(identity.payloadVersion))
            writer.write(UInt32(identity.payloadByteCount))
            writer.write(identity.account)
        }
        // Format 3: the records' trail its answers left.
        writer.write(UInt32(confirmations.count))
        for confirmation in confirmations { confirmation.write(to: &writer) }
        // Format 6: a decision the engine made for the member.
        writer.write(decision?.code ?? OutcomeCategory.noCode)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let id = try reader.readOperationID()
        let type = try reader.readString("operation type")
        let status = try reader.readCode(OutboxStatus.self, "status")
        guard status.isTerminal else { throw DecodingProblem("a compacted operation is \(status), not terminal") }
        let firstSeq = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        let createdAt = try reader.readDate("created at")
        let changedAt = try reader.readDate("changed at")
        let attempts = Int(try reader.readUInt32("attempt count"))
        let outcome = try reader.readOptionalCode(OutcomeCategory.self, "latest outcome")
        let errorCode = try reader.readOptionalString("error code")
        let revision = try reader.readOptionalString("server revision")
        let identity: CompactedIdentity? = version >= 2
            ? try reader.readOptional("identity") { (reader) throws(DecodingProblem) in
                CompactedIdentity(
                    businessID: try reader.readString("business id"),
                    category: try reader.readString("category"),
                    entityID: try reader.readOptionalString("entity id"),
                    entityLabel: try reader.readString("entity label"),
                    summary: try reader.readString("summary"),
                    sealedPresentation: try reader.readOptional("sealed presentation") { (reader) throws(DecodingProblem) in
                        try reader.readBytes("sealed presentation")
                    },
                    requestHash: try reader.readDigest("request hash"),
                    supersededBy: try reader.readOptional("superseded by") { (reader) throws(DecodingProblem) in
                        try reader.readOperationID("superseded by")
                    },
                    method: try reader.readString("method"),
                    endpoint: try reader.readString("endpoint"),
                    payloadVersion: Int(try reader.readUInt32("payload version")),
                    payloadByteCount: Int(try reader.readUInt32("payload size")),
                    account: try reader.readString("account")
                )
            }
            : nil
        var confirmations: [RecordConfirmation] = []
        if version >= 3 {
            let count = Int(try reader.readUInt32("kept confirmation count"))
            guard count <= reader.remaining else { throw DecodingProblem("\(count) kept confirmations cannot fit") }
            for _ in 0..<count { confirmations.append(try RecordConfirmation(reading: &reader, version: version)) }
        }
        self.init(
            id: id, operationType: type, status: status, firstSeq: firstSeq, createdAt: createdAt,
            changedAt: changedAt, attemptCount: attempts, latestOutcome: outcome,
            lastErrorCode: errorCode, serverRevision: revision, identity: identity, confirmations: confirmations
        )
        if version >= 6 { decision = try reader.readOptionalCode(AutomaticDecision.self, "decision") }
    }
}

extension Superseded: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(by)
        writer.write(reason.code)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(by: try reader.readOperationID("superseded by"), reason: try reader.readCode(SupersedeReason.self, "supersede reason"))
    }
}

extension Rebased: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(baseRevision) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(baseRevision: try reader.readString("base revision"))
    }
}

extension DependencyEnded: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(dependency)
        writer.write(status.code)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(dependency: try reader.readOperationID("dependency"), status: try reader.readCode(OutboxStatus.self, "dependency status"))
    }
}

extension RouteChanged: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(seen)
        writer.write(at)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(seen: try reader.readBool("route seen"), at: try reader.readDate("route moment"))
    }
}

extension SessionChanged: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(observation.code) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(observation: try reader.readCode(SessionObservation.self, "session"))
    }
}
