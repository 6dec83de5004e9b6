// The bodies of the engine's own events: sessions, openings and compactions.

package import Foundation
package import OutboxCrypto
import OutboxWire

/// The worker found someone else signed in than before, recorded once per change: why passes
/// send nothing (nobody, another account), or that they send again.
package struct SessionChanged: Sendable, Equatable {
    package var observation: SessionObservation

    package init(observation: SessionObservation) {
        self.observation = observation
    }
}

/// Whether a route to the server was seen changed (format 5): any HTTP response is a route; a
/// request that got none, the journal closing, or the app's background time ending is none.
/// Recorded only on a change, never flushed on its own, so a day of a thousand requests costs a
/// few records; the connected clock (``EngineState/connectedClock(at:)``) is folded from them.
package struct RouteChanged: Sendable, Equatable {
    /// Whether a route is seen from `at` on.
    package var seen: Bool
    /// When the change was observed (at an open, the moment the last process stopped watching:
    /// its last event).
    package var at: Date

    package init(seen: Bool, at: Date) {
        self.seen = seen
        self.at = at
    }
}

/// The worker paused: the server answered 401. Rows stay queued until the session is refreshed.
package struct SessionPaused: Sendable, Equatable {
    /// The error code that paused it, e.g. `unauthorized`.
    package var reason: String
    /// The operation whose attempt was answered 401.
    package var triggeredBy: OperationID?

    package init(reason: String, triggeredBy: OperationID?) {
        self.reason = reason
        self.triggeredBy = triggeredBy
    }
}

/// The journal was opened by an engine.
package struct JournalOpened: Sendable, Equatable {
    package var formatVersion: Int
    package var engineVersion: String
    /// The embedding app's version, when it gave one.
    package var appVersion: String?
    /// The device's time zone identifier when it opened the journal (`Europe/Berlin`): how the
    /// member's own clock read. `nil` in records written before journal format 2.
    package var timeZone: String?
    /// The installation the app said it runs on (``OutboxConfiguration/installation``), an
    /// identifier it keeps outside backups: a journal restored onto another installation is told
    /// apart by it. `nil` when the app gave none, and before journal format 6.
    package var installation: String?

    package init(formatVersion: Int, engineVersion: String, appVersion: String?, timeZone: String? = nil, installation: String? = nil) {
        self.formatVersion = formatVersion
        self.engineVersion = engineVersion
        self.appVersion = appVersion
        self.timeZone = timeZone
        self.installation = installation
    }
}

/// The app revalidated the writes of a journal opened on another installation than the one they
/// were made on (``Outbox/adoptInstallation()``): they belong to this one from now on, and are
/// sent.
package struct InstallationAdopted: Sendable, Equatable {
    /// The installation they were made on (or last adopted by).
    package var previous: String
    /// The installation that adopts them.
    package var installation: String

    package init(previous: String, installation: String) {
        self.previous = previous
        self.installation = installation
    }
}

/// The detailed events of settled operations were removed; what their ledger rows need stays.
package struct Compacted: Sendable, Equatable {
    /// The lowest and highest seq removed.
    package var firstSeq: JournalSequence
    package var lastSeq: JournalSequence
    /// How many events were removed.
    package var removedCount: Int
    /// SHA-256 over the removed records' bytes, in seq order.
    package var digest: SHA256Digest
    /// Each operation whose events were removed, as its ledger row needs it.
    package var operations: [CompactedOperation]

    package init(
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
package struct CompactedOperation: Sendable, Equatable {
    package var id: OperationID
    package var operationType: String
    /// Terminal: synced, withdrawn, discarded or superseded.
    package var status: OutboxStatus
    /// The seq of its `enqueued` event, removed: its place in the ledger.
    package var firstSeq: JournalSequence
    package var createdAt: Date
    /// When it last changed before compaction.
    package var changedAt: Date
    package var attemptCount: Int
    package var latestOutcome: OutcomeCategory?
    package var lastErrorCode: String?
    package var serverRevision: String?
    /// Who and what: `nil` for an operation compacted before journal format 2, which kept none.
    package var identity: CompactedIdentity?
    /// What its answers confirmed of the member's records (format 3): the trail of the records'
    /// server base, kept when the events that carried it leave the journal.
    package var confirmations: [RecordConfirmation] = []
    /// A decision the engine made for the member about it (format 6), kept for the ledger.
    package var decision: AutomaticDecision?

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
    package init(_ state: OperationState) {
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
        decision = state.decision
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
