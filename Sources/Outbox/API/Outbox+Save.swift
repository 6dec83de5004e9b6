import Foundation
import OutboxCore

extension Outbox {
    /// Queues a write (durable first), then sends it at once.
    ///
    /// ```swift
    /// switch try await outbox.save(request) {
    /// case .synced: show("Saved")
    /// case .pendingApproval: show("Sent for approval")
    /// case .queued: show("Saved, waiting for internet")
    /// case .rejected(_, let message): form.showError(message)
    /// case .blocked(_, _, let message): show(message)
    /// }
    /// ```
    ///
    /// Offline, a 5xx or any retryable answer leaves the row queued and wakes the worker; a 401
    /// leaves it queued and pauses the worker until ``resumeSession()``; a validation error
    /// withdraws it, so the queue only ever holds writes the network (or a session to refresh)
    /// is blocking. A write behind an earlier one to the same entity, or after a write it depends
    /// on that is not synced yet, waits its turn in the queue.
    /// - Throws: as ``enqueue(_:)``: nothing was saved.
    public func save(_ request: OutboxRequest) async throws -> Outbox.SaveResult {
        try await save(request, changing: [])
    }

    /// Queues a write with the member's record changes (one commit, as
    /// ``enqueue(_:changing:)``), then sends it at once. A refused write rolls its changes back:
    /// the record's view is the base again, and it says why.
    public func save(_ request: OutboxRequest, changing changes: [RecordChange]) async throws -> Outbox.SaveResult {
        let id: OperationID
        switch try await appendIntent(request, changing: changes) {
        case .new(let new): id = new
        case .existing(let snapshot): return .alreadySaved(snapshot)
        }
        let sendsNow: Bool
        do {
            // The eligibility rule's row part (the attempt asks the session itself): first in
            // its lane, and each write it depends on (or what replaced it) synced; a dependency
            // that ended is the worker's to record.
            let schema = store.schema
            let now = configuration.clock.now()
            sendsNow = try store.read { txn in
                guard let state = try schema.state(id, in: txn) else { return false }
                return Eligibility.rowVerdict(try schema.eligibilityFacts(of: state, now: now, in: txn)) == .ready
            }
        } catch {
            // Not known to be free to go: it is not sent out of turn; the worker sends it.
            log.problem(.journalRead, "could not read the saved row's lane or dependencies; it waits in the queue for the worker", error: error, operation: id)
            sendsNow = false
        }
        guard sendsNow else {
            await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
            return .queued(id)
        }
        switch await attempts.send(id, trigger: .inlineSave, withdrawOnRejection: true) {
        case .finished(let classification, let response, _):
            switch classification.disposition {
            case .accepted, .replayed:
                return .synced(response ?? TransportResponse(statusCode: 200))
            case .pendingApproval:
                return .pendingApproval(approvalRequestID: classification.approvalRequestID ?? "")
            case .transientFailure:
                await worker.wake(.saveRetryable)
                return .queued(id)
            case .unauthorized:
                return .queued(id)
            case .rejected:
                return .rejected(
                    code: classification.errorCode ?? ErrorCode.validationFailed,
                    message: memberWords(classification) ?? "The server refused this change."
                )
            case .blocked:
                return .blocked(id, code: classification.errorCode ?? ErrorCode.forbidden,
                                message: memberWords(classification) ?? "This change was refused.")
            case .conflicted:
                return .conflicted(id, serverRevision: classification.serverRevision)
            case .gaveUp:
                return .failed(id, code: classification.errorCode ?? ErrorCode.gaveUp,
                               message: memberWords(classification) ?? "This change could not be sent.")
            }
        case .skipped, .halted, .unrecorded:
            await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
            return .queued(id)
        }
    }
}

/// What the member reads of a save's outcome: the words table's, never a retried failure's body
/// (a gave-up save's recorded message names the server's words for support).
private func memberWords(_ classification: Classification) -> String? {
    OutboxWords.english.failure(code: classification.errorCode, serverMessage: classification.errorMessage)
}

extension Outbox {
    /// What an inline save came to, in the words a form shows.
    public enum SaveResult: Sendable, Equatable {
        /// The server applied it: "Saved".
        case synced(TransportResponse)
        /// The server holds it for someone's approval: "Sent for approval".
        case pendingApproval(approvalRequestID: String)
        /// Durable on the device, waiting for the network or the server: "Saved, waiting for
        /// internet". The worker will send it.
        case queued(OperationID)
        /// The server rejected it as invalid: the form shows `message`. The row was withdrawn and
        /// never existed for the member.
        case rejected(code: String, message: String)
        /// The server refused the member or the key (403, a key conflict): the row is blocked until a
        /// person decides, and the Sync tab shows why.
        case blocked(OperationID, code: String, message: String)
        /// The record changed elsewhere since the edit began (412, `revision_conflict`): the row is
        /// `conflicted` and the member decides (``Outbox/resolveConflict(_:keeping:)``), unless the
        /// type's conflict rule already did.
        case conflicted(OperationID, serverRevision: String?)
        /// The retry policy gave up on it (a limit of one attempt): the row is `failed`, code
        /// `gave_up`; ``Outbox/retry(_:)`` starts over.
        case failed(OperationID, code: String, message: String)
        /// The request's ``OutboxRequest/operationID`` was saved before (a double tap, a retry after a
        /// crash): nothing new was written or sent; this is where that operation stands.
        case alreadySaved(OperationSnapshot)
    }
}
