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

    /// One event applied to one operation: what a transition's checks name when they refuse it.
    struct Step {
        let id: OperationID
        let event: JournalEvent
        /// The row's status before the event.
        let status: OutboxStatus

        func illegal(_ reason: String) -> OutboxError {
            .illegalTransition(operation: id, status: status, event: event.kind, reason: reason)
        }
    }

    /// The transitions after `enqueued`: the checks every event meets, the event's own
    /// transition (one function per event, by concept: `Fold+Attempts`, `Fold+Decisions`,
    /// `Fold+Holds`, `Fold+Attachments`), then what every event leaves.
    private static func advance(_ next: inout OperationState, by event: JournalEvent, id: OperationID) throws(OutboxError) {
        let step = Step(id: id, event: event, status: next.status)
        guard id == next.id else { throw step.illegal("the event belongs to another operation") }
        guard event.seq > next.latestSeq else { throw step.illegal("seq \(event.seq) is not after \(next.latestSeq)") }
        if next.status.isTerminal, event.kind != .rollbackAcknowledged { throw step.illegal("nothing may follow a terminal status") }
        let before = next.status

        switch event.body {
        case .enqueued, .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped,
            .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked,
            .routeChanged, .installationAdopted:
            preconditionFailure("handled above or not an operation event")
        case .attemptStarted(let started): try Self.attemptStarted(started, &next, step)
        case .attemptFinished(let finished): try Self.attemptFinished(finished, &next, step)
        case .attemptAbandoned(let abandoned): try Self.attemptAbandoned(abandoned, &next, step)
        case .withdrawn(let withdrawn): try Self.withdrawn(withdrawn, &next, step)
        case .requeued: try Self.requeued(&next, step)
        case .discarded(let discarded): try Self.discarded(discarded, &next, step)
        case .approvalDecided(let decision): try Self.approvalDecided(decision, &next, step)
        case .superseded(let superseded): try Self.superseded(superseded, &next, step)
        case .rebased(let rebased): try Self.rebased(rebased, &next, step)
        case .rollbackAcknowledged(let acknowledged): try Self.rollbackAcknowledged(acknowledged, &next, step)
        case .heldOnRollback(let held): try Self.heldOnRollback(held, &next, step)
        case .deletedOnServer(let deleted): try Self.deletedOnServer(deleted, &next, step)
        case .claimMayBeForgotten: try Self.claimMayBeForgotten(&next, step)
        case .dependencyEnded(let ended): try Self.dependencyEnded(ended, &next, step)
        case .attachmentGranted(let granted): try Self.attachmentGranted(granted, &next, step)
        case .segmentLanded(let landed): try Self.segmentLanded(landed, &next, step)
        case .attachmentCompleted(let completed): try Self.attachmentCompleted(completed, &next, step)
        case .attachmentRefused(let refused): try Self.attachmentRefused(refused, &next, step)
        }
        if !next.records.isEmpty, RecordRule.rollsBack(from: before, to: next.status) {
            next.rolledBackSeq = event.seq
        }
        next.latestSeq = event.seq
        next.eventSeqs.append(event.seq)
        next.changedAt = event.recordedAt
        next.changedUptime = event.uptime
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
