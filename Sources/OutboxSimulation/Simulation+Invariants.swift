import Foundation
import Outbox
import OutboxAudit

/// What must hold after every step, and once the network heals.
extension Simulation {
    // MARK: After every step

    /// Reads the journal's new events into the audit, with the requests sent meanwhile.
    func syncAudit() throws {
        try audit.read(try outbox.events(from: audit.lastSeq.next, limit: .max), exchanges: network.takeExchanges())
    }

    /// - Parameters:
    ///   - everyRow: look at every operation, not only those with new events (and those new to
    ///     the simulation): after a crash or a compaction, and with the projections.
    ///   - everyRecord: likewise every record (by default, when `everyRow`); the queries are read
    ///     with the projections.
    func checkInvariants(projections: Bool, everyRow: Bool = true, everyRecord: Bool? = nil) throws {
        let since = checkedThrough
        try syncAudit()
        checkedThrough = audit.lastSeq
        if let problem = server.problems.first { throw InvariantBroken(problem) }
        let counts = server.appliedCounts
        // Claims that expired with the feed's old changes: a resend applied the write again.
        let expired = server.claimsExpired
        // No operation applied twice (but one resent after its claim expired).
        if let (key, count) = counts.first(where: { $0.value > 1 && !expired.contains($0.key) }) {
            throw InvariantBroken("key \(key) was applied \(count) times")
        }
        let applied = server.applied
        // A restore undid these: synced on the phone, no longer applied on the server.
        let lost = server.lostInRestore
        let records = Dictionary(applied.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let changed = everyRow ? order : order.filter { id in
            guard let row = audit.rows[id] else { return true }
            return row.latestSeq > since || !checked.contains(id)
        }
        let new = changed.filter { !checked.contains($0) }
        checked.formUnion(changed)
        for id in changed {
            // No enqueue that returned is ever lost.
            guard let state = try outbox.operationState(id), let expected = expectations[id], let row = audit.rows[id] else {
                throw InvariantBroken("\(label(id)) returned from enqueue and is gone from the journal")
            }
            // Its record changes are in its `enqueued` event as the member made them.
            if new.contains(id), !row.compacted {
                let made = expected.changes.map { ($0.key, $0.value.map { SHA256Digest(of: $0) }) }
                let kept = row.changes.map { ($0.key, $0.valueHash) }
                guard made.elementsEqual(kept, by: { $0.0 == $1.0 && $0.1 == $1.1 }) else {
                    throw InvariantBroken("\(label(id)) keeps the record changes \(kept.map { "\($0.0)" }), not the \(made.map { "\($0.0)" }) it was made with (or inherited)")
                }
            }
            // The engine's status is the one its history folds to.
            guard state.status == row.status else {
                throw InvariantBroken("\(label(id)) is \(state.status), and its history says \(row.status)")
            }
            // Every synced operation was applied exactly once, with the bytes it was saved with.
            if state.status == .synced, !(lost.contains(id.idempotencyKey) && counts[id.idempotencyKey] == nil) {
                guard counts[id.idempotencyKey] == 1 || (expired.contains(id.idempotencyKey) && counts[id.idempotencyKey] ?? 0 > 1),
                    let record = records[id.idempotencyKey]
                else {
                    throw InvariantBroken("\(label(id)) is synced but the server applied it \(counts[id.idempotencyKey] ?? 0) times")
                }
                guard record.body == expected.request.payload else {
                    throw InvariantBroken("\(label(id)) reached the server with other bytes than it was saved with")
                }
            }
        }
        try checkServerOrder(applied, lost: lost)
        try checkRecords(all: everyRecord ?? everyRow, queries: projections)
        if projections {
            // The projections equal a rebuild, and every status came by a legal transition.
            let mismatches = try outbox.projectionMismatches()
            if let first = mismatches.first {
                throw InvariantBroken("projections differ from a rebuild: \(first)")
            }
        }
    }

    /// The order the server applied writes in: per entity, the lanes' order; per record, the
    /// member's; a dependent after what it depends on (or what replaced it); a replaced row never
    /// after its replacement.
    ///
    /// A first copy that held its claim finalizing while the engine moved on may land late, when
    /// a person discarded or replaced its row meanwhile: out of order by the member's choice.
    private func checkServerOrder(_ applied: [ModelServer.Applied], lost: Set<String>) throws {
        let index = Dictionary(applied.enumerated().map { ($0.element.key, $0.offset) }, uniquingKeysWith: min)
        var lastByEntity: [String: (place: JournalSequence, id: OperationID)] = [:]
        var lastByRecord: [RecordKey: (place: (JournalSequence, JournalSequence), id: OperationID)] = [:]
        for (position, record) in applied.enumerated() {
            guard let id = OperationID(record.key), let row = audit.rows[id] else {
                throw InvariantBroken("the server applied key \(record.key), which no operation in the journal has")
            }
            if record.byParkedCopy, row.status == .discarded || row.status == .superseded { continue }
            // Applied again after its claim expired: a resend, out of order by its nature.
            if record.afterClaimExpired { continue }
            // Per record, the member's order, whichever lanes its writes went in.
            for change in row.changes {
                if let last = lastByRecord[change.key], last.place > row.recordOrder {
                    throw InvariantBroken("on \(change.key) the server applied \(label(id)) after \(label(last.id)), which the member made after it")
                }
                lastByRecord[change.key] = (row.recordOrder, id)
            }
            if let entity = record.entity {
                if let last = lastByEntity[entity], last.place > row.laneSeq {
                    throw InvariantBroken("on \(entity) the server applied \(label(id)) after \(label(last.id)), which is behind it in the lane")
                }
                lastByEntity[entity] = (row.laneSeq, id)
            }
            for dependency in row.dependsOn {
                guard let standing = audit.standing(dependency), standing.status == .synced,
                    let applied = index[standing.id.idempotencyKey].map(Optional.some) ?? (lost.contains(standing.id.idempotencyKey) ? .some(nil) : nil),
                    applied.map({ $0 < position }) ?? true
                else {
                    throw InvariantBroken("the server applied \(label(id)) before its dependency \(label(dependency)) (or what replaced it)")
                }
            }
            var successor = row.supersededBy
            while let next = successor {
                if let later = index[next.idempotencyKey], later < position {
                    throw InvariantBroken("the server applied \(label(id)) after \(label(next)), which replaced it")
                }
                successor = audit.rows[next]?.supersededBy
            }
        }
    }

    // MARK: Healing

    /// The network heals and the session is valid: from here everything must settle, in time.
    func heal() async throws {
        trace.append("the network heals; the session is valid")
        network.signal.heal()
        server.finishParked()
        session.signIn(account)
        try await outbox.resumeSession()
        outbox.wake(.connectivityRegained)
        try await settle()
        try checkInvariants(projections: false)
        // The member comes back to what the engine gave up on.
        for id in try rows([.failed]) where try outbox.operationState(id)?.lastErrorCode == ErrorCode.gaveUp {
            trace.append("the member retries \(label(id)), which the engine gave up on")
            try await outbox.retry(id)
            audit.personDid(.retry, to: id)
            try await settle()
        }
        // Then the member decides on every conflict, round after round: a version kept against
        // the server's revision may meet the member's own next edit of the record, and a pull
        // may find records deleted on the server under queued writes. Each round pulls to the
        // feed's end first: the base is then the server's.
        for _ in 0..<50 {
            try await runUntilOnlyPeopleAreAwaited()
            try await pullToTheEnd()
            let conflicted = try rows([.conflicted])
            guard !conflicted.isEmpty else { break }
            for id in conflicted {
                try await resolve(id)
                try await settle()
            }
        }
        if let left = try rows([.conflicted]).first {
            throw InvariantBroken("liveness: \(label(left)) is still conflicted after 50 rounds of decisions on a healed network")
        }
        try checkInvariants(projections: true)
        try audit.checkFinal()
        try checkFates()
    }

    /// Pulls on the healed network until the feed's end, the time a feed's backoff (a server's
    /// `Retry-After`) asks passing first; five pulls must reach it.
    private func pullToTheEnd() async throws {
        for _ in 0..<5 {
            if let next = try outbox.feedState(business: SimulationScenario.business)?.nextPullAt, next > clock.now() {
                let wait = next.timeIntervalSince(clock.now()) + 1
                trace.append("advance \(Int(wait)) s to the feed's next pull")
                serverClock.advance(by: wait)
                clock.advance(by: wait)
                try await settle()
            }
            let reachedEnd = try await pullNow()
            try await settle()
            if reachedEnd { return }
        }
        throw InvariantBroken("liveness: five pulls on the healed network did not reach the feed's end")
    }

    /// Moves the clock from timer to timer until no queued row can move without a person; the
    /// timer must be armed, and within the cap, whenever one can.
    private func runUntilOnlyPeopleAreAwaited() async throws {
        let cap = scenario.retryPolicy.maxDelaySeconds
        for _ in 0..<400 {
            try checkInvariants(projections: false, everyRecord: false)
            let moving = try rowsThatCanMove()
            guard !moving.isEmpty else { return }
            // The worker's own word for its timer: the timer task may not sleep on the clock yet.
            guard let deadline = outbox.nextWake else {
                throw InvariantBroken("stall: \(moving.count) queued rows can be sent and no timer is armed: \(try describe(moving))")
            }
            if deadline.timeIntervalSince(clock.now()) > cap + 1 {
                throw InvariantBroken("the timer sleeps \(Int(deadline.timeIntervalSince(clock.now()))) s, past the \(Int(cap)) s cap, with rows queued")
            }
            // Nor past the first row that waits for nothing but its moment: on a healthy network
            // no row waits longer than its backoff.
            for id in moving {
                guard let snapshot = try outbox.operation(id) else { continue }
                let due: Date? = switch snapshot.waitingOn {
                case .scheduled(let moment)?: moment
                case nil: clock.now()
                default: nil
                }
                if let due, deadline.timeIntervalSince(due) > 1 {
                    throw InvariantBroken("the timer sleeps \(Int(deadline.timeIntervalSince(clock.now()))) s while \(label(id)) is due in \(Int(due.timeIntervalSince(clock.now()))) s: \(try describe([id]))")
                }
            }
            // The server's clock first: the device's fires the timer, whose requests must find
            // the server already there.
            serverClock.advance(by: cap)
            // Time passes until the timer's deadline: the uptime moves on with the wall clock.
            clock.advance(by: max(0, deadline.timeIntervalSince(clock.now())))
            try await settle()
        }
        if let left = try rowsThatCanMove().first {
            throw InvariantBroken("liveness: \(label(left)) is still queued after the network healed: \(try describe([left]))")
        }
    }

    /// Queued rows that wait for no person: the rows a healthy network must move.
    private func rowsThatCanMove() throws -> [OperationID] {
        try rows([.queued]).filter { id in
            guard let snapshot = try outbox.operation(id), snapshot.status == .queued else { return false }
            return try !waitsForAPerson(snapshot)
        }
    }

    /// Whether the row waits for a person: it is failed, blocked, conflicted or held for
    /// approval, or it is queued behind a lane head, or after a dependency, that does.
    private func waitsForAPerson(_ snapshot: OperationSnapshot, depth: Int = 0) throws -> Bool {
        switch snapshot.status {
        case .failed, .blocked, .conflicted, .pendingApproval:
            return true
        case .queued:
            guard depth < 64 else { return false }
            switch snapshot.waitingOn {
            case .dependency(let other, _)?, .laneHead(let other, _)?, .recordWrite(let other, _)?:
                guard let next = try outbox.operation(other) else { return false }
                return try waitsForAPerson(next, depth: depth + 1)
            default:
                return false
            }
        case .syncing, .synced, .withdrawn, .discarded, .superseded:
            return false
        }
    }

    private func describe(_ ids: [OperationID]) throws -> String {
        let paused = try outbox.engineState().isPaused
        let rows = try ids.prefix(3).map { id -> String in
            guard let snapshot = try outbox.operation(id) else { return "\(label(id)) missing" }
            let due = snapshot.nextAttemptAt.map { "due in \(Int($0.timeIntervalSince(clock.now()))) s" } ?? "due now"
            let waiting = snapshot.waitingOn.map { ", waiting on \($0)" } ?? ""
            return "\(label(id)) \(snapshot.status) \(due)\(waiting), \(snapshot.attemptCount) attempts, last \(snapshot.lastErrorCode ?? "-")"
        }
        return rows.joined(separator: "; ") + (paused ? " (worker paused)" : "") + ", next wake \(String(describing: outbox.nextWake))"
    }

    // MARK: Fates

    /// At the end of a healed run, every conflict decided, every operation is where its scripted
    /// fate says, or where a person's or a rule's decision (each checked against its event) put it.
    private func checkFates() throws {
        for id in order {
            guard let expected = expectations[id], let snapshot = try outbox.operation(id), let row = audit.rows[id] else { continue }
            let status = snapshot.status
            var allowed: Set<OutboxStatus>
            if row.status == .superseded {
                allowed = [.superseded]
            } else if row.discardedBy != nil {
                allowed = [.discarded]
            } else {
                switch expected.fate {
                case .normal: allowed = [.synced]
                case .approval: allowed = [.pendingApproval, .synced, .failed]
                case .reject: allowed = [.failed, .withdrawn]
                case .forbid: allowed = [.blocked]
                }
                // A dependency dropped or refused: the dependent waits for a person.
                if row.endedDependency != nil { allowed.insert(.blocked) }
            }
            if status == .queued, try waitsForAPerson(snapshot) {
                allowed.insert(.queued)  // behind a lane head or a dependency that waits for a person
            }
            guard allowed.contains(status) else {
                throw InvariantBroken("\(label(id)) (\(expected.kind), \(expected.fate)) ended \(status)\(snapshot.lastErrorCode.map { " (\($0))" } ?? ""), expected one of \(allowed.map(\.rawValue).sorted())")
            }
        }
    }
}
