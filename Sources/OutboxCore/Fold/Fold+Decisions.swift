import Foundation

/// The fold's transitions of one concept. A person's or a rule's decisions on a row: withdrawn,
/// retried, discarded, approved or rejected, replaced, rebased, its rollback acknowledged.
extension Fold {
    static func withdrawn(_ withdrawn: Withdrawn, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .failed else { throw step.illegal("only a rejected inline save may be withdrawn") }
        next.status = .withdrawn
        next.lastErrorCode = withdrawn.errorCode
        next.lastErrorMessage = withdrawn.errorMessage
    }

    static func requeued(_ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .failed || next.status == .blocked else {
            throw step.illegal("only a failed or blocked row may be retried")
        }
        next.status = .queued
        next.nextAttemptAt = nil
        // A person's retry starts the retry policy's limits over.
        next.retryEpochAttempts = next.attemptCount
        next.retryEpochStartedAt = nil
        next.retryEpochStartedUptime = nil
        next.endedDependency = nil
        // A person who checked a write the server may have forgotten sends it again: its key's
        // age starts over. Any other retry keeps it: the server's claim is as old as ever.
        if next.lastErrorCode == ErrorCode.claimMayBeForgotten { next.firstAttemptAt = nil }
        // What the engine decided for the member is theirs again.
        next.decision = nil
        next.decidedAt = nil
        // Retried, a refused attachment is uploaded again.
        for index in next.attachments.indices { next.attachments[index].refusedCode = nil }
        // Retried, its change shows again.
        next.rolledBackSeq = nil
        next.rollbackAcknowledged = false
    }

    static func discarded(_ discarded: Discarded, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard [.queued, .failed, .blocked, .conflicted].contains(next.status) else {
            throw step.illegal("only a queued, failed, blocked or conflicted row may be discarded")
        }
        guard discarded.reason != .serverWon || next.status == .conflicted else {
            throw step.illegal("only a conflicted row may be discarded for the server's version")
        }
        next.status = .discarded
        next.nextAttemptAt = nil
        if discarded.reason == .serverWon, discarded.requestedBy == .rule { next.decide(.serverKept, at: step.event.recordedAt) }
        // The member chose the server's version: the conflict ends as the server has it, with
        // no rollback to tell them of (the history keeps the choice). Later writes made on
        // the discarded value are still held, as after any rollback.
        if discarded.reason == .serverWon, discarded.requestedBy == .member { next.rollbackAcknowledged = true }
    }

    static func approvalDecided(_ decision: ApprovalDecided, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .pendingApproval else { throw step.illegal("the row is not waiting for approval") }
        if decision.approved {
            next.status = .synced
            next.latestOutcome = .accepted
            // A decision names no revision: each record waits for the server's value.
            next.awaitingServerValue = next.records
        } else {
            next.status = .failed
            next.latestOutcome = .rejected
            next.lastErrorCode = ErrorCode.approvalRejected
            next.lastErrorMessage = "The approver rejected this change."
        }
    }

    static func superseded(_ superseded: Superseded, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        switch superseded.reason {
        case .revised, .resolvedMine:
            guard [.failed, .blocked, .conflicted].contains(next.status) else {
                throw step.illegal("only a failed, blocked or conflicted row may be corrected")
            }
            guard superseded.reason != .resolvedMine || next.status == .conflicted else {
                throw step.illegal("only a conflicted row may be resolved")
            }
        case .coalesced:
            guard next.status == .queued, next.neverSent else {
                throw step.illegal("only a row never attempted (here or in the journal it was imported from) may be coalesced")
            }
        }
        guard superseded.by != step.id else { throw step.illegal("an operation cannot replace itself") }
        next.status = .superseded
        next.supersededBy = superseded.by
        next.supersededReason = superseded.reason
        next.nextAttemptAt = nil
        if superseded.reason == .coalesced { next.decide(.coalesced, at: step.event.recordedAt) }
    }

    static func rebased(_ rebased: Rebased, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .conflicted else { throw step.illegal("only a conflicted row may be rebased") }
        next.status = .queued
        next.baseRevision = rebased.baseRevision
        next.rebaseCount += 1
        next.decide(.resentOverServer, at: step.event.recordedAt)
        next.nextAttemptAt = nil
        next.serverCurrent = nil
        next.sealedServerCurrent = nil
    }

    static func rollbackAcknowledged(_ acknowledged: RollbackAcknowledged, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard RecordRule.isRolledBackStatus(next.status), next.rolledBackSeq != nil else {
            throw step.illegal("only a rolled-back write's rollback may be acknowledged")
        }
        guard next.records.contains(acknowledged.key) else { throw step.illegal("the write did not change \(acknowledged.key)") }
        next.rollbackAcknowledged = true
    }
}
