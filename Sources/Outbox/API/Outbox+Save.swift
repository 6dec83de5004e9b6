import Foundation
import OutboxCore

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
}

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
    /// is blocking. A write behind an earlier one to the same entity waits its turn in the queue.
    /// - Throws: as ``enqueue(_:)``: nothing was saved.
    public func save(_ request: OutboxRequest) async throws -> SaveResult {
        let id = try await appendEnqueued(request)
        let lane = OperationState.lane(businessID: request.businessID, entityID: request.entityID, operation: id)
        let isLaneHead: Bool
        do {
            isLaneHead = try replayPass.laneHead(lane) == id
        } catch {
            // Not known to be first in its lane: it is not sent out of turn; the worker sends it.
            log.problem(.journalRead, "could not read the saved row's lane; it waits in the queue for the worker", error: error, operation: id)
            isLaneHead = false
        }
        guard isLaneHead else {
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
                    message: classification.errorMessage ?? "The server refused this change."
                )
            case .blocked:
                return .blocked(id, code: classification.errorCode ?? ErrorCode.forbidden,
                                message: classification.errorMessage ?? "This change was refused.")
            }
        case .skipped, .halted, .unrecorded:
            await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
            return .queued(id)
        }
    }
}
