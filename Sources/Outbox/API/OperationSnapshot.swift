public import Foundation
public import OutboxCore
public import OutboxCrypto

/// One operation as it stands: its folded state and its request, payload included.
public struct OperationSnapshot: Sendable, Equatable {
    /// Everything folded from the operation's events.
    public var state: OperationState
    /// The request exactly as it is sent.
    public var request: OutboxRequest

    public var id: OperationID { state.id }
    public var status: OutboxStatus { state.status }
    public var attemptCount: Int { state.attemptCount }
    /// When a queued row is next due; `nil` means due now (or, for other statuses, never).
    public var nextAttemptAt: Date? { state.nextAttemptAt }
    public var lastAttemptAt: Date? { state.lastAttemptAt }
    public var lastErrorCode: String? { state.lastErrorCode }
    public var lastErrorMessage: String? { state.lastErrorMessage }
    public var approvalRequestID: String? { state.approvalRequestID }
    public var requestHash: SHA256Digest { state.requestHash }
    public var firstSeq: JournalSequence { state.firstSeq }
    public var latestSeq: JournalSequence { state.latestSeq }
    public var createdAt: Date { state.createdAt }
    public var latestOutcome: OutcomeCategory? { state.latestOutcome }
    public var serverRevision: String? { state.serverRevision }
    /// When a compaction removed its events (its request is then empty); `nil` otherwise.
    public var compactedAt: Date? { state.compactedAt }
}
