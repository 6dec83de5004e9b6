// Kept in one file: the event catalogue: every kind, its code, its format and its body, listed once
// so the codec, the fold and the docs can be checked against one list.

public import Foundation
public import OutboxCrypto
public import OutboxWire

/// One immutable entry of the journal.
///
/// Everything the engine knows is folded from these: the status of each operation, the Sync
/// tab, the ledger, the retry schedule and every audit answer.
public struct JournalEvent: Sendable, Equatable {
    /// The event's position: the only order that counts.
    public var seq: JournalSequence
    /// The operation it belongs to; `nil` for engine-level events.
    public var operationID: OperationID?
    /// When it was recorded, by the device clock: for display only.
    public var recordedAt: Date
    /// The device's monotonic clock when it was recorded: time since boot, and the boot. Two
    /// events of one boot measure the time between them whatever the wall clock did; a new boot
    /// marks a restart. `nil` in records written before journal format 2.
    public var uptime: Uptime?
    /// What happened, with its details.
    public var body: JournalEventBody

    public init(seq: JournalSequence, operationID: OperationID?, recordedAt: Date, uptime: Uptime? = nil, body: JournalEventBody) {
        self.seq = seq
        self.operationID = operationID
        self.recordedAt = recordedAt
        self.uptime = uptime
        self.body = body
    }

    /// The event's kind.
    public var kind: JournalEventKind { body.kind }
}

/// The kinds of event, version 1 of the catalogue.
public enum JournalEventKind: String, Sendable, Codable, JournalCode {
    case enqueued
    case attemptStarted
    case attemptFinished
    case attemptAbandoned
    case withdrawn
    case requeued
    case discarded
    case approvalDecided
    case superseded
    case rebased
    case dependencyEnded
    case sessionPaused
    case sessionResumed
    case journalOpened
    case compacted
    case sessionChanged
    case heldOnRollback
    case rollbackAcknowledged
    case recordsWritten
    case recordBaseDropped
    case deletedOnServer
    case pageApplied
    case pageRefused
    case resnapshotStarted
    case snapshotPageStaged
    case resnapshotFinished
    case resnapshotAbandoned
    case summaryChecked

    /// The record format that introduced the kind: a record of an older version cannot hold it.
    public var formatVersion: Int {
        switch self {
        case .superseded, .rebased, .dependencyEnded, .sessionChanged: 2
        case .heldOnRollback, .rollbackAcknowledged, .recordsWritten, .recordBaseDropped: 3
        case .deletedOnServer, .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished,
            .resnapshotAbandoned, .summaryChecked: 4
        default: 1
        }
    }

    /// Whether events of this kind belong to an operation (the rest are engine-level).
    public var isOperationEvent: Bool {
        switch self {
        case .enqueued, .attemptStarted, .attemptFinished, .attemptAbandoned, .withdrawn, .requeued,
            .discarded, .approvalDecided, .superseded, .rebased, .dependencyEnded, .heldOnRollback, .rollbackAcknowledged,
            .deletedOnServer:
            true
        case .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped,
            .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked:
            false
        }
    }

    /// The one-byte code of the record format.
    public var code: UInt8 {
        switch self {
        case .enqueued: 1
        case .attemptStarted: 2
        case .attemptFinished: 3
        case .attemptAbandoned: 4
        case .withdrawn: 5
        case .requeued: 6
        case .discarded: 7
        case .approvalDecided: 8
        case .superseded: 9
        case .rebased: 10
        case .dependencyEnded: 11
        case .heldOnRollback: 12
        case .rollbackAcknowledged: 13
        case .deletedOnServer: 14
        case .sessionPaused: 64
        case .sessionResumed: 65
        case .journalOpened: 66
        case .compacted: 67
        case .sessionChanged: 68
        case .recordsWritten: 69
        case .recordBaseDropped: 70
        case .pageApplied: 71
        case .pageRefused: 72
        case .resnapshotStarted: 73
        case .snapshotPageStaged: 74
        case .resnapshotFinished: 75
        case .resnapshotAbandoned: 76
        case .summaryChecked: 77
        }
    }

}

