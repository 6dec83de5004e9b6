import Foundation
package import OutboxWire
import OutboxCrypto

/// The stored form of an ``OperationState`` in the `operations` projection.
///
/// A projection, not a record: it can always be rebuilt from the events, so its layout is
/// versioned by the projection version and a change to it only costs a rebuild at open.
package enum StateCodec {
    /// The first byte of a stored state: its form.
    private enum Form: UInt8 {
        case full = 1
        /// What a compaction leaves: the ledger row's fields only.
        case compacted = 2
    }

    package static func encode(_ state: OperationState) -> [UInt8] {
        var writer = ByteWriter(capacity: 256 + 8 * state.eventSeqs.count)
        encode(state, into: &writer)
        return writer.bytes
    }

    /// Appends the stored form of `state` to `writer`: how a rebuild encodes many states into
    /// one buffer.
    package static func encode(_ state: OperationState, into writer: inout ByteWriter) {
        if let compactedAt = state.compactedAt {
            writer.write(Form.compacted.rawValue)
            CompactedOperation(state).write(to: &writer)
            writer.write(state.latestSeq.rawValue)
            writer.write(compactedAt)
            return
        }
        writer.write(Form.full.rawValue)
        writer.write(state.id)
        writer.write(state.status.code)
        writer.write(state.businessID)
        writer.write(state.operationType)
        writer.write(state.method)
        writer.write(state.endpoint)
        writer.write(state.entityID)
        writer.write(state.category)
        writer.write(state.entityLabel)
        writer.write(state.summary)
        writer.write(UInt32(state.payloadVersion))
        writer.write(UInt32(state.payloadByteCount))
        writer.write(state.requestHash)
        writer.write(state.account)
        writer.writeOptional(state.sealedPresentation) { $0.write(bytes: $1) }
        writer.write(state.createdAt)
        writer.write(UInt32(state.attemptCount))
        writer.write(state.nextAttemptAt)
        writer.write(state.lastAttemptAt)
        writer.write(outcome: state.lastOutcome)
        writer.write(state.latestOutcome?.code ?? OutcomeCategory.noCode)
        writer.write(state.lastErrorCode)
        writer.write(state.lastErrorMessage)
        writer.write(state.approvalRequestID)
        writer.write(state.serverRevision)
        writer.write(state.firstSeq.rawValue)
        writer.write(state.latestSeq.rawValue)
        writer.write(state.changedAt)
        // Intent (projection layout 4).
        writer.write(state.appGaveID)
        writer.write(state.baseRevision)
        writeDependencies(&writer, state.dependsOn)
        writeSupersession(&writer, state.supersedes)
        writer.writeOptional(state.supersededBy) { $0.write($1) }
        writer.write(state.supersededReason?.code ?? 0)
        writer.write(state.laneSeq.rawValue)
        writer.write(UInt32(state.rebaseCount))
        writeServerValue(&writer, of: state)
        writer.write(UInt32(state.retryEpochAttempts))
        writer.write(state.retryEpochStartedAt)
        writer.writeOptional(state.endedDependency) { $0.write($1) }
        // The device's uptime at the retry epoch's start and at the latest event (layout 6).
        writer.writeOptional(state.retryEpochStartedUptime, writeUptime)
        writer.writeOptional(state.changedUptime, writeUptime)
        // Records (layout 7).
        writer.write(UInt32(state.records.count))
        for key in state.records { writer.write(key) }
        writer.writeOptional(state.revisionFrom) { $0.write($1) }
        writer.write(state.sentRevision)
        writer.write(UInt32(state.awaitingServerValue.count))
        for key in state.awaitingServerValue { writer.write(key) }
        writer.writeOptional(state.rolledBackSeq) { $0.write($1.rawValue) }
        writer.write(state.rollbackAcknowledged)
        writer.writeOptional(state.heldOn) { $0.write($1) }
        // Where the feed shows a synced write (layout 9).
        writer.writeOptional(state.visibleAt) { $0.write(position: $1) }
        // What the service objective reads (layout 10).
        writer.writeOptional(state.connectedClockAtEnqueue) { $0.write(seconds: $1) }
        writer.writeOptional(state.acknowledgedConnectedAge) { $0.write(seconds: $1) }
        writer.write(UInt32(state.abandonedAttempts))
        writer.write(UInt32(state.cancelledAttempts))
        // The claim's age and the engine's decision (layout 11).
        writer.write(state.firstAttemptAt)
        writer.write(state.decision?.code ?? OutcomeCategory.noCode)
        writer.write(state.decidedAt)
        // Attachments and their uploads (layout 14).
        writer.write(UInt32(state.attachments.count))
        for upload in state.attachments { writeUpload(&writer, upload) }
        writer.write(UInt32(state.eventSeqs.count))
        for seq in state.eventSeqs { writer.write(seq.rawValue) }
    }

    /// The status of a stored state, read without decoding the rest: `nil` for a compacted one
    /// (or bytes too short to hold one).
    package static func status(of bytes: UnsafeRawBufferPointer) -> OutboxStatus? {
        guard bytes.count > 17, bytes[0] == Form.full.rawValue else { return nil }
        return OutboxStatus(code: bytes[17])
    }

    /// - Parameter eventSeqs: whether to read the seqs of the operation's events (``OperationState/eventSeqs``),
    ///   the one field that grows with its history: a read that shows a row and never writes it
    ///   back (the Sync tab's) leaves them unread, checked only to fit, and the state's list empty.
    package static func decode(_ bytes: [UInt8], eventSeqs: Bool = true) throws(DecodingProblem) -> OperationState {
        var reader = ByteReader(bytes)
        switch try reader.readUInt8("state form") {
        case Form.full.rawValue:
            break
        case Form.compacted.rawValue:
            let operation = try CompactedOperation(reading: &reader, version: RecordCodec.formatVersion)
            let latestSeq = JournalSequence(rawValue: try reader.readUInt64("latest seq"))
            let compactedAt = try reader.readDate("compacted at")
            try reader.expectEnd("the compacted state")
            return OperationState(compacted: operation, seq: latestSeq, compactedAt: compactedAt)
        case let form:
            throw DecodingProblem("unknown state form \(form)")
        }
        let id = try reader.readOperationID()
        let status = try reader.readCode(OutboxStatus.self, "status")
        let businessID = try reader.readString("business id")
        let operationType = try reader.readString("operation type")
        let method = try reader.readString("method")
        let endpoint = try reader.readString("endpoint")
        let entityID = try reader.readOptionalString("entity id")
        let category = try reader.readString("category")
        let entityLabel = try reader.readString("entity label")
        let summary = try reader.readString("summary")
        let payloadVersion = Int(try reader.readUInt32("payload version"))
        let payloadByteCount = Int(try reader.readUInt32("payload size"))
        let requestHash = try reader.readDigest("request hash")
        let account = try reader.readString("account")
        let sealedPresentation = try reader.readOptional("sealed presentation") { (reader) throws(DecodingProblem) in
            try reader.readBytes("sealed presentation")
        }
        let createdAt = try reader.readDate("created at")
        var state = OperationState(
            stored: id, status: status, businessID: businessID, operationType: operationType, method: method,
            endpoint: endpoint, entityID: entityID, category: category, entityLabel: entityLabel, summary: summary,
            payloadVersion: payloadVersion, payloadByteCount: payloadByteCount, requestHash: requestHash,
            account: account, sealedPresentation: sealedPresentation, createdAt: createdAt
        )
        state.attemptCount = Int(try reader.readUInt32("attempt count"))
        state.nextAttemptAt = try reader.readOptionalDate("next attempt")
        state.lastAttemptAt = try reader.readOptionalDate("last attempt")
        state.lastOutcome = try reader.readOptionalOutcome()
        state.latestOutcome = try reader.readOptionalCode(OutcomeCategory.self, "latest outcome")
        state.lastErrorCode = try reader.readOptionalString("error code")
        state.lastErrorMessage = try reader.readOptionalString("error message")
        state.approvalRequestID = try reader.readOptionalString("approval request id")
        state.serverRevision = try reader.readOptionalString("server revision")
        state.firstSeq = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        state.latestSeq = JournalSequence(rawValue: try reader.readUInt64("latest seq"))
        state.changedAt = try reader.readDate("changed at")
        state.appGaveID = try reader.readBool("app-given id")
        state.baseRevision = try reader.readOptionalString("base revision")
        state.dependsOn = try readDependencies(&reader)
        state.supersedes = try readSupersession(&reader)
        state.supersededBy = try reader.readOptional("superseded by") { (reader) throws(DecodingProblem) in
            try reader.readOperationID("superseded by")
        }
        state.supersededReason = try reader.readOptionalCode(SupersedeReason.self, "supersede reason")
        state.laneSeq = JournalSequence(rawValue: try reader.readUInt64("lane seq"))
        state.rebaseCount = Int(try reader.readUInt32("rebase count"))
        try readServerValue(&reader, into: &state)
        state.retryEpochAttempts = Int(try reader.readUInt32("retry epoch attempts"))
        state.retryEpochStartedAt = try reader.readOptionalDate("retry epoch start")
        state.endedDependency = try reader.readOptional("ended dependency") { (reader) throws(DecodingProblem) in
            try reader.readOperationID("ended dependency")
        }
        state.retryEpochStartedUptime = try reader.readOptional("retry epoch uptime", readUptime)
        state.changedUptime = try reader.readOptional("changed uptime", readUptime)
        state.records = try readKeys(&reader, "record count")
        state.revisionFrom = try reader.readOptional("revision from") { (reader) throws(DecodingProblem) in try reader.readRecordKey() }
        state.sentRevision = try reader.readOptionalString("sent revision")
        state.awaitingServerValue = try readKeys(&reader, "awaiting record count")
        state.rolledBackSeq = try reader.readOptional("rolled back at") { (reader) throws(DecodingProblem) in
            JournalSequence(rawValue: try reader.readUInt64("rolled back at"))
        }
        state.rollbackAcknowledged = try reader.readBool("rollback acknowledged")
        state.heldOn = try reader.readOptional("held on") { (reader) throws(DecodingProblem) in try reader.readOperationID("held on") }
        state.visibleAt = try reader.readOptional("visible at") { (reader) throws(DecodingProblem) in try reader.readPosition("visible at") }
        state.connectedClockAtEnqueue = try reader.readOptional("connected clock") { (reader) throws(DecodingProblem) in try reader.readSeconds("connected clock") }
        state.acknowledgedConnectedAge = try reader.readOptional("connected age") { (reader) throws(DecodingProblem) in try reader.readSeconds("connected age") }
        state.abandonedAttempts = Int(try reader.readUInt32("abandoned attempts"))
        state.cancelledAttempts = Int(try reader.readUInt32("cancelled attempts"))
        state.firstAttemptAt = try reader.readOptionalDate("first attempt")
        state.decision = try reader.readOptionalCode(AutomaticDecision.self, "decision")
        state.decidedAt = try reader.readOptionalDate("decided at")
        let attachmentCount = Int(try reader.readUInt32("attachment count"))
        guard attachmentCount <= reader.remaining / 64 else { throw DecodingProblem("\(attachmentCount) attachments cannot fit") }
        state.attachments = []
        for _ in 0..<attachmentCount { state.attachments.append(try readUpload(&reader)) }
        let seqCount = Int(try reader.readUInt32("event count"))
        guard seqCount <= reader.remaining / 8 else { throw DecodingProblem("\(seqCount) event seqs in \(reader.remaining) bytes") }
        guard eventSeqs else {
            try reader.skip(seqCount * 8, "event seqs")
            try reader.expectEnd("the operation state")
            return state
        }
        state.eventSeqs = []
        state.eventSeqs.reserveCapacity(seqCount)
        for _ in 0..<seqCount { state.eventSeqs.append(JournalSequence(rawValue: try reader.readUInt64("event seq"))) }
        try reader.expectEnd("the operation state")
        return state
    }

    static func writeDependencies(_ writer: inout ByteWriter, _ dependencies: [OperationID]) {
        writer.write(UInt32(dependencies.count))
        for dependency in dependencies { writer.write(dependency) }
    }

    static func readDependencies(_ reader: inout ByteReader) throws(DecodingProblem) -> [OperationID] {
        let count = Int(try reader.readUInt32("dependency count"))
        guard count <= reader.remaining / 16 else { throw DecodingProblem("\(count) dependencies cannot fit") }
        var dependencies: [OperationID] = []
        dependencies.reserveCapacity(count)
        for _ in 0..<count { dependencies.append(try reader.readOperationID("dependency")) }
        return dependencies
    }

    static func writeSupersession(_ writer: inout ByteWriter, _ supersedes: Supersession?) {
        writer.writeOptional(supersedes) { writer, supersedes in
            writer.write(supersedes.operation)
            writer.write(supersedes.reason.code)
            writer.write(supersedes.laneSeq.rawValue)
        }
    }

    static func readSupersession(_ reader: inout ByteReader) throws(DecodingProblem) -> Supersession? {
        try reader.readOptional("supersedes") { (reader) throws(DecodingProblem) in
            Supersession(
                operation: try reader.readOperationID("superseded operation"),
                reason: try reader.readCode(SupersedeReason.self, "supersede reason"),
                laneSeq: JournalSequence(rawValue: try reader.readUInt64("lane seq"))
            )
        }
    }

    /// The server's version of a conflicted record, plain and sealed (each optional).
    static func writeServerValue(_ writer: inout ByteWriter, of state: OperationState) {
        writer.writeOptional(state.serverCurrent) { $0.write(bytes: $1) }
        writer.writeOptional(state.sealedServerCurrent) { $0.write(bytes: $1) }
    }

    static func readServerValue(_ reader: inout ByteReader, into state: inout OperationState) throws(DecodingProblem) {
        state.serverCurrent = try reader.readOptional("server current") { (reader) throws(DecodingProblem) in
            Data(try reader.readBytes("server current"))
        }
        state.sealedServerCurrent = try reader.readOptional("sealed server current") { (reader) throws(DecodingProblem) in
            try reader.readBytes("sealed server current")
        }
    }

    static func readKeys(_ reader: inout ByteReader, _ what: StaticString) throws(DecodingProblem) -> [RecordKey] {
        let count = Int(try reader.readUInt32(what))
        guard count <= reader.remaining / 3 else { throw DecodingProblem("\(count) record keys cannot fit") }
        var keys: [RecordKey] = []
        for _ in 0..<count { keys.append(try reader.readRecordKey()) }
        return keys
    }

    private static func writeUptime(_ writer: inout ByteWriter, _ uptime: Uptime) {
        writer.write(uptime.seconds.bitPattern)
        withUnsafeBytes(of: uptime.bootID.uuid) { writer.write(raw: $0) }
    }

    private static func readUptime(_ reader: inout ByteReader) throws(DecodingProblem) -> Uptime {
        let seconds = Double(bitPattern: try reader.readUInt64("uptime"))
        let boot = try reader.withRaw(16, "boot id") { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        return Uptime(seconds: seconds, bootID: boot)
    }

    package static func encode(_ engine: EngineState) -> [UInt8] {
        var writer = ByteWriter(capacity: 96)
        writer.write(engine.isPaused)
        writer.write(engine.pauseReason)
        writer.write(engine.pausedAt)
        writer.writeOptional(engine.pausedBy) { $0.write($1) }
        writer.writeOptional(engine.lastOpened) { writer, opened in
            writer.write(UInt16(opened.formatVersion))
            writer.write(opened.engineVersion)
            writer.write(opened.appVersion)
            writer.write(opened.timeZone)
            writer.write(opened.installation)
        }
        writer.write(UInt64(engine.openCount))
        writer.write(UInt64(engine.compactionCount))
        writer.writeOptional(engine.compactedThrough) { $0.write($1.rawValue) }
        writer.write(engine.session.code)
        writer.write(engine.sessionSince)
        // The route (layout 10).
        writer.write(engine.route.seen)
        writer.write(engine.route.since)
        writer.write(seconds: engine.route.connectedSeconds)
        // The installations (layout 11).
        writer.write(engine.installation)
        writer.write(engine.openedOn)
        return writer.bytes
    }

    package static func decodeEngine(_ bytes: [UInt8]) throws(DecodingProblem) -> EngineState {
        var reader = ByteReader(bytes)
        var engine = EngineState()
        engine.isPaused = try reader.readBool("paused")
        engine.pauseReason = try reader.readOptionalString("pause reason")
        engine.pausedAt = try reader.readOptionalDate("paused at")
        engine.pausedBy = try reader.readOptional("paused by") { (reader) throws(DecodingProblem) in
            try reader.readOperationID()
        }
        engine.lastOpened = try reader.readOptional("last opened") { (reader) throws(DecodingProblem) in
            JournalOpened(
                formatVersion: Int(try reader.readUInt16("format version")),
                engineVersion: try reader.readString("engine version"),
                appVersion: try reader.readOptionalString("app version"),
                timeZone: try reader.readOptionalString("time zone"),
                installation: try reader.readOptionalString("installation")
            )
        }
        engine.openCount = Int(try reader.readUInt64("open count"))
        engine.compactionCount = Int(try reader.readUInt64("compaction count"))
        engine.compactedThrough = try reader.readOptional("compacted through") { (reader) throws(DecodingProblem) in
            JournalSequence(rawValue: try reader.readUInt64("seq"))
        }
        engine.session = try reader.readCode(SessionObservation.self, "session")
        engine.sessionSince = try reader.readOptionalDate("session since")
        engine.route.seen = try reader.readBool("route seen")
        engine.route.since = try reader.readOptionalDate("route since")
        engine.route.connectedSeconds = try reader.readSeconds("connected seconds")
        engine.installation = try reader.readOptionalString("installation")
        engine.openedOn = try reader.readOptionalString("opened on")
        try reader.expectEnd("the engine state")
        return engine
    }
}

extension OperationState {
    /// A live state of the fields a stored state begins with, the rest at their first values for
    /// the decoder to overwrite: built in place, where going through an `Enqueued` copied each
    /// field of its request twice (a third of a state's decoding).
    init(
        stored id: OperationID, status: OutboxStatus, businessID: String, operationType: String, method: String,
        endpoint: String, entityID: String?, category: String, entityLabel: String, summary: String,
        payloadVersion: Int, payloadByteCount: Int, requestHash: SHA256Digest, account: String,
        sealedPresentation: [UInt8]?, createdAt: Date
    ) {
        self.id = id
        self.status = status
        self.businessID = businessID
        self.operationType = operationType
        self.method = method
        self.endpoint = endpoint
        self.entityID = entityID
        self.category = category
        self.entityLabel = entityLabel
        self.summary = summary
        self.payloadVersion = payloadVersion
        self.payloadByteCount = payloadByteCount
        self.requestHash = requestHash
        self.account = account
        self.sealedPresentation = sealedPresentation
        self.createdAt = createdAt
        self.attemptCount = 0
        self.dependsOn = []
        self.laneSeq = .zero
        self.rebaseCount = 0
        self.retryEpochAttempts = 0
        self.appGaveID = false
        self.firstSeq = .zero
        self.latestSeq = .zero
        self.eventSeqs = []
        self.changedAt = createdAt
        self.form = .live
    }
}
