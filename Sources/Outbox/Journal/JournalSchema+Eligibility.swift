import Foundation
import OutboxCore
import OutboxStorage

/// The facts ``Eligibility`` decides from, read from the stored projections inside one
/// transaction.
extension JournalSchema {
    /// The most replacements followed from one operation to the one that stands for it now.
    static let maxSupersedeChain = 64

    /// The operation that stands for `id` now: itself, or the end of the chain of operations that
    /// replaced it (a correction, a resolution, a coalesced write). `nil` when it is not known.
    func standing(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        var current = try state(id, in: txn)
        var hops = 0
        while let next = current?.supersededBy, hops < Self.maxSupersedeChain {
            guard let replacement = try state(next, in: txn) else { break }
            current = replacement
            hops += 1
        }
        return current
    }

    /// What the rule needs to know of `state`: its dependencies as they stand, its lane's head,
    /// with `engine` and `now` as the caller sees them.
    /// - Parameter dueAt: the row's due moment as the caller judges it (the worker's clamp);
    ///   by default the one stored.
    func eligibilityFacts(
        of state: OperationState,
        engine: Eligibility.Engine = .free,
        dueAt: Date?? = nil,
        now: Date,
        in txn: borrowing LMDBTransaction
    ) throws -> Eligibility.Facts {
        var facts = Eligibility.Facts(id: state.id, status: state.status, dueAt: dueAt ?? state.nextAttemptAt, engine: engine, now: now)
        guard state.status == .queued else { return facts }
        facts.dependencies = try state.dependsOn.map { dependency in
            // Named at enqueue, so known then: only a damaged journal loses it.
            guard let standing = try standing(dependency, in: txn) else { return Eligibility.Row(id: dependency, status: nil) }
            return Eligibility.Row(id: standing.id, status: standing.status)
        }
        if let head = try laneHead(state.lane, in: txn), head != state.id {
            facts.laneHead = Eligibility.Row(id: head, status: try self.state(head, in: txn)?.status)
        }
        for key in state.records {
            if let head = try recordHead(key, in: txn), head.id != state.id { facts.recordHeads.append(head) }
        }
        return facts
    }

    /// The first write of `key` not yet settled (queued, syncing, waiting for approval, or
    /// waiting for a person): the only one of the record's writes that may be sent.
    func recordHead(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> Eligibility.Row? {
        var head: Eligibility.Row?
        try txn.scan(recordWrites, leading: key.bytes) { entry in
            let id = try entry.value()
            guard let state = try self.state(id, in: txn), !state.status.isTerminal, state.status != .synced else { return .next }
            head = Eligibility.Row(id: id, status: state.status)
            return .stop
        }
        return head
    }

    /// The rule's verdict on `state` as the journal records the engine (paused, who is signed
    /// in): what a member is told.
    func verdict(on state: OperationState, engine: EngineState, now: Date, in txn: borrowing LMDBTransaction) throws -> Eligibility.Verdict {
        guard state.status == .queued else { return .notQueued }
        let recorded = Eligibility.Engine(isPaused: engine.isPaused, pausedAt: engine.pausedAt, session: engine.session)
        if let hold = Eligibility.engineHold(recorded) { return .waiting(hold) }
        return Eligibility.verdict(try eligibilityFacts(of: state, engine: recorded, now: now, in: txn))
    }

    /// What a queued row waits for now (``Eligibility``); `nil` when it is due and nothing holds
    /// it, and for every other status (the status itself says what it waits for).
    func waitingOn(_ state: OperationState, engine: EngineState, now: Date, in txn: borrowing LMDBTransaction) throws -> WaitingOn? {
        try verdict(on: state, engine: engine, now: now, in: txn).waitingOn
    }
}
