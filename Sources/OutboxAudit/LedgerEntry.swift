public import Outbox
public import Foundation
public import OutboxCore

/// One row of the reconciliation ledger: what support reads first.
///
/// It names what happened to an operation and never what it held: no payload, no field value, no
/// label or summary, so it can travel beside the server's records.
///
/// The journal's own row for an operation keeps more, even after a compaction removed its events
/// and payload (``OperationState/Form/compacted(at:)``): its label, summary, category, entity,
/// type and request hash, so that an old write can still be found by what the member called it.
/// The label and summary are presentation text the member typed: sealed when the journal is
/// encrypted at rest, and kept for the journal's life, like the payloads of rows a sign-out
/// discards; `Outbox.wipeJournal(at:)` (what a shared device calls after such a sign-out) erases
/// them with everything else. Rows compacted before journal format 2 kept this ledger row only.
public struct LedgerEntry: Sendable, Equatable, Codable {
    public var operationID: OperationID
    public var operationType: String
    /// The entity type, from the operation type: `"product"` for `"product.create"`.
    public var entityType: String
    /// The local seq of its `enqueued` event.
    public var seq: JournalSequence
    public var createdAt: Date
    public var attempts: Int
    /// The latest outcome: `accepted`, `replayed`, `pending_approval`, `transient_failure`,
    /// `rejected`, `blocked`, `unauthorized`, `abandoned`; `none` before any attempt.
    public var latestOutcome: String
    /// The record's revision, when the server returned one.
    public var serverRevision: String?
    public var status: OutboxStatus
    /// Whether the status is terminal (synced, withdrawn, discarded, superseded).
    public var isTerminal: Bool
    /// The chains between operations: the row it replaces, the one that replaced it, the
    /// operations it waits for (ids only, like the rest of the row).
    public var supersedes: OperationID?
    public var supersededBy: OperationID?
    public var dependsOn: [OperationID]?
    /// A decision the engine made for the member about it: the server's version kept, sent again
    /// over a change made elsewhere, given up, or replaced by the member's newer change
    /// (coalesced); `nil` when people decided everything.
    public var decision: AutomaticDecision?

    package init(_ state: OperationState) {
        operationID = state.id
        operationType = state.operationType
        entityType = String(state.operationType.split(separator: ".", maxSplits: 1).first ?? Substring(state.operationType))
        seq = state.firstSeq
        createdAt = state.createdAt
        attempts = state.attemptCount
        latestOutcome = state.latestOutcome?.rawValue ?? "none"
        serverRevision = state.serverRevision
        status = state.status
        isTerminal = state.status.isTerminal
        supersedes = state.supersedes?.operation
        supersededBy = state.supersededBy
        dependsOn = state.dependsOn.isEmpty ? nil : state.dependsOn
        decision = state.decision
    }
}

/// Which ledger rows to read, in journal order, a page at a time.
///
/// ```swift
/// var query = LedgerQuery(status: .blocked, limit: 100)
/// repeat {
///     let page = try outbox.ledger(query)
///     export(page.entries)
///     query.after = page.nextAfter
/// } while query.after != nil
/// ```
public struct LedgerQuery: Sendable, Equatable {
    /// Only rows of this status.
    public var status: OutboxStatus?
    /// Only rows created at or after this moment.
    public var createdFrom: Date?
    /// Only rows created before this moment.
    public var createdBefore: Date?
    /// Only rows whose enqueue comes after this seq: the previous page's ``LedgerPage/nextAfter``.
    public var after: JournalSequence?
    /// The most rows a page holds (1 or more).
    public var limit: Int

    public init(status: OutboxStatus? = nil, createdFrom: Date? = nil, createdBefore: Date? = nil,
                after: JournalSequence? = nil, limit: Int = 500) {
        self.status = status
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
        self.after = after
        self.limit = limit
    }
}

/// One page of a ``LedgerQuery``.
public struct LedgerPage: Sendable, Equatable {
    /// The rows, in journal order.
    public var entries: [LedgerEntry]
    /// The `seq` to ask `after:` for the next page; `nil` when this page is the last.
    public var nextAfter: JournalSequence?

    public init(entries: [LedgerEntry], nextAfter: JournalSequence?) {
        self.entries = entries
        self.nextAfter = nextAfter
    }
}
