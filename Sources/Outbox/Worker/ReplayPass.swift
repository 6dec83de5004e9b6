import Foundation
import OutboxCore
import OutboxStorage
import Synchronization

/// One pass of the worker: finds the queued rows whose moment has come, sends them lane by lane
/// (each through ``ReplayAttempt``), and says when the next pass should run.
final class ReplayPass: Sendable {
    let store: JournalStore
    let writer: JournalWriter
    let attempts: ReplayAttempt
    let configuration: OutboxConfiguration
    let log: EngineLog
    /// The guard against a clock moved backwards: rows seen due beyond the cap, and since when.
    private let clamp: Mutex<ClockSkewClamp>

    init(store: JournalStore, writer: JournalWriter, attempts: ReplayAttempt, configuration: OutboxConfiguration, log: EngineLog) {
        self.store = store
        self.writer = writer
        self.attempts = attempts
        self.configuration = configuration
        self.log = log
        self.clamp = Mutex(ClockSkewClamp(policy: configuration.retryPolicy))
    }

    private var clock: any OutboxClock { configuration.clock }
    private var policy: RetryPolicy { configuration.retryPolicy }

    /// Starts no more rows, in this pass or any other; attempts in flight finish and are recorded.
    func stop() {
        attempts.stop()
    }

    // MARK: A pass

    /// Sends every queued row whose moment has come, in journal order, one at a time per lane
    /// and up to `maxConcurrentLanes` lanes at once. Stops starting rows when the session is gone
    /// or a 401 paused the worker.
    /// - Returns: when the timer should run the next pass: the earliest scheduled retry left;
    ///   `nil` when nothing is scheduled or a 401 paused the worker. A pass the session halted
    ///   (signed out, another account), or one that could not read whether the worker is paused
    ///   or what is scheduled, asks again one cap later; a pass that sent nothing never asks for
    ///   another at once: the worker never spins.
    func run(trigger: WakeReason) async -> Date? {
        switch isPaused() {
        case true?: return ended(trigger, sent: 0, halted: false, next: nil, because: "paused")
        case nil: return ended(trigger, sent: 0, halted: false, next: poll(), because: "unreadable")
        case false?: break
        }
        log.log(.debug, "pass started", [EngineLog.Key.trigger: .string(trigger.rawValue)])
        await attempts.recordSessionIfChanged()
        await abandonOrphans()
        // With batching, one batch is in flight at a time, holding as many lane heads as it may.
        let batching = configuration.batching
        let slots = batching == nil ? configuration.maxConcurrentLanes : 1
        let perTask = batching?.maxOperations ?? 1
        // Each outcome rides with the next attempt's start (a batch commits its own together).
        let carry: CarriedOutcomes? = batching == nil ? CarriedOutcomes() : nil
        let (sent, halted, offline) = await withTaskGroup(of: [(candidate: PassPlan.Candidate, report: ReplayAttempt.Report)].self) { group in
            var plan = PassPlan()
            plan.add(dueCandidatesOrNone())
            var inFlight = 0
            var sent = 0
            var halted = false
            // The row whose attempt got no response: the pass stops there, and the timer follows
            // that row's backoff.
            var offline: OperationID?
            // Rows whose dependency is not synced yet: offered again when an attempt ends.
            var deferred: [PassPlan.Candidate] = []
            while !Task.isCancelled {
                if attempts.isStopped { halted = true }
                while !halted, inFlight < slots {
                    var ready: [PassPlan.Candidate] = []
                    while ready.count < perTask, let candidate = plan.next() {
                        // An outcome still carried may be what holds the row back: committed, it
                        // is read again.
                        var head = isLaneHead(candidate)
                        if !head, await committedCarried(carry) { head = isLaneHead(candidate) }
                        guard head else {
                            plan.dropLane(candidate.lane)
                            continue
                        }
                        var gate = await dependencyGate(candidate)
                        if case .waiting = gate, await committedCarried(carry) { gate = await dependencyGate(candidate) }
                        switch gate {
                        case .ready:
                            ready.append(candidate)
                        case .waiting:
                            deferred.append(candidate)
                            plan.dropLane(candidate.lane)
                        case .ended(let dependency, let status):
                            await recordDependencyEnded(candidate, dependency: dependency, status: status)
                            plan.dropLane(candidate.lane)
                        }
                    }
                    guard !ready.isEmpty else { break }
                    inFlight += 1
                    if let batching {
                        let batch = BatchAttempt(attempts: attempts, batching: batching)
                        group.addTask {
                            let reports = await batch.send(ready.map(\.id), trigger: trigger)
                            return zip(ready, reports).map { ($0, $1.1) }
                        }
                    } else {
                        let candidate = ready[0]
                        let carried = carry?.take() ?? []
                        group.addTask {
                            [(candidate, await self.attempts.send(candidate.id, trigger: trigger, carrying: carried, carry: carry))]
                        }
                    }
                }
                // No start took them: committed alone before the pass waits on anything.
                _ = await committedCarried(carry)
                if inFlight == 0 {
                    // Everything planned is done: look once more for rows that became due meanwhile.
                    let seen = plan.seen.count
                    if !halted { plan.add(dueCandidatesOrNone()) }
                    if halted || plan.seen.count == seen { break }
                    continue
                }
                guard let finished = await group.next() else { break }
                inFlight -= 1
                for done in finished {
                    plan.finished(lane: done.candidate.lane)
                    if case .finished(let classification, _, _) = done.report {
                        sent += 1
                        if case .noResponse(let failure) = classification.outcome, failure != .missingFromBatch, offline == nil {
                            offline = done.candidate.id
                            halted = true
                        }
                    }
                    if done.report.haltsPass { halted = true }
                }
                // A dependency may have synced: the rows waiting on one are offered again.
                if !halted, !deferred.isEmpty {
                    // The outcome that lets them go may still be carried.
                    _ = await committedCarried(carry)
                    let waiting = deferred
                    deferred = []
                    for candidate in waiting {
                        if case .ready = await dependencyGate(candidate) { plan.readd(candidate) } else { deferred.append(candidate) }
                    }
                }
            }
            _ = await committedCarried(carry)
            return (sent, halted, offline)
        }
        switch isPaused() {
        case true?: return ended(trigger, sent: sent, halted: halted, next: nil, because: "paused")
        case nil: return ended(trigger, sent: sent, halted: halted, next: poll(), because: "unreadable")
        case false?: break
        }
        let now = clock.now()
        if let offline {
            // No network: the other due rows stay due, unattempted, and the timer follows the
            // attempted row's backoff instead of spinning on them.
            let next: Date
            do {
                next = try store.queries.operationState(offline)?.nextAttemptAt ?? poll()
            } catch {
                log.problem(.journalRead, "could not read when the unanswered row is due; the next pass runs one cap from now", error: error, operation: offline)
                next = poll()
            }
            return ended(trigger, sent: sent, halted: true, next: next, because: "no_response")
        }
        if halted { return ended(trigger, sent: sent, halted: true, next: poll(), because: "halted") }
        let next: Date?
        do {
            next = try nextDue()
        } catch {
            log.problem(.journalRead, "could not read the schedule; the next pass runs one cap from now", error: error)
            return ended(trigger, sent: sent, halted: false, next: poll(), because: "unreadable")
        }
        guard let next else { return ended(trigger, sent: sent, halted: false, next: nil, because: "nothing_scheduled") }
        return ended(trigger, sent: sent, halted: false, next: sent == 0 && next <= now ? poll() : next, because: "scheduled")
    }