/// An event's details, one case per kind.
public enum JournalEventBody: Sendable, Equatable {
    case enqueued(Enqueued)
    case attemptStarted(AttemptStarted)
    case attemptFinished(AttemptFinished)
    case attemptAbandoned(AttemptAbandoned)
    case withdrawn(Withdrawn)
    case requeued(Requeued)
    case discarded(Discarded)
    case approvalDecided(ApprovalDecided)
    case superseded(Superseded)
    case rebased(Rebased)
    case dependencyEnded(DependencyEnded)
    case sessionPaused(SessionPaused)
    case sessionResumed
    case journalOpened(JournalOpened)
    case compacted(Compacted)
    case sessionChanged(SessionChanged)
    case heldOnRollback(HeldOnRollback)
    case rollbackAcknowledged(RollbackAcknowledged)
    case recordsWritten(RecordsWritten)
    case recordBaseDropped(RecordBaseDropped)
    case deletedOnServer(DeletedOnServer)
    case pageApplied(PageApplied)
    case pageRefused(PageRefused)
    case resnapshotStarted(ResnapshotStarted)
    case snapshotPageStaged(SnapshotPageStaged)
    case resnapshotFinished(ResnapshotFinished)
    case resnapshotAbandoned(ResnapshotAbandoned)
    case summaryChecked(SummaryChecked)

    public var kind: JournalEventKind {
        switch self {
        case .enqueued: .enqueued
        case .attemptStarted: .attemptStarted
        case .attemptFinished: .attemptFinished
        case .attemptAbandoned: .attemptAbandoned
        case .withdrawn: .withdrawn
        case .requeued: .requeued
        case .discarded: .discarded
        case .approvalDecided: .approvalDecided
        case .superseded: .superseded
        case .rebased: .rebased
        case .dependencyEnded: .dependencyEnded
        case .sessionPaused: .sessionPaused
        case .sessionResumed: .sessionResumed
        case .journalOpened: .journalOpened
        case .compacted: .compacted
        case .sessionChanged: .sessionChanged
        case .heldOnRollback: .heldOnRollback
        case .rollbackAcknowledged: .rollbackAcknowledged
        case .recordsWritten: .recordsWritten
        case .recordBaseDropped: .recordBaseDropped
        case .deletedOnServer: .deletedOnServer
        case .pageApplied: .pageApplied
        case .pageRefused: .pageRefused
        case .resnapshotStarted: .resnapshotStarted
        case .snapshotPageStaged: .snapshotPageStaged
        case .resnapshotFinished: .resnapshotFinished
        case .resnapshotAbandoned: .resnapshotAbandoned
        case .summaryChecked: .summaryChecked
        }
    }
}

// MARK: - Operation events

/// A write became durable on the device. Its operation id is the idempotency key.
public struct Enqueued: Sendable, Equatable {
    /// The request, payload included, exactly as it will be sent. In an encrypted journal read
    /// without its key, the payload, entity label and summary are empty. Its `operationID` is
    /// the event's; it is not stored twice.
    public var request: OutboxRequest
    /// SHA-256 of ``OutboxRequest/payload``: checked before every send.
    public var requestHash: SHA256Digest
    /// The account the write was made under; it is never sent under another.
    public var account: String
    /// The payload and presentation as stored when the journal is encrypted at rest.
    package var sealed: SealedRequest?
    /// The row this operation replaces, when it corrects, resolves or coalesces one: the other
    /// row's `superseded` event lands in the same commit.
    public var supersedes: Supersession?
    /// The member's records the write changes (format 3), in the order given: their overlays
    /// land in the same commit as this event.
    public var changes: [RecordWrite]
    /// For a write whose `If-Match` comes from a record's base (``OutboxRequest/revisionFrom``):
    /// the base's revision when the member made the change (format 4). A pull that brings another
    /// device's revision beneath the write before it is sent leaves it sent against this one, so
    /// the server answers 412 instead of the write overwriting a change the member never saw.
    public var basisRevision: UInt64?

    package init(
        request: OutboxRequest, requestHash: SHA256Digest, account: String, sealed: SealedRequest? = nil,
        supersedes: Supersession? = nil, changes: [RecordWrite] = [], basisRevision: UInt64? = nil
    ) {
        self.request = request
        self.requestHash = requestHash
        self.account = account
        self.sealed = sealed
        self.supersedes = supersedes
        self.changes = changes
        self.basisRevision = basisRevision
    }
}

/// What an operation that replaces another keeps of it.
public struct Supersession: Sendable, Equatable {
    /// The row replaced.
    public var operation: OperationID
    public var reason: SupersedeReason
    /// The replaced row's place in its lane, which the new operation takes: ahead of later
    /// writes to the same entity.
    public var laneSeq: JournalSequence

