package import Foundation
package import OutboxCrypto
package import OutboxWire

/// Everything an outbox row needs, folded from the operation's events.
///
/// The payload itself is not part of the state: it lives once, in the `enqueued` event, and is
/// read from there when a request is sent or shown.
package struct OperationState: Sendable, Equatable {
    package var id: OperationID
    package var status: OutboxStatus

    // The request, as enqueued (without its payload).
    package var businessID: String
    package var operationType: String
    package var method: String
    package var endpoint: String
    package var entityID: String?
    package var category: String
    package var entityLabel: String
    package var summary: String
    package var payloadVersion: Int
    package var payloadByteCount: Int
    package var requestHash: SHA256Digest
    /// The account the write was made under.
    package var account: String
    /// The entity label and summary, sealed, in an encrypted journal (where ``entityLabel`` and
    /// ``summary`` are empty): opened with the journal's key when shown.
    package var sealedPresentation: [UInt8]?

    /// When it was enqueued (device clock, display only).
    package var createdAt: Date
    /// Attempts started so far.
    package var attemptCount: Int
    /// When a queued row is next due; `nil` means due now.
    package var nextAttemptAt: Date?
    /// When the latest attempt started.
    package var lastAttemptAt: Date?
    /// The latest attempt's outcome, as recorded.
    package var lastOutcome: AttemptOutcome?
    /// The latest outcome in the ledger's words.
    package var latestOutcome: OutcomeCategory?
    package var lastErrorCode: String?
    package var lastErrorMessage: String?
    /// The request id of a 202 that holds the write for approval.
    package var approvalRequestID: String?
    /// The record's revision, when the server returned one.
    package var serverRevision: String?

    /// The revision the next attempt sends in `If-Match`: the request's, or the server's after
    /// a rebase.
    package var baseRevision: String?
    /// The operations it waits for (each, or what replaced it, must be synced first).
    package var dependsOn: [OperationID]
    /// The row it replaces, when it corrects, resolves or coalesces one.
    package var supersedes: Supersession?
    /// The operation that replaced it, once `superseded`.
    package var supersededBy: OperationID?
    /// Why it was replaced.
    package var supersededReason: SupersedeReason?
    /// Its place in its lane: its own `enqueued` seq, or the place of the row it replaces.
    package var laneSeq: JournalSequence
    /// How many times a conflict rule rebased it.
    package var rebaseCount: Int
    /// For a conflicted row: the server's current record when it answered (plaintext, or empty
    /// with ``sealedServerCurrent`` set when the journal is encrypted at rest).
    package var serverCurrent: Data?
    package var sealedServerCurrent: [UInt8]?
    /// The attempt count when a person last put the row back in the queue: the retry policy's
    /// limits count attempts from there.
    package var retryEpochAttempts: Int
    /// When the first attempt since then started: the policy's age limit counts from there.
    package var retryEpochStartedAt: Date?
    /// The device's uptime at that moment: the age is measured by it (``DeviceMoment``).
    package var retryEpochStartedUptime: Uptime?
    /// The dependency whose chain ended unapplied, for a row blocked by it.
    package var endedDependency: OperationID?
    /// Whether the app gave the operation its id (``OutboxRequest/operationID``).
    package var appGaveID: Bool

    // Records (projection layout 7).

    /// The member's records the write changes, in the order given: their values are in its
    /// `enqueued` event.
    package var records: [RecordKey] = []
    /// The record whose server revision its `If-Match` takes as it is sent.
    package var revisionFrom: RecordKey?
    /// The revision its latest attempt sent, when it took it from a record's base.
    package var sentRevision: String?
    /// Once synced: the records whose overlay stays, confirmed, until the server's value is
    /// back: those the answer did not describe or, when the answer named where the feed shows
    /// the write (``visibleAt``), all of them, until a pull reaches that position.
    package var awaitingServerValue: [RecordKey] = []
    /// Once synced: where the server's change feed shows the write (layout 9).
    package var visibleAt: FeedPosition?
    /// When the write was rolled back (failed, blocked, discarded, withdrawn): the seq of that
    /// event. A later write of the same record made before it was built on a value that never
    /// reached the server. `nil` again once retried.
    package var rolledBackSeq: JournalSequence?
    /// Whether the app acknowledged the rollback (``RollbackAcknowledged``).
    package var rollbackAcknowledged = false
    /// For a row held because it was built on a rolled-back write: that write.
    package var heldOn: OperationID?
    /// The journal's connected clock when the write was made (``Enqueued/connectedClock``):
    /// its connected age is the clock now less this. `nil` for writes made before format 5.
    package var connectedClockAtEnqueue: Double?
    /// Its connected age when first acknowledged (synced or pending approval), from the outcome.
    package var acknowledgedConnectedAge: Double?
    /// Its attempts the app's end interrupted (abandoned at the next open), and those an
    /// expiry cancelled (no response, `cancelled`).
    package var abandonedAttempts = 0
    package var cancelledAttempts = 0
    /// When its first attempt started: how old the server's claim on its key may be. A person's
    /// retry after a `claim_may_be_forgotten` block starts it over (they checked); an imported
    /// write brings it from the journal it came from (``Enqueued/firstSentAt``).
    package var firstAttemptAt: Date?
    /// The decision the engine last made for the member about it, and when; cleared when a
    /// person retries it (they took it back).
    package var decision: AutomaticDecision?
    package var decidedAt: Date?
    /// The files it carries and how far each upload got (layout 14): it is sent only once every
    /// one is completed.
    package var attachments: [AttachmentUpload] = []

    /// The seq of the operation's `enqueued` event: its place in the queue.
    package var firstSeq: JournalSequence
    /// The seq of its latest event.
    package var latestSeq: JournalSequence
    /// The seqs of its events in the journal, oldest first: its history, kept with the state so
    /// that reading it takes no index. Empty once compacted.
    package var eventSeqs: [JournalSequence]
    /// When its latest event was recorded: the Sync tab's "moment".
    package var changedAt: Date
    /// The device's uptime then: how long a settled row has been settled is measured by it.
    package var changedUptime: Uptime?
    /// Whether its events are in the journal, or what a compaction kept of it.
    package var form: Form

    /// What the journal holds of an operation.
    package enum Form: Sendable, Equatable {
        /// Its events are in the journal: every field is folded from them.
        case live
        /// A compaction removed its events and payload: every field is kept but the history
        /// (``eventSeqs`` is empty) and the payload (its size and hash are kept).
        case compacted(at: Date)
        /// Compacted by an engine before journal format 2, which kept the ledger row only: the
        /// status, moments, attempts, outcome, error code and revision. The request's fields
        /// (business, category, entity, label, summary, method, endpoint, account, payload size
        /// and hash) were not kept and read empty; nothing may be read from them.
        case compactedLedgerRowOnly(at: Date)
    }

    /// When a compaction removed its events; `nil` while they are in the journal.
    package var compactedAt: Date? {
        switch form {
        case .live: nil
        case .compacted(let at), .compactedLedgerRowOnly(let at): at
        }
    }

    /// Whether the request's fields hold what was enqueued (all but a ledger-row-only compaction).
    package var keptRequest: Bool {
        if case .compactedLedgerRowOnly = form { return false }
        return true
    }

    /// The state right after `enqueued`.
    package init(id: OperationID, seq: JournalSequence, recordedAt: Date, enqueued: Enqueued) {
        let request = enqueued.request
        self.id = id
        self.status = .queued
        self.businessID = request.businessID
        self.operationType = request.operationType
        self.method = request.method
        self.endpoint = request.endpoint
        self.entityID = request.entityID
        self.category = request.category
        // Sealed text stays sealed in the state, whether or not the event was read with the key.
        self.entityLabel = enqueued.sealed == nil ? request.entityLabel : ""
        self.summary = enqueued.sealed == nil ? request.summary : ""
        self.sealedPresentation = enqueued.sealed?.presentation
        self.payloadVersion = request.payloadVersion
        self.payloadByteCount = enqueued.sealed.map { $0.payload.count - SealedRequest.overheadBytes } ?? request.payload.count
        self.requestHash = enqueued.requestHash
        self.account = enqueued.account
        self.createdAt = recordedAt
        self.attemptCount = 0
        self.baseRevision = request.baseRevision
        self.dependsOn = request.dependsOn
        self.supersedes = enqueued.supersedes
        self.laneSeq = enqueued.supersedes?.laneSeq ?? seq
        self.rebaseCount = 0
        self.retryEpochAttempts = 0
        self.appGaveID = request.operationID != nil
        self.records = enqueued.changes.map(\.key)
        self.revisionFrom = request.revisionFrom
        self.connectedClockAtEnqueue = enqueued.connectedClock
        self.firstAttemptAt = enqueued.firstSentAt
        self.attachments = enqueued.attachments.map(AttachmentUpload.init(manifest:))
        self.firstSeq = seq
        self.latestSeq = seq
        self.eventSeqs = [seq]
        self.changedAt = recordedAt
        self.form = .live
    }

    /// The state a compaction leaves: everything but the history and the payload; for an
    /// operation compacted before journal format 2, the ledger row only (see ``Form``).
    /// - Parameters:
    ///   - seq: the seq of the `compacted` event.
    package init(compacted operation: CompactedOperation, seq: JournalSequence, compactedAt: Date) {
        let identity = operation.identity
        let kept = OutboxRequest(
            businessID: identity?.businessID ?? "", operationType: operation.operationType,
            method: identity?.method ?? "", endpoint: identity?.endpoint ?? "", payload: Data(),
            entityID: identity?.entityID, category: identity?.category ?? "", entityLabel: identity?.entityLabel ?? "",
            summary: identity?.summary ?? "", payloadVersion: identity?.payloadVersion ?? 0
        )
        self.init(id: operation.id, seq: operation.firstSeq, recordedAt: operation.createdAt,
                  enqueued: Enqueued(request: kept, requestHash: identity?.requestHash ?? Self.hashNotKept,
                                     account: identity?.account ?? ""))
        payloadByteCount = identity?.payloadByteCount ?? 0
        sealedPresentation = identity?.sealedPresentation
        supersededBy = identity?.supersededBy
        status = operation.status
        attemptCount = operation.attemptCount
        latestOutcome = operation.latestOutcome
        lastErrorCode = operation.lastErrorCode
        serverRevision = operation.serverRevision
        decision = operation.decision
        decidedAt = operation.decision == nil ? nil : operation.changedAt
        latestSeq = seq
        eventSeqs = []
        changedAt = operation.changedAt
        form = identity == nil ? .compactedLedgerRowOnly(at: compactedAt) : .compacted(at: compactedAt)
    }

    /// The hash field of a ledger-row-only compaction, which kept none: all zero bytes, never
    /// read (``keptRequest`` is false).
    private static let hashNotKept = SHA256Digest(bytes: [UInt8](repeating: 0, count: SHA256Digest.byteCount))!

    /// The request as it will be sent, given the payload read from the `enqueued` event: its
    /// base revision the one the next attempt sends (the server's after a rebase).
    package func request(payload: Data) -> OutboxRequest {
        OutboxRequest(
            businessID: businessID, operationType: operationType, method: method, endpoint: endpoint,
            payload: payload, entityID: entityID, category: category, entityLabel: entityLabel,
            summary: summary, payloadVersion: payloadVersion, operationID: appGaveID ? id : nil,
            baseRevision: baseRevision, revisionFrom: revisionFrom, dependsOn: dependsOn
        )
    }

    /// The lane the row is sent in: its entity within its business, or a lane of its own when it
    /// names no entity. Rows of one lane are sent one after another, in journal order.
    package var lane: Lane { Lane(businessID: businessID, entityID: entityID, operation: id) }

    /// When the first attempt of the retry epoch started, as the device recorded it.
    package var retryEpochStart: DeviceMoment? {
        retryEpochStartedAt.map { DeviceMoment(wall: $0, uptime: retryEpochStartedUptime) }
    }

    /// When its latest event was recorded, as the device recorded it.
    package var changed: DeviceMoment { DeviceMoment(wall: changedAt, uptime: changedUptime) }
}

extension OperationState {
    /// Whether no attempt of it ever left, here or in the journal it was imported from: only
    /// such a row may be coalesced away, since no server can hold its key.
    package var neverSent: Bool { attemptCount == 0 && firstAttemptAt == nil }

    /// Records a decision the engine made for the member, at the moment of its event.
    mutating func decide(_ decision: AutomaticDecision, at moment: Date) {
        self.decision = decision
        decidedAt = moment
    }
}

extension OperationState {
    /// The first of its attachments not completed yet: what its send waits for.
    package var pendingAttachment: AttachmentUpload? {
        attachments.first { !$0.isCompleted }
    }

    /// The index of attachment `id` in ``attachments``.
    package func attachmentIndex(_ id: AttachmentID) -> Int? {
        attachments.firstIndex { $0.id == id }
    }
}