    /// Commits the outcomes still carried, each alone.
    /// - Returns: whether there were any.
    private func committedCarried(_ carry: CarriedOutcomes?) async -> Bool {
        guard let drafts = carry?.take(), !drafts.isEmpty else { return false }
        await attempts.commit(drafts)
        return true
    }

    /// One cap from now: when a pass that could not go on asks again.
    private func poll() -> Date {
        clock.now().addingTimeInterval(policy.maxDelaySeconds)
    }

    /// Logs the pass's end and answers when the next one should run.
    private func ended(_ trigger: WakeReason, sent: Int, halted: Bool, next: Date?, because reason: String) -> Date? {
        var metadata: OutboxLogger.Metadata = [
            EngineLog.Key.trigger: .string(trigger.rawValue),
            EngineLog.Key.sent: "\(sent)",
            EngineLog.Key.halted: "\(halted)",
            EngineLog.Key.reason: .string(reason),
        ]
        if let next { metadata[EngineLog.Key.nextPassAt] = EngineLog.moment(next) }
        log.log(.debug, "pass ended", metadata)
        return next
    }

    /// Whether a 401 paused the worker; `nil` (logged and counted) when the journal cannot say.
    private func isPaused() -> Bool? {
        do {
            return try store.queries.engineState().isPaused
        } catch {
            log.problem(.journalRead, "could not read whether the worker is paused; the next pass runs one cap from now", error: error)
            return nil
        }
    }

    /// The queued rows due now; none (logged and counted) when the schedule cannot be read.
    private func dueCandidatesOrNone() -> [PassPlan.Candidate] {
        do {
            return try dueCandidates()
        } catch {
            log.problem(.journalRead, "could not read the rows due; this pass sends none of them", error: error)
            return []
        }
    }

    /// Whether `candidate` is its lane's first row not yet terminal; not (logged and counted)
    /// when that cannot be read: the lane waits for the next pass.
    private func isLaneHead(_ candidate: PassPlan.Candidate) -> Bool {
        do {
            return try laneHead(candidate.lane) == candidate.id
        } catch {
            log.problem(.journalRead, "could not read the lane's first row; the lane waits for the next pass", error: error, operation: candidate.id)
            return false
        }
    }

