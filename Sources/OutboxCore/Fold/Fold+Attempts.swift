import Foundation

/// The fold's transitions of one concept. An attempt started, finished or abandoned.
extension Fold {
    static func attemptStarted(_ started: AttemptStarted, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .queued else { throw step.illegal("only a queued row may be attempted") }
        guard started.attempt.rawValue == next.attemptCount + 1 else {
            throw step.illegal("attempt \(started.attempt) started after \(next.attemptCount) attempts")
        }
        next.status = .syncing
        next.attemptCount = started.attempt.rawValue
        next.sentRevision = started.sentRevision
        next.lastAttemptAt = step.event.recordedAt
        if next.firstAttemptAt == nil { next.firstAttemptAt = step.event.recordedAt }
        if next.retryEpochStartedAt == nil {
            next.retryEpochStartedAt = step.event.recordedAt
            next.retryEpochStartedUptime = step.event.uptime
        }
    }

    static func attemptFinished(_ finished: AttemptFinished, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .syncing else { throw step.illegal("no attempt is in flight") }
        guard finished.attempt.rawValue == next.attemptCount else {
            throw step.illegal("attempt \(finished.attempt) finished while attempt \(next.attemptCount) is in flight")
        }
        next.status = finished.disposition.status
        next.lastOutcome = finished.outcome
        next.latestOutcome = OutcomeCategory(finished.disposition)
        next.serverRevision = finished.serverRevision ?? next.serverRevision
        next.nextAttemptAt = finished.disposition == .transientFailure ? finished.nextAttemptAt : nil
        next.serverCurrent = nil
        next.sealedServerCurrent = nil
        if finished.outcome == .noResponse(.cancelled) {
            // Cut off by the app's end of background time: it says nothing of the network,
            // and never counts toward the retry policy's attempts.
            next.cancelledAttempts += 1
            next.retryEpochAttempts += 1
        }
        if finished.disposition.acknowledges, next.acknowledgedConnectedAge == nil {
            next.acknowledgedConnectedAge = finished.connectedAgeSeconds
        }
        switch finished.disposition {
        case .accepted, .replayed:
            next.lastErrorCode = nil
            next.lastErrorMessage = nil
            // Read your writes: a record the answer described at a revision has its base at
            // that revision (or a newer one) from this commit on, and a base never moves back,
            // so the member's value retires here. One it did not describe keeps the member's
            // value until the server's arrives (a later answer, or the feed).
            next.awaitingServerValue = RecordRule.awaitingServerValue(records: next.records, described: Set(finished.confirmations.map(\.key)))
            next.visibleAt = finished.visibleAt
        case .pendingApproval:
            next.lastErrorCode = nil
            next.lastErrorMessage = nil
            next.approvalRequestID = finished.approvalRequestID
        case .transientFailure, .unauthorized, .rejected, .blocked, .gaveUp:
            next.lastErrorCode = finished.errorCode
            next.lastErrorMessage = finished.errorMessage
            if finished.disposition == .gaveUp { next.decide(.gaveUp, at: step.event.recordedAt) }
        case .conflicted:
            next.lastErrorCode = finished.errorCode
            next.lastErrorMessage = finished.errorMessage
            // Sealed text stays sealed in the state, whether or not the event was read with the key.
            next.serverCurrent = finished.sealedServerCurrent == nil ? finished.serverCurrent : nil
            next.sealedServerCurrent = finished.sealedServerCurrent
        }
    }

    static func attemptAbandoned(_ abandoned: AttemptAbandoned, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .syncing else { throw step.illegal("no attempt is in flight") }
        guard abandoned.attempt.rawValue == next.attemptCount else {
            throw step.illegal("attempt \(abandoned.attempt) abandoned while attempt \(next.attemptCount) is in flight")
        }
        next.status = .queued
        next.nextAttemptAt = nil
        next.latestOutcome = .abandoned
        next.abandonedAttempts += 1
    }
}
