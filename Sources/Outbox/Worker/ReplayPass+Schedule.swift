import Foundation
import OutboxCore
import OutboxStorage

/// What a pass reads to decide: the rows due, the rule's verdict on each, and when the next
/// pass is due.
extension ReplayPass {
    /// The eligibility rule's row part for a candidate the schedule found due (the engine part,
    /// the session asked live, is the attempt's own check); waiting on the candidate itself
    /// (logged and counted) when the journal cannot be read: the lane waits for the next pass.
    func verdict(on candidate: PassPlan.Candidate) -> Eligibility.Verdict {
        let schema = store.schema
        let now = clock.now()
        let window = attempts.claimRetention.withLock { $0.window }
        do {
            return try store.read { txn in
                guard let state = try schema.state(candidate.id, in: txn) else { return .notQueued }
                var facts = try schema.eligibilityFacts(of: state, dueAt: .some(nil), now: now, in: txn)
                // Only a send asks how old its key's claim is: a read shows the row as it waits.
                facts.firstAttemptAt = state.firstAttemptAt
                facts.claimWindow = window
                return Eligibility.rowVerdict(facts)
            }
        } catch {
            log.problem(.journalRead, "could not read the row's lane or dependencies; it waits for the next pass", error: error, operation: candidate.id)
            return .waiting(.laneHead(candidate.id, nil))
        }
    }

    /// The first row of `lane` not yet terminal: the only one of the lane that may be sent.
    func laneHead(_ lane: Lane) throws -> OperationID? {
        let schema = store.schema
        return try store.read { txn in try schema.laneHead(lane, in: txn) }
    }

    /// The earliest moment a queued row the rule would let go is due, its due moment clamped to
    /// the cap.
    ///
    /// Walks the schedule in due order and stops at the first such row: rows before it wait
    /// behind an earlier row of their lane, which is itself scheduled (or waits for a person),
    /// or for a dependency, itself scheduled (or waiting for a person); counting such a row as
    /// due now would put the timer off by a whole cap.
    ///
    /// - Parameter after: passes over rows due at or before it (those a pass with no network
    ///   left unattempted).
    func nextDue(after: Date? = nil) throws -> Date? {
        let now = clock.now()
        let schema = store.schema
        let clamp = self.clamp.withLock { $0 }
        var earliest: Date?
        try store.read { txn in
            try txn.scan(schema.schedule) { entry in
                // A row due now (no stored moment) counts as due at this moment; passed over, as
                // one due at or before `after`, when asked for what comes after.
                let moment = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes)
                if let after, moment.map({ $0 <= after }) ?? true { return .next }
                let stored = moment ?? now
                if let earliest, stored >= earliest { return .stop }
                let id = try entry.value()
                guard let state = try schema.state(id, in: txn), let due = clamp.effectiveDue(stored, of: id, now: now) else { return .next }
                // Its moment aside, would the rule let it go?
                switch Eligibility.rowVerdict(try schema.eligibilityFacts(of: state, dueAt: .some(nil), now: now, in: txn)) {
                case .ready, .dependencyEnded, .claimMayBeForgotten: earliest = min(earliest ?? due, due)
                case .waiting, .notQueued: break
                }
                return .next
            }
        }
        return earliest
    }

    /// Queued rows due now, from the schedule index, and those the clock-skew clamp makes due.
    func dueCandidates() throws -> [PassPlan.Candidate] {
        let now = clock.now()
        let schema = store.schema
        let horizon = clamp.withLock { $0.horizon(now: now) }
        var due: [OperationID] = []
        var beyondCap: [OperationID] = []
        try store.read { txn in
            try txn.scan(schema.schedule) { entry in
                let moment = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes)
                guard moment.map({ $0 <= now }) ?? true else { return .stop }
                due.append(try entry.value())
                return .next
            }
            try txn.scan(schema.schedule, reverse: true) { entry in
                guard let moment = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes), moment > horizon else { return .stop }
                beyondCap.append(try entry.value())
                return .next
            }
        }
        let ids = due + clamp.withLock { $0.observe(beyondCap: beyondCap, now: now) }
        return try store.read { txn in
            try ids.compactMap { id in
                guard let state = try schema.state(id, in: txn), state.status == .queued else { return nil }
                // Its place in its lane: a correction holds the place of the row it replaced.
                return PassPlan.Candidate(id: id, lane: state.lane, firstSeq: state.laneSeq)
            }
        }
    }

    /// The queued rows due now; none (logged and counted) when the schedule cannot be read.
    func dueCandidatesOrNone() -> [PassPlan.Candidate] {
        do {
            return try dueCandidates()
        } catch {
            log.problem(.journalRead, "could not read the rows due; this pass sends none of them", error: error)
            return []
        }
    }

}