    public init(operation: OperationID, reason: SupersedeReason, laneSeq: JournalSequence) {
        self.operation = operation
        self.reason = reason
        self.laneSeq = laneSeq
    }
}

/// A reading of the device's monotonic clock: seconds since the device booted, and which boot.
public struct Uptime: Sendable, Equatable, Hashable {
    /// Seconds since boot, by a clock that never goes back within one boot.
    public var seconds: Double
    /// The boot: a new one after every restart of the device.
    public var bootID: UUID

    public init(seconds: Double, bootID: UUID) {
        self.seconds = seconds
        self.bootID = bootID
    }
}

/// A request's private fields, sealed with the journal's key (ChaChaPoly, the operation id as
/// associated data): the payload, and the entity label with the summary.
package struct SealedRequest: Sendable, Equatable {
    /// What sealing adds to each value: a 12-byte nonce and a 16-byte tag.
    package static let overheadBytes = 28

    package var payload: [UInt8]
    package var presentation: [UInt8]

    package init(payload: [UInt8], presentation: [UInt8]) {
        self.payload = payload
        self.presentation = presentation
    }
}

/// An attempt to send began. Durable before the request leaves the device.
public struct AttemptStarted: Sendable, Equatable {
    public var attempt: AttemptNumber
    /// What woke the worker.
    public var trigger: WakeReason
    /// The revision sent in `If-Match` when it was taken from a record's server base as the
    /// attempt started (``OutboxRequest/revisionFrom``; format 3): the proof of what was sent.
    public var sentRevision: String?

    public init(attempt: AttemptNumber, trigger: WakeReason, sentRevision: String? = nil) {
        self.attempt = attempt
        self.trigger = trigger
        self.sentRevision = sentRevision
    }
}

/// An attempt ended with an outcome, and the engine decided what follows.
///
/// Its fields are the attempt's ``Classification`` (what came back and what it means) and the
/// schedule that follows; each is declared once, on the classification, and read through here
/// (`finished.errorCode`).
@dynamicMemberLookup
public struct AttemptFinished: Sendable, Equatable {
    public var attempt: AttemptNumber
    /// What came back and what the engine decided from it.
    public var classification: Classification
    /// When the next attempt is due, for a rescheduled row.
    public var nextAttemptAt: Date?
    /// The server's current record (``Classification/serverCurrent``) as stored when the journal
    /// is encrypted at rest: sealed, the plaintext field then empty.
    public var sealedServerCurrent: [UInt8]?
    /// What the answer confirmed of the records the write changed (format 3): each revision and
    /// value hash, the trail of the records' server base, which holds the values.
    public var confirmations: [RecordConfirmation] = []
    /// Where the server's change feed shows the write (format 4, `Outbox-Visible-At`): the
    /// member's change stays on screen until a pull reaches it. `nil`: the answer named none.
    public var visibleAt: FeedPosition?

    public subscript<Value>(dynamicMember field: WritableKeyPath<Classification, Value>) -> Value {
        get { classification[keyPath: field] }
        set { classification[keyPath: field] = newValue }
    }

    /// The event recording attempt `attempt` as classified, due again at `nextAttemptAt`.
    public init(attempt: AttemptNumber, _ classification: Classification, nextAttemptAt: Date?, sealedServerCurrent: [UInt8]? = nil) {
        self.attempt = attempt
        self.classification = classification
        self.nextAttemptAt = nextAttemptAt
        self.sealedServerCurrent = sealedServerCurrent
    }

    public init(
        attempt: AttemptNumber,
        outcome: AttemptOutcome,
        disposition: Disposition,
        errorCode: String? = nil,
        errorMessage: String? = nil,
        retryAfter: Date? = nil,
        approvalRequestID: String? = nil,
        serverRevision: String? = nil,
        nextAttemptAt: Date? = nil
    ) {
        self.init(
            attempt: attempt,
            Classification(
                outcome: outcome, disposition: disposition, errorCode: errorCode, errorMessage: errorMessage,
                retryAfter: retryAfter, approvalRequestID: approvalRequestID, serverRevision: serverRevision
            ),
            nextAttemptAt: nextAttemptAt
        )
    }
}

/// An attempt that started has no outcome because the process ended; written at the next open.
/// The row is due at once and replayed under the same key.
public struct AttemptAbandoned: Sendable, Equatable {
    public var attempt: AttemptNumber

    public init(attempt: AttemptNumber) {
        self.attempt = attempt
    }
}