    /// Whether `candidate`'s dependencies let it be sent; waiting (logged and counted) when that
    /// cannot be read.
    private func dependencyGate(_ candidate: PassPlan.Candidate) async -> DependencyGate {
        let schema = store.schema
        do {
            return try store.read { txn in
                guard let state = try schema.state(candidate.id, in: txn), !state.dependsOn.isEmpty else { return .ready }
                return try schema.dependencyGate(of: state, in: txn)
            }
        } catch {
            log.problem(.journalRead, "could not read the row's dependencies; it waits for the next pass", error: error, operation: candidate.id)
            return .waiting(on: candidate.id, status: nil)
        }
    }

    /// Blocks a row whose dependency ended without being applied: a person decides.
    private func recordDependencyEnded(_ candidate: PassPlan.Candidate, dependency: OperationID, status: OutboxStatus) async {
        do {
            _ = try await writer.append([JournalStore.Draft(
                operationID: candidate.id, body: .dependencyEnded(DependencyEnded(dependency: dependency, status: status))
            )])
            log.log(.notice, "row blocked: a write it depends on ended \(status.rawValue)", [
                EngineLog.Key.operation: .string(candidate.id.description),
                EngineLog.Key.reason: .string(dependency.description),
            ])
        } catch OutboxError.illegalTransition {
            // A decision or another pass changed the row meanwhile: nothing to do.
        } catch {
            log.problem(.factNotRecorded, "could not block a row whose dependency ended; the next pass tries again", error: error, operation: candidate.id)
        }
    }

    /// Records `attemptAbandoned` for syncing rows no attempt of this process holds: their
    /// outcome could not be recorded. They are due at once, replayed under the same key.
    private func abandonOrphans() async {
        let syncing: [JournalStore.Draft]
        do {
            syncing = try store.interruptedAttempts()
        } catch {
            log.problem(.journalRead, "could not look for interrupted attempts; the next pass looks again", error: error)
            return
        }
        guard !syncing.isEmpty else { return }
        // Read the rows first, then who holds them: an attempt inserts itself before its
        // `attemptStarted` commits, so every live attempt seen syncing is held here.
        let holding = attempts.rowsInFlight
        for draft in syncing {
            guard let id = draft.operationID, !holding.contains(id) else { continue }
            do {
                let events = try await writer.append([draft])
                log.log(.info, "interrupted attempt abandoned; the row is due at once, under the same key", [
                    EngineLog.Key.operation: .string(id.description),
                    EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
                ])
            } catch OutboxError.illegalTransition {
                // Another attempt settled the row meanwhile, and the fold refused: nothing to do.
            } catch {
                log.problem(.abandonmentNotRecorded, "could not record an interrupted attempt's abandonment; the next pass tries again", error: error, operation: id)
            }
        }
    }

    /// Queued rows due now, from the schedule index, and those the clock-skew clamp makes due.
    private func dueCandidates() throws -> [PassPlan.Candidate] {
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

    /// The first row of `lane` not yet terminal: the only one of the lane that may be sent.
    func laneHead(_ lane: Lane) throws -> OperationID? {
        let schema = store.schema
        return try store.read { txn in try schema.laneHead(lane, in: txn) }
    }

    /// The earliest moment a queued lane head is due, its due moment clamped to the cap.
    ///
    /// Walks the schedule in due order and stops at the first lane head: rows before it wait
    /// behind an earlier row of their lane, which is itself scheduled (or waits for a person).
    /// A lane head waiting for a dependency is passed over too: the dependency is itself
    /// scheduled (or waits for a person), and counting the waiting row as due now would put the
    /// timer off by a whole cap.
    func nextDue() throws -> Date? {
        let now = clock.now()
        let schema = store.schema
        let clamp = self.clamp.withLock { $0 }
        var earliest: Date?
        try store.read { txn in
            var heads: [Lane: OperationID?] = [:]
            try txn.scan(schema.schedule) { entry in
                // A row due now (no stored moment) counts as due at this moment.
                let stored = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes) ?? now
                if let earliest, stored >= earliest { return .stop }
                let id = try entry.value()
                guard let state = try schema.state(id, in: txn) else { return .next }
                let head: OperationID?
                if let known = heads[state.lane] {
                    head = known
                } else {
                    head = try schema.laneHead(state.lane, in: txn)
                    heads[state.lane] = head
                }
                guard head == id, let due = clamp.effectiveDue(stored, of: id, now: now) else { return .next }
                if !state.dependsOn.isEmpty, case .waiting = try schema.dependencyGate(of: state, in: txn) { return .next }
                earliest = min(earliest ?? due, due)
                return .next
            }
        }
        return earliest
    }
}
