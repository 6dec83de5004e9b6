package import Foundation

/// The pure fold: (operation state, event) -> the next state.
///
/// Implements every transition of the status table and refuses every other:
///
/// | from | event | to |
/// |---|---|---|
/// | (none) | `enqueued` | queued |
/// | queued | `attemptStarted` (attempt n+1) | syncing |
/// | syncing | `attemptFinished` (attempt n) | by its disposition (conflicted for a revision conflict, failed when the retry policy gave up) |
/// | syncing | `attemptAbandoned` (attempt n) | queued, due now |
/// | failed | `withdrawn` | withdrawn |
/// | failed, blocked | `requeued` | queued, due now |
/// | queued, failed, blocked, conflicted | `discarded` | discarded |
/// | pending_approval | `approvalDecided` | synced (approved) or failed (rejected) |
/// | failed, blocked, conflicted | `superseded` (revised, resolved keeping the member's version) | superseded |
/// | queued, never attempted | `superseded` (coalesced) | superseded |
/// | conflicted | `rebased` | queued, due now, against the server's revision |
/// | queued | `dependencyEnded` | blocked |
/// | queued | `heldOnRollback` (built on a rolled-back write of the same record) | conflicted |
/// | queued | `deletedOnServer` (a pulled tombstone of a record it changes) | conflicted, its change kept |
/// | failed, blocked, discarded, withdrawn | `rollbackAcknowledged` | unchanged: the record stops saying it was rolled back |
///
/// A row with records is rolled back when it enters failed, blocked, discarded or withdrawn
/// (``OperationState/rolledBackSeq``), and no longer once retried; a synced one keeps, as
/// awaiting the server's value, each record its answer did not describe.
///
/// The engine checks each event with the fold before writing it, so it never writes an illegal
/// one; `verify` folds a journal from scratch and reports any it finds.
package enum Fold {
    /// Applies one operation event.
    ///
    /// - Parameters:
    ///   - event: an event of an operation (engine events are refused).
    ///   - state: the operation's state before it; `nil` when the operation has no events yet.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` naming the
    ///   operation, its status and the event.
    package static func apply(_ event: JournalEvent, to state: OperationState?) throws(OutboxError) -> OperationState {
        var next = state
        try apply(event, to: &next)
        // `apply` either throws or leaves a state, moved out rather than copied.
        return next.take()!
    }

    /// Applies one operation event in place: what folding a whole journal uses, so a state is
    /// not copied at every event.
    ///
    /// Every check comes before the first change: when it throws, `state` is as it was.
    /// - Throws: as the other `apply`.
    package static func apply(_ event: JournalEvent, to state: inout OperationState?) throws(OutboxError) {
        guard let id = event.operationID else {
            preconditionFailure("engine event \(event.kind) at seq \(event.seq) folded as an operation event")
        }
        guard state != nil else {
            guard case .enqueued(let enqueued) = event.body else {
                throw .illegalTransition(operation: id, status: nil, event: event.kind, reason: "the operation was never enqueued")
            }
            var created = OperationState(id: id, seq: event.seq, recordedAt: event.recordedAt, enqueued: enqueued)
            created.changedUptime = event.uptime
            state = created
            return
        }
        try apply(event, toExisting: &state!)
    }

    /// Applies one operation event to a state that exists, in place: what folding a whole
    /// journal uses when its states sit in an array rather than a dictionary of optionals.
    ///
    /// Every check comes before the first change: when it throws, `state` is as it was.
    /// - Throws: as the other `apply` (an `enqueued` event is refused: the operation was).
    package static func apply(_ event: JournalEvent, toExisting state: inout OperationState) throws(OutboxError) {
        guard let id = event.operationID else {
            preconditionFailure("engine event \(event.kind) at seq \(event.seq) folded as an operation event")
        }
        if case .enqueued = event.body {
            throw .illegalTransition(operation: id, status: state.status, event: event.kind, reason: "the operation was already enqueued")
        }
        try advance(&state, by: event, id: id)
    }

    /// The transitions after `enqueued`.
    private static func advance(_ next: inout OperationState, by event: JournalEvent, id: OperationID) throws(OutboxError) {
        let status = next.status
        func illegal(_ reason: String) -> OutboxError {
            .illegalTransition(operation: id, status: status, event: event.kind, reason: reason)
        }
        guard id == next.id else { throw illegal("the event belongs to another operation") }
        guard event.seq > next.latestSeq else { throw illegal("seq \(event.seq) is not after \(next.latestSeq)") }
        if next.status.isTerminal, event.kind != .rollbackAcknowledged { throw illegal("nothing may follow a terminal status") }
        let before = next.status

        switch event.body {
        case .enqueued, .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped,
            .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked,
            .routeChanged, .installationAdopted:
            preconditionFailure("handled above or not an operation event")


        case .heldOnRollback(let held):
            guard next.status == .queued else { throw illegal("only a queued row is held behind a rolled-back write") }
            guard !next.records.isEmpty else { throw illegal("only a write of records is built on another") }
            guard held.builtOn != id else { throw illegal("a write cannot be built on itself") }
            next.status = .conflicted
            next.heldOn = held.builtOn
            next.nextAttemptAt = nil
            next.lastErrorCode = ErrorCode.builtOnRolledBack
            next.lastErrorMessage = "This change was made on top of an earlier one that did not go through. Check it, then keep it, change it or discard it."

        case .deletedOnServer(let deleted):
            guard next.status == .queued else { throw illegal("only a queued row learns that its record was deleted on the server") }
            guard next.records.contains(deleted.key) else { throw illegal("the write did not change \(deleted.key)") }
            next.status = .conflicted
            next.nextAttemptAt = nil
            next.serverRevision = String(deleted.revision)
            next.serverCurrent = nil
            next.lastErrorCode = ErrorCode.deletedOnServer
            next.lastErrorMessage = "This record was deleted on the server while your change waited. Keep your version to create it again, or discard your change."

        case .rollbackAcknowledged(let acknowledged):
            guard RecordRule.isRolledBackStatus(next.status), next.rolledBackSeq != nil else {
                throw illegal("only a rolled-back write's rollback may be acknowledged")
            }
            guard next.records.contains(acknowledged.key) else { throw illegal("the write did not change \(acknowledged.key)") }
            next.rollbackAcknowledged = true

        case .attemptStarted(let started):
            guard next.status == .queued else { throw illegal("only a queued row may be attempted") }
            guard started.attempt.rawValue == next.attemptCount + 1 else {
                throw illegal("attempt \(started.attempt) started after \(next.attemptCount) attempts")
            }
            next.status = .syncing
            next.attemptCount = started.attempt.rawValue
            next.sentRevision = started.sentRevision
            next.lastAttemptAt = event.recordedAt
            if next.firstAttemptAt == nil { next.firstAttemptAt = event.recordedAt }
            if next.retryEpochStartedAt == nil {
                next.retryEpochStartedAt = event.recordedAt
                next.retryEpochStartedUptime = event.uptime
            }

        case .attemptFinished(let finished):
            guard next.status == .syncing else { throw illegal("no attempt is in flight") }
            guard finished.attempt.rawValue == next.attemptCount else {
                throw illegal("attempt \(finished.attempt) finished while attempt \(next.attemptCount) is in flight")
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
                if finished.disposition == .gaveUp { next.decide(.gaveUp, at: event.recordedAt) }
            case .conflicted:
                next.lastErrorCode = finished.errorCode
                next.lastErrorMessage = finished.errorMessage
                // Sealed text stays sealed in the state, whether or not the event was read with the key.
                next.serverCurrent = finished.sealedServerCurrent == nil ? finished.serverCurrent : nil
                next.sealedServerCurrent = finished.sealedServerCurrent
            }

        case .attemptAbandoned(let abandoned):
            guard next.status == .syncing else { throw illegal("no attempt is in flight") }
            guard abandoned.attempt.rawValue == next.attemptCount else {
                throw illegal("attempt \(abandoned.attempt) abandoned while attempt \(next.attemptCount) is in flight")
            }
            next.status = .queued
            next.nextAttemptAt = nil
            next.latestOutcome = .abandoned
            next.abandonedAttempts += 1

        case .withdrawn(let withdrawn):
            guard next.status == .failed else { throw illegal("only a rejected inline save may be withdrawn") }
            next.status = .withdrawn
            next.lastErrorCode = withdrawn.errorCode
            next.lastErrorMessage = withdrawn.errorMessage

        case .requeued:
            guard next.status == .failed || next.status == .blocked else {
                throw illegal("only a failed or blocked row may be retried")
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

        case .discarded(let discarded):
            guard [.queued, .failed, .blocked, .conflicted].contains(next.status) else {
                throw illegal("only a queued, failed, blocked or conflicted row may be discarded")
            }
            guard discarded.reason != .serverWon || next.status == .conflicted else {
                throw illegal("only a conflicted row may be discarded for the server's version")
            }
            next.status = .discarded
            next.nextAttemptAt = nil
            if discarded.reason == .serverWon, discarded.requestedBy == .rule { next.decide(.serverKept, at: event.recordedAt) }
            // The member chose the server's version: the conflict ends as the server has it, with
            // no rollback to tell them of (the history keeps the choice). Later writes made on
            // the discarded value are still held, as after any rollback.
            if discarded.reason == .serverWon, discarded.requestedBy == .member { next.rollbackAcknowledged = true }

        case .approvalDecided(let decision):
            guard next.status == .pendingApproval else { throw illegal("the row is not waiting for approval") }
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

        case .superseded(let superseded):
            switch superseded.reason {
            case .revised, .resolvedMine:
                guard [.failed, .blocked, .conflicted].contains(next.status) else {
                    throw illegal("only a failed, blocked or conflicted row may be corrected")
                }
                guard superseded.reason != .resolvedMine || next.status == .conflicted else {
                    throw illegal("only a conflicted row may be resolved")
                }
            case .coalesced:
                guard next.status == .queued, next.neverSent else {
                    throw illegal("only a row never attempted (here or in the journal it was imported from) may be coalesced")
                }
            }
            guard superseded.by != id else { throw illegal("an operation cannot replace itself") }
            next.status = .superseded
            next.supersededBy = superseded.by
            next.supersededReason = superseded.reason
            next.nextAttemptAt = nil
            if superseded.reason == .coalesced { next.decide(.coalesced, at: event.recordedAt) }

        case .rebased(let rebased):
            guard next.status == .conflicted else { throw illegal("only a conflicted row may be rebased") }
            next.status = .queued
            next.baseRevision = rebased.baseRevision
            next.rebaseCount += 1
            next.decide(.resentOverServer, at: event.recordedAt)
            next.nextAttemptAt = nil
            next.serverCurrent = nil
            next.sealedServerCurrent = nil

        case .claimMayBeForgotten:
            guard next.status == .queued, next.firstAttemptAt != nil else {
                throw illegal("only a queued row sent before may outlive the server's claim on its key")
            }
            next.status = .blocked
            next.nextAttemptAt = nil
            next.lastErrorCode = ErrorCode.claimMayBeForgotten
            next.lastErrorMessage = "This change was first sent so long ago that the server may have forgotten it. Check whether it went through, then send it again or discard it."

        case .attachmentGranted(let granted):
            let index = try queuedAttachment(granted.attachment, of: next, illegal)
            guard granted.segmentSize > 0, granted.segmentCount == AttachmentUpload.segmentCount(
                size: next.attachments[index].manifest.size, segmentSize: granted.segmentSize)
            else { throw illegal("a grant of \(granted.segmentCount) segments of \(granted.segmentSize) bytes does not cover the file") }
            // Segments landed under another segment size cannot be completed with these.
            if next.attachments[index].segmentSize != granted.segmentSize { next.attachments[index].landed = [] }
            next.attachments[index].segmentSize = granted.segmentSize
            next.attachments[index].grants += 1

        case .segmentLanded(let landed):
            let index = try queuedAttachment(landed.attachment, of: next, illegal)
            let upload = next.attachments[index]
            guard let size = upload.segmentSize else { throw illegal("a segment landed before any grant") }
            let count = AttachmentUpload.segmentCount(size: upload.manifest.size, segmentSize: size)
            let number = landed.segment.number
            let expected = number == count ? upload.manifest.size - Int64(count - 1) * size : size
            guard (1...count).contains(number), landed.segment.size == expected else {
                throw illegal("segment \(number) of \(landed.segment.size) bytes is not one of the grant's \(count)")
            }
            next.attachments[index].landed.removeAll { $0.number == number }
            next.attachments[index].landed.append(landed.segment)
            next.attachments[index].landed.sort { $0.number < $1.number }

        case .attachmentCompleted(let completed):
            let index = try queuedAttachment(completed.attachment, of: next, illegal)
            let manifest = next.attachments[index].manifest
            guard completed.size == manifest.size, completed.sha256 == manifest.sha256 else {
                throw illegal("the completed object is not the file (\(completed.size) bytes, sha256 \(completed.sha256))")
            }
            next.attachments[index].completedObject = completed.object

        case .attachmentRefused(let refused):
            let index = try queuedAttachment(refused.attachment, of: next, illegal)
            next.status = .failed
            next.nextAttemptAt = nil
            next.attachments[index].refusedCode = refused.errorCode
            next.attachments[index].refusals += 1
            next.lastErrorCode = refused.errorCode
            next.lastErrorMessage = refused.message

        case .dependencyEnded(let ended):
            guard next.status == .queued else { throw illegal("only a queued row waits for its dependencies") }
            guard ended.status == .discarded || ended.status == .withdrawn else {
                throw illegal("a dependency that ended \(ended.status) does not block")
            }
            next.status = .blocked
            next.nextAttemptAt = nil
            next.endedDependency = ended.dependency
            next.lastErrorCode = ErrorCode.dependencyEnded
            next.lastErrorMessage = ended.status == .discarded
                ? "A change this one needs was discarded, so it cannot be sent as it is."
                : "A change this one needs was refused by the server, so it cannot be sent as it is."
        }
        if !next.records.isEmpty, RecordRule.rollsBack(from: before, to: next.status) {
            next.rolledBackSeq = event.seq
        }
        next.latestSeq = event.seq
        next.eventSeqs.append(event.seq)
        next.changedAt = event.recordedAt
        next.changedUptime = event.uptime
    }

    /// The index of a queued row's attachment that is still being uploaded.
    private static func queuedAttachment(_ id: AttachmentID, of state: OperationState,
                                         _ illegal: (String) -> OutboxError) throws(OutboxError) -> Int {
        guard state.status == .queued else { throw illegal("only a queued row's attachment is uploaded") }
        guard let index = state.attachmentIndex(id) else { throw illegal("the write carries no attachment \(id)") }
        guard !state.attachments[index].isCompleted else { throw illegal("attachment \(id) was completed") }
        return index
    }

    /// The states a `compacted` event leaves: one stub per operation whose events it removed.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` when the state
    ///   before is not the same terminal operation (compaction never touches a pending row).
    package static func applyCompaction(
        _ compacted: Compacted,
        seq: JournalSequence,
        recordedAt: Date,
        to states: (OperationID) throws -> OperationState?
    ) throws -> [(before: OperationState?, after: OperationState)] {
        try compacted.operations.map { operation in
            let before = try states(operation.id)
            if let before, !before.status.isTerminal || before.compactedAt != nil {
                throw OutboxError.illegalTransition(
                    operation: operation.id, status: before.status, event: .compacted,
                    reason: before.compactedAt != nil ? "it was already compacted" : "only a terminal row may be compacted"
                )
            }
            return (before, OperationState(compacted: operation, seq: seq, compactedAt: recordedAt))
        }
    }

    /// Folds a whole history from nothing.
    package static func replay(_ events: some Sequence<JournalEvent>) throws(OutboxError) -> OperationState? {
        var state: OperationState?
        for event in events {
            try apply(event, to: &state)
        }
        return state
    }
}