/// An inline save the server rejected as invalid: the form shows the error, and the operation
/// never existed for the member.
public struct Withdrawn: Sendable, Equatable {
    public var errorCode: String
    public var errorMessage: String

    public init(errorCode: String, errorMessage: String) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// A failed or blocked row was put back in the queue, due at once.
public struct Requeued: Sendable, Equatable {
    public var requestedBy: Requester

    public init(requestedBy: Requester) {
        self.requestedBy = requestedBy
    }
}

/// A row was dropped. Its payload stays readable in the history.
public struct Discarded: Sendable, Equatable {
    public var requestedBy: Requester
    public var reason: DiscardReason

    public init(requestedBy: Requester, reason: DiscardReason) {
        self.requestedBy = requestedBy
        self.reason = reason
    }
}

/// Someone approved or rejected a write the server held for approval.
public struct ApprovalDecided: Sendable, Equatable {
    public var approved: Bool
    /// The decision's reference, when the app has one.
    public var reference: String?

    public init(approved: Bool, reference: String?) {
        self.approved = approved
        self.reference = reference
    }
}

/// A row was replaced by another operation: a correction, a conflict resolved keeping the
/// member's version, or a newer write coalescing it. Its payload stays in the history; the
/// operation that replaces it names it back (`Enqueued/supersedes`). Both land in one commit.
public struct Superseded: Sendable, Equatable {
    /// The operation that replaces it.
    public var by: OperationID
    public var reason: SupersedeReason

    public init(by: OperationID, reason: SupersedeReason) {
        self.by = by
        self.reason = reason
    }
}

/// A conflicted row is sent again under the same operation and key, against the server's
/// revision: its type's conflict rule rebases it (for whole-record drafts one member owns).
public struct Rebased: Sendable, Equatable {
    /// The revision the next attempt sends in `If-Match`.
    public var baseRevision: String

    public init(baseRevision: String) {
        self.baseRevision = baseRevision
    }
}

/// A write this row depends on ended without being applied (discarded or withdrawn): the row
/// cannot be sent as it is and waits for a person.
public struct DependencyEnded: Sendable, Equatable {
    /// The dependency, as the row names it (the end of its chain of replacements ended).
    public var dependency: OperationID
    /// How that chain ended.
    public var status: OutboxStatus

    public init(dependency: OperationID, status: OutboxStatus) {
        self.dependency = dependency
        self.status = status
    }
}

// MARK: - Engine events

/// The worker found someone else signed in than before, recorded once per change: why passes
/// send nothing (nobody, another account), or that they send again.
public struct SessionChanged: Sendable, Equatable {
    public var observation: SessionObservation

    public init(observation: SessionObservation) {
        self.observation = observation
    }
}

/// The worker paused: the server answered 401. Rows stay queued until the session is refreshed.
public struct SessionPaused: Sendable, Equatable {
    /// The error code that paused it, e.g. `unauthorized`.
    public var reason: String
    /// The operation whose attempt was answered 401.
    public var triggeredBy: OperationID?

    public init(reason: String, triggeredBy: OperationID?) {
        self.reason = reason
        self.triggeredBy = triggeredBy
    }
}

/// The journal was opened by an engine.
public struct JournalOpened: Sendable, Equatable {
    public var formatVersion: Int
    public var engineVersion: String
    /// The embedding app's version, when it gave one.
    public var appVersion: String?
    /// The device's time zone identifier when it opened the journal (`Europe/Berlin`): how the
    /// member's own clock read. `nil` in records written before journal format 2.
    public var timeZone: String?

    public init(formatVersion: Int, engineVersion: String, appVersion: String?, timeZone: String? = nil) {
        self.formatVersion = formatVersion
        self.engineVersion = engineVersion
        self.appVersion = appVersion
        self.timeZone = timeZone
    }
}

/// The detailed events of settled operations were removed; what their ledger rows need stays.
public struct Compacted: Sendable, Equatable {
    /// The lowest and highest seq removed.
    public var firstSeq: JournalSequence
    public var lastSeq: JournalSequence
    /// How many events were removed.
    public var removedCount: Int
    /// SHA-256 over the removed records' bytes, in seq order.
    public var digest: SHA256Digest
    /// Each operation whose events were removed, as its ledger row needs it.
    public var operations: [CompactedOperation]

