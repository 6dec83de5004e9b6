public import Foundation
public import OutboxCore
public import OutboxCrypto

/// One operation as it stands: its folded state and its request, payload included.
public struct OperationSnapshot: Sendable, Equatable {
    /// Everything folded from the operation's events.
    package var state: OperationState
    /// The request exactly as it is sent.
    public var request: OutboxRequest

    public var id: OperationID { state.id }
    public var status: OutboxStatus { state.status }
    public var attemptCount: Int { state.attemptCount }
    /// When a queued row is next due; `nil` means due now (or, for other statuses, never).
    public var nextAttemptAt: Date? { state.nextAttemptAt }
    public var lastAttemptAt: Date? { state.lastAttemptAt }
    public var lastErrorCode: String? { state.lastErrorCode }
    /// Why it failed or waits, in the member's words (``OutboxWords/english``; an app with words
    /// of its own asks them with ``lastErrorCode``, ``latestOutcome`` and ``lastServerMessage``).
    /// A failure the engine retries never shows the server's body here.
    public var lastErrorMessage: String? {
        OutboxWords.english.failure(code: state.lastErrorCode, serverMessage: state.lastErrorMessage)
    }
    /// The message recorded with the last failure, as the server's answer carried it (or the
    /// engine's own words for an outcome it decided itself): what support reads.
    public var lastServerMessage: String? { state.lastErrorMessage }
    public var approvalRequestID: String? { state.approvalRequestID }
    public var requestHash: SHA256Digest { state.requestHash }
    public var firstSeq: JournalSequence { state.firstSeq }
    public var latestSeq: JournalSequence { state.latestSeq }
    public var createdAt: Date { state.createdAt }
    package var latestOutcome: OutcomeCategory? { state.latestOutcome }
    public var serverRevision: String? { state.serverRevision }
    /// When a compaction removed its events (its request is then empty); `nil` otherwise.
    public var compactedAt: Date? { state.compactedAt }
    /// What a queued row waits for, read with the snapshot; `nil` when it is due and nothing holds
    /// it, and for every other status (the status says it).
    public var waitingOn: OperationSnapshot.WaitingOn?
    /// The row this one replaces (a correction, a resolution, a coalesced write).
    public var supersedes: OperationID? { state.supersedes?.operation }
    /// The operation that replaced this one, once `superseded`.
    public var supersededBy: OperationID? { state.supersededBy }
    /// For a `conflicted` row: the server's revision and its current record when it answered.
    public var conflict: OperationSnapshot.Conflict?

    package init(state: OperationState, request: OutboxRequest, waitingOn: OperationSnapshot.WaitingOn? = nil, conflict: OperationSnapshot.Conflict? = nil) {
        self.state = state
        self.request = request
        self.waitingOn = waitingOn
        self.conflict = conflict ?? (state.status == .conflicted
            ? OperationSnapshot.Conflict(serverRevision: state.serverRevision, serverCurrent: state.serverCurrent) : nil)
    }
}

extension OperationSnapshot {
    /// What a queued row waits for.
    public enum WaitingOn: Sendable, Equatable {
        /// An earlier write to the same entity (its lane's head), with that write's status.
        case laneHead(OperationID, OutboxStatus?)
        /// A write it depends on (or what replaced it), not synced yet, with that write's status.
        case dependency(OperationID, OutboxStatus?)
        /// The journal was opened on another installation than the one its writes were made on (a
        /// backup restored onto another device): nothing is sent until the app revalidates them
        /// (``Outbox/adoptInstallation()``).
        case otherInstallation(madeOn: String)
        /// A 401 paused the worker; nothing is sent until the session is refreshed.
        case sessionPaused(since: Date?)
        /// Nobody is signed in.
        case noSession
        /// Another account is signed in: nothing is sent under it.
        case otherAccount
        /// Its next attempt is due at this moment (a retry's backoff).
        case scheduled(Date)
        /// An earlier write of a record it changes, not settled yet, with that write's status: a
        /// record's writes reach the server in the order the member made them.
        case recordWrite(OperationID, OutboxStatus?)
        /// A file it carries is not uploaded and completed yet: the first such, with the bytes the
        /// store holds of it and its size.
        case attachment(AttachmentID, landed: Int64, of: Int64)
    }
}

extension OperationSnapshot {
    /// The server's side of a revision conflict.
    public struct Conflict: Sendable, Equatable {
        /// The record's revision on the server (body `server_revision`, else the `ETag`).
        public var serverRevision: String?
        /// The server's current record (body `current`) as JSON text's bytes, when it sent one and
        /// it can be read (sealed without the key, it cannot).
        public var serverCurrent: Data?
    }
}
