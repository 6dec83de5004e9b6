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
        var lookups = EligibilityLookups.oneRow
        return try eligibilityFacts(of: state, engine: engine, dueAt: dueAt, now: now, lookups: &lookups, in: txn)
    }

    /// The same, taking the other rows' answers from `lookups` where an earlier row of the same
    /// snapshot read them already.
    func eligibilityFacts(
        of state: OperationState,
        engine: Eligibility.Engine = .free,
        dueAt: Date?? = nil,
        now: Date,
        lookups: inout EligibilityLookups,
        in txn: borrowing LMDBTransaction
    ) throws -> Eligibility.Facts {
        var facts = Eligibility.Facts(id: state.id, status: state.status, dueAt: dueAt ?? state.nextAttemptAt, engine: engine, now: now)
        guard state.status == .queued else { return facts }
        facts.pendingAttachment = state.pendingAttachment
        facts.sendingBytes = state.pendingAttachment.map(uploadProgress.sending) ?? 0
        for dependency in state.dependsOn {
            if let known = lookups.standing[dependency] {
                facts.dependencies.append(known)
                continue
            }
            // Named at enqueue, so known then: only a damaged journal loses it.
            let row = try standing(dependency, in: txn).map { Eligibility.Row(id: $0.id, status: $0.status) }
                ?? Eligibility.Row(id: dependency, status: nil)
            lookups.remember(row, standingFor: dependency)
            facts.dependencies.append(row)
        }
        // A row without an entity has a lane of its own, which only it is in: nothing to read.
        if state.entityID != nil {
            let lane = state.lane
            let head: OperationID?
            if let known = lookups.laneHeads[lane] {
                head = known
            } else {
                head = try laneHead(lane, in: txn)
                lookups.remember(head, asHeadOf: lane)
            }
            if let head, head != state.id {
                let status: OutboxStatus?
                if let known = lookups.statuses[head] {
                    status = known
                } else {
                    status = try self.state(head, in: txn)?.status
                    lookups.remember(status, of: head)
                }
                facts.laneHead = Eligibility.Row(id: head, status: status)
            }
        }
        for key in state.records {
            let head: Eligibility.Row?
            if let known = lookups.recordHeads[key] {
                head = known
            } else {
                head = try recordHead(key, in: txn)
                lookups.remember(head, asHeadOf: key)
            }
            if let head, head.id != state.id { facts.recordHeads.append(head) }
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
        var lookups = EligibilityLookups.oneRow
        return try verdict(on: state, engine: engine, now: now, lookups: &lookups, in: txn)
    }

    /// The same, with the other rows' answers an earlier row of the snapshot read (``EligibilityLookups``).
    func verdict(on state: OperationState, engine: EngineState, now: Date, lookups: inout EligibilityLookups,
                 in txn: borrowing LMDBTransaction) throws -> Eligibility.Verdict {
        guard state.status == .queued else { return .notQueued }
        let recorded = Eligibility.Engine(engine)
        if let hold = Eligibility.engineHold(recorded) { return .waiting(hold) }
        return Eligibility.verdict(try eligibilityFacts(of: state, engine: recorded, now: now, lookups: &lookups, in: txn))
    }

    /// What a queued row waits for now (``Eligibility``); `nil` when it is due and nothing holds
    /// it, and for every other status (the status itself says what it waits for).
    func waitingOn(_ state: OperationState, engine: EngineState, now: Date, in txn: borrowing LMDBTransaction) throws -> OperationSnapshot.WaitingOn? {
        try verdict(on: state, engine: engine, now: now, in: txn).waitingOn
    }
}

/// What one snapshot answered about the rows others wait on: a read asking the rule of many
/// rows (the Sync tab's) reads each lane's head, dependency and record's first write once, not
/// once per row that waits on it. Valid only inside the transaction that filled it.
struct EligibilityLookups {
    /// A dependency as it stands (``JournalSchema/standing(_:in:)``).
    fileprivate private(set) var standing: [OperationID: Eligibility.Row] = [:]
    /// A lane's first row not yet terminal, `nil` inside when it has none.
    fileprivate private(set) var laneHeads: [Lane: OperationID?] = [:]
    /// A lane head's status, `nil` inside when its state is missing.
    fileprivate private(set) var statuses: [OperationID: OutboxStatus?] = [:]
    /// A record's first write not yet settled, `nil` inside when it has none.
    fileprivate private(set) var recordHeads: [RecordKey: Eligibility.Row?] = [:]
    /// False for a question about one row: nothing would ask again, so nothing is kept.
    private var remembers = true

    /// Nothing kept: for one row's facts.
    fileprivate static var oneRow: EligibilityLookups {
        var lookups = EligibilityLookups()
        lookups.remembers = false
        return lookups
    }

    fileprivate mutating func remember(_ row: Eligibility.Row, standingFor dependency: OperationID) {
        if remembers { standing[dependency] = row }
    }

    fileprivate mutating func remember(_ head: OperationID?, asHeadOf lane: Lane) {
        if remembers { laneHeads[lane] = .some(head) }
    }

    fileprivate mutating func remember(_ status: OutboxStatus?, of id: OperationID) {
        if remembers { statuses[id] = .some(status) }
    }

    fileprivate mutating func remember(_ head: Eligibility.Row?, asHeadOf key: RecordKey) {
        if remembers { recordHeads[key] = .some(head) }
    }
}