    public init(
        firstSeq: JournalSequence,
        lastSeq: JournalSequence,
        removedCount: Int,
        digest: SHA256Digest,
        operations: [CompactedOperation]
    ) {
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.removedCount = removedCount
        self.digest = digest
        self.operations = operations
    }
}

/// A settled operation after compaction: no payload and no history; what happened to it, when,
/// and (since journal format 2) who and what it was, so an old write can still be found by
/// what the member called it and an id reused with other bytes is still refused.
public struct CompactedOperation: Sendable, Equatable {
    public var id: OperationID
    public var operationType: String
    /// Terminal: synced, withdrawn, discarded or superseded.
    public var status: OutboxStatus
    /// The seq of its `enqueued` event, removed: its place in the ledger.
    public var firstSeq: JournalSequence
    public var createdAt: Date
    /// When it last changed before compaction.
    public var changedAt: Date
    public var attemptCount: Int
    public var latestOutcome: OutcomeCategory?
    public var lastErrorCode: String?
    public var serverRevision: String?
    /// Who and what: `nil` for an operation compacted before journal format 2, which kept none.
    package var identity: CompactedIdentity?
    /// What its answers confirmed of the member's records (format 3): the trail of the records'
    /// server base, kept when the events that carried it leave the journal.
    public var confirmations: [RecordConfirmation] = []

    package init(
        id: OperationID, operationType: String, status: OutboxStatus, firstSeq: JournalSequence, createdAt: Date,
        changedAt: Date, attemptCount: Int, latestOutcome: OutcomeCategory?, lastErrorCode: String?, serverRevision: String?,
        identity: CompactedIdentity? = nil, confirmations: [RecordConfirmation] = []
    ) {
        self.confirmations = confirmations
        self.id = id
        self.operationType = operationType
        self.status = status
        self.firstSeq = firstSeq
        self.createdAt = createdAt
        self.changedAt = changedAt
        self.attemptCount = attemptCount
        self.latestOutcome = latestOutcome
        self.lastErrorCode = lastErrorCode
        self.serverRevision = serverRevision
        self.identity = identity
    }

    /// What compaction keeps of `state`: everything but the payload and the history.
    public init(_ state: OperationState) {
        self.init(
            id: state.id, operationType: state.operationType, status: state.status, firstSeq: state.firstSeq,
            createdAt: state.createdAt, changedAt: state.changedAt, attemptCount: state.attemptCount,
            latestOutcome: state.latestOutcome, lastErrorCode: state.lastErrorCode, serverRevision: state.serverRevision,
            identity: !state.keptRequest ? nil : CompactedIdentity(
                businessID: state.businessID, category: state.category, entityID: state.entityID,
                entityLabel: state.entityLabel, summary: state.summary, sealedPresentation: state.sealedPresentation,
                requestHash: state.requestHash, supersededBy: state.supersededBy, method: state.method,
                endpoint: state.endpoint, payloadVersion: state.payloadVersion, payloadByteCount: state.payloadByteCount,
                account: state.account
            )
        )
    }
}

/// Who and what a compacted operation was: everything of its request but the payload.
/// Presentation text the member typed is sealed when the journal is encrypted at rest, and kept
/// as long as the journal: `Outbox.wipeJournal(at:)` erases it with everything else.
package struct CompactedIdentity: Sendable, Equatable {
    package var businessID: String
    package var category: String
    package var entityID: String?
    /// Empty when sealed.
    package var entityLabel: String
    package var summary: String
    package var sealedPresentation: [UInt8]?
    /// SHA-256 of the payload it was sent with: an id enqueued again is compared against it.
    package var requestHash: SHA256Digest
    /// The operation that replaced it, for a superseded one.
    package var supersededBy: OperationID?
    package var method: String
    package var endpoint: String
    package var payloadVersion: Int
    /// The size of the payload it was sent with (the payload itself is gone).
    package var payloadByteCount: Int
    /// The account it was written under.
    package var account: String

    package init(
        businessID: String, category: String, entityID: String?, entityLabel: String, summary: String,
        sealedPresentation: [UInt8]?, requestHash: SHA256Digest, supersededBy: OperationID?,
        method: String, endpoint: String, payloadVersion: Int, payloadByteCount: Int, account: String
    ) {
        self.businessID = businessID
        self.category = category
        self.entityID = entityID
        self.entityLabel = entityLabel
        self.summary = summary
        self.sealedPresentation = sealedPresentation
        self.requestHash = requestHash
        self.supersededBy = supersededBy
        self.method = method
        self.endpoint = endpoint
        self.payloadVersion = payloadVersion
        self.payloadByteCount = payloadByteCount
        self.account = account
    }
}
