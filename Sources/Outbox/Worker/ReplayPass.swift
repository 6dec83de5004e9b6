import Foundation
import OutboxCore
import OutboxStorage
import Synchronization

/// One pass of the worker: finds the queued rows whose moment has come, sends those the
/// eligibility rule lets go (each through ``ReplayAttempt``, or several through
/// ``BatchAttempt``), uploads the queued writes' files beside them (``AttachmentUploader``),
/// then pulls the change feeds due (``PullStage``), and says when the next pass should run.
final class ReplayPass: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let attempts: ReplayAttempt
    let configuration: OutboxConfiguration
    let log: EngineLog
    /// The guard against a clock moved backwards: rows seen due beyond the cap, and since when.
    let clamp: Mutex<ClockSkewClamp>
    /// One business's feed pulled page by page (also ``Outbox``'s page applier).
    let puller: FeedPuller
    /// The pass's pull, after its sends; `nil` without a pull configuration.
    let pulls: PullStage?
    /// The attachments' queue, run beside the sends.
    let uploads: AttachmentUploader
    /// Set when a write became due while the pass runs: a pull gives way to it after its page.
    let writesWaiting = Atomic<Bool>(false)
    /// The time a budgeted drain was given, and whether the system took it back.
    let budget = Mutex(DrainBudget())

    init(store: JournalStore, room: JournalRoom, attempts: ReplayAttempt, configuration: OutboxConfiguration, files: AttachmentFiles,
         log: EngineLog) {
        self.store = store
        self.room = room
        self.attempts = attempts
        self.configuration = configuration
        self.log = log
        self.clamp = Mutex(ClockSkewClamp(policy: configuration.retryPolicy))
        let puller = FeedPuller(store: store, room: room, transport: attempts.transport, configuration: configuration,
                                sessions: attempts.sessions, routes: attempts.routes, log: log)
        self.puller = puller
        self.pulls = configuration.pull.map { PullStage(puller: puller, settings: $0) }
        self.uploads = AttachmentUploader(store: store, room: room, transport: attempts.transport, configuration: configuration,
                                          files: files, log: log)
    }

    var clock: any OutboxClock { configuration.clock }
    private var policy: OperationTypePolicy.RetryPolicy { configuration.retryPolicy }

    /// Starts no more rows, in this pass or any other; attempts in flight finish and are recorded.
    func stop() {
        attempts.stop()
    }

    /// Why no more requests may start now: the drain's budget is spent, or the system took its
    /// time back (the pass's task cancelled counts as that); `nil` when they may.
    func budgetStop() -> DrainBudget.Stop? {
        if Task.isCancelled { return .expired }
        let now = clock.now()
        return budget.withLock { $0.stop(at: now, requestSeconds: configuration.attemptBudgetSeconds) }
    }

    // MARK: A pass

    /// What a pass came to: when the next should run, and what its pull did (`nil` without a
    /// pull configuration).
    struct Outcome: Sendable {
        var next: Date?
        var pull: Outbox.PullReport?
        /// Attempts that ran and were recorded, and of them those the expiry interrupted.
        var attempts = 0
        var cancelled = 0
        /// What cut the pass short: the drain's budget, or the system taking its time back.
        var cut: DrainBudget.Stop?
    }

    /// What a pass's sending came to.
    struct Progress {
        var sent = 0
        /// No more rows are started: the session is gone, a 401 paused the worker, the worker
        /// stopped, or a row got no response.
        var halted = false
        /// The row whose attempt got no response: the pass stops there, and the timer follows
        /// that row's backoff.
        var offline: OperationID?
        /// Attempts the expiry interrupted (recorded as no response, `cancelled`).
        var cancelled = 0
        /// What stopped the pass from starting more: the drain's budget, or the expiry.
        var cut: DrainBudget.Stop?

        /// Takes in a second round of sending in the same pass.
        mutating func absorb(_ more: Progress) {
            sent += more.sent
            halted = halted || more.halted
            offline = offline ?? more.offline
            cancelled += more.cancelled
            cut = cut ?? more.cut
        }
    }

    /// Sends every queued row whose moment has come, in journal order, one at a time per lane
    /// and up to `maxConcurrentLanes` lanes at once, then pulls the feeds due. Stops starting
    /// rows when the session is gone or a 401 paused the worker. The pull comes after the sends,
    /// so a failed pull never stops this pass's writes and their answers land first.
    /// - Returns: when the timer should run the next pass: the earliest scheduled retry left or
    ///   feed due; `nil` when nothing is scheduled or a 401 paused the worker. A pass the session
    ///   halted (signed out, another account), or one that could not read whether the worker is
    ///   paused or what is scheduled, asks again one cap later; a pass that sent nothing never
    ///   asks for another at once: the worker never spins.
    func run(trigger: WakeReason) async -> Outcome {
        writesWaiting.store(false, ordering: .relaxed)
        switch isPaused() {
        case true?: return Outcome(next: ended(trigger, Progress(), next: nil, because: "paused"), pull: pulls?.pausedReport())
        case nil: return Outcome(next: ended(trigger, Progress(), next: poll(), because: "unreadable"), pull: pulls.map { _ in Outbox.PullReport(feeds: []) })
        case false?: break
        }
        if let cut = budgetStop() {
            // The system took its time back, or too little is left for a request: nothing starts.
            var progress = Progress()
            progress.cut = cut
            return Outcome(next: nextPass(after: progress, pulls: nil, trigger: trigger), pull: pulls.map { _ in Outbox.PullReport(feeds: []) }, cut: cut)
        }
        log.log(.debug, "pass started", [EngineLog.Key.trigger: .string(trigger.rawValue)])
        await attempts.sessions.recordIfChanged()
        await abandonOrphans()
        let sentFrom = pulls == nil ? nil : lastSeq()
        // The files upload beside the sends: a large photo never holds up another record's write.
        async let uploaded = uploads.run { [attempts] in attempts.isStopped || self.budgetStop() != nil }
        var progress = await sendDue(trigger: trigger)
        let upload = await uploaded
        if upload.completed > 0, !progress.halted, progress.cut == nil {
            // Writes whose files just completed may go now, in this pass.
            let more = await sendDue(trigger: trigger)
            progress.absorb(more)
        }
        if let sentFrom, let pulls { pulls.owe(awaitingTheirValue(after: sentFrom)) }
        let pulled = await pull(trigger: trigger)
        if progress.cut == nil, let stop = pulled?.report.feeds.lazy.compactMap(\.stoppedBy).compactMap(DrainBudget.Stop.init).first {
            progress.cut = stop
        }
        let following = [pulled?.next, upload.next].compactMap { $0 }.min()
        return Outcome(next: nextPass(after: progress, pulls: following, trigger: trigger), pull: pulled?.report,
                       attempts: progress.sent, cancelled: progress.cancelled, cut: progress.cut)
    }

    /// The journal's last seq, or `nil` (logged) when it cannot be read: then no feed is owed.
    private func lastSeq() -> JournalSequence? {
        do {
            return try store.queries.lastSeq()
        } catch {
            log.problem(.journalRead, "could not read the journal's last seq; a write's feed waits for its freshness", error: error)
            return nil
        }
    }

    /// The businesses of the records whose writes this pass synced without the answer
    /// describing them (`awaitingServerValue`): only their feed brings the server's value back,
    /// so the same pass pulls it, rather than leaving the change "confirmed" until the feed's
    /// freshness period passes. Read from the pass's own events.
    private func awaitingTheirValue(after start: JournalSequence) -> Set<String> {
        do {
            var businesses: Set<String> = []
            var from = start.next
            while true {
                let events = try store.queries.events(from: from, limit: 500)
                for event in events {
                    guard case .attemptFinished = event.body, let id = event.operationID,
                        let state = try store.queries.operationState(id), state.status == .synced
                    else { continue }
                    for key in state.awaitingServerValue { businesses.insert(key.business) }
                }
                guard let last = events.last, events.count == 500 else { return businesses }
                from = last.seq.next
            }
        } catch {
            log.problem(.journalRead, "could not read the pass's outcomes; a write's feed waits for its freshness", error: error)
            return []
        }
    }

    /// The pass's pull, after its sends: none once the worker stopped, none while a 401 (this
    /// pass's or earlier) holds the worker paused.
    private func pull(trigger: WakeReason) async -> PullStage.Result? {
        guard let pulls else { return nil }
        guard !attempts.isStopped else { return PullStage.Result(report: Outbox.PullReport(feeds: []), next: nil) }
        switch isPaused() {
        case true?: return PullStage.Result(report: pulls.pausedReport(), next: nil)
        case nil: return PullStage.Result(report: Outbox.PullReport(feeds: []), next: poll())
        case false?: break
        }
        return await pulls.run(trigger: trigger) {
            // Stopped (a sign-out): the pull ends after the page in hand, so the stop never
            // waits for a long first sync.
            if self.attempts.isStopped { return .signedOut }
            if let stop = self.budgetStop() { return Outbox.PullStop(stop) }
            return self.writesWaiting.load(ordering: .relaxed) ? .writesWaiting : nil
        }
    }

    /// The pass's sending: lane heads offered by the plan, checked by the eligibility rule,
    /// started up to the limit, and, as each attempt ends, what it freed offered in turn.
    private func sendDue(trigger: WakeReason) async -> Progress {
        // With batching, one batch is in flight at a time, holding as many lane heads as it may.
        let batching = configuration.batching
        let slots = batching == nil ? configuration.maxConcurrentLanes : 1
        // Each outcome rides with the next attempt's start (a batch commits its own together).
        let carry: CarriedOutcomes? = batching == nil ? CarriedOutcomes() : nil
        return await withTaskGroup(of: [(candidate: PassPlan.Candidate, report: ReplayAttempt.Report)].self) { group in
            var plan = PassPlan()
            plan.add(dueCandidatesOrNone())
            var progress = Progress()
            var inFlight = 0
            // Rows whose dependency is not synced yet: offered again when an attempt ends.
            var deferred: [PassPlan.Candidate] = []
            while true {
                if attempts.isStopped { progress.halted = true }
                // Out of budget or expired: nothing more starts, and the attempts in flight (their
                // requests cancelled by an expiry) are awaited, so each has its outcome recorded.
                if progress.cut == nil, let cut = budgetStop() {
                    progress.halted = true
                    progress.cut = cut
                }
                while !progress.halted, inFlight < slots {
                    let ready = await takeReady(&plan, deferred: &deferred, carry: carry, upTo: batching?.maxOperations ?? 1)
                    guard !ready.isEmpty else { break }
                    inFlight += 1
                    launch(ready, trigger: trigger, carry: carry, in: &group)
                }
                // No start took them: committed alone before the pass waits on anything.
                _ = await committedCarried(carry)
                if inFlight == 0 {
                    // Everything planned is done: look once more for rows that became due meanwhile.
                    let seen = plan.seen.count
                    if !progress.halted { plan.add(dueCandidatesOrNone()) }
                    if progress.halted || plan.seen.count == seen { break }
                    continue
                }
                guard let finished = await group.next() else { break }
                inFlight -= 1
                for done in finished { settle(done.candidate, done.report, plan: &plan, progress: &progress) }
                if !progress.halted { await reoffer(&deferred, to: &plan, carry: carry) }
            }
            _ = await committedCarried(carry)
            return progress
        }
    }

    /// The plan's next rows that the rule lets go, up to `limit` (one lane each); rows held by
    /// an unsynced dependency are set aside in `deferred`, a lane held by its head is dropped,
    /// and a row whose dependency ended is blocked.
    private func takeReady(_ plan: inout PassPlan, deferred: inout [PassPlan.Candidate], carry: CarriedOutcomes?,
                           upTo limit: Int) async -> [PassPlan.Candidate] {
        var ready: [PassPlan.Candidate] = []
        while ready.count < limit, let candidate = plan.next() {
            var verdict = verdict(on: candidate)
            // An outcome still carried may be what holds the row back: committed, it is read again.
            if verdict.waitingOn != nil, await committedCarried(carry) { verdict = self.verdict(on: candidate) }
            switch verdict {
            case .ready:
                ready.append(candidate)
            case .waiting(.dependency), .waiting(.recordWrite):
                // What it waits for may go in this pass: offered again when an attempt ends.
                deferred.append(candidate)
                plan.dropLane(candidate.lane)
            case .dependencyEnded, .claimMayBeForgotten:
                await recordBlocked(candidate, by: verdict)
                plan.dropLane(candidate.lane)
            case .waiting, .notQueued:
                plan.dropLane(candidate.lane)
            }
        }
        return ready
    }

    /// Starts one task sending `ready`: a batch, or a single row carrying the outcomes waiting.
    private func launch(_ ready: [PassPlan.Candidate], trigger: WakeReason, carry: CarriedOutcomes?,
                        in group: inout TaskGroup<[(candidate: PassPlan.Candidate, report: ReplayAttempt.Report)]>) {
        if let batching = configuration.batching {
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

    /// Takes in one finished attempt: its lane may go on; no response stops the pass.
    private func settle(_ candidate: PassPlan.Candidate, _ report: ReplayAttempt.Report, plan: inout PassPlan, progress: inout Progress) {
        plan.finished(lane: candidate.lane)
        if case .finished(let classification, _, _) = report {
            progress.sent += 1
            if case .noResponse(.cancelled) = classification.outcome { progress.cancelled += 1 }
            if case .noResponse(let failure) = classification.outcome, failure != .missingFromBatch, progress.offline == nil {
                progress.offline = candidate.id
                progress.halted = true
            }
        }
        if report.haltsPass { progress.halted = true }
    }

    /// Offers again the rows set aside for a dependency, now that an attempt ended: the one
    /// they wait for may have synced.
    private func reoffer(_ deferred: inout [PassPlan.Candidate], to plan: inout PassPlan, carry: CarriedOutcomes?) async {
        guard !deferred.isEmpty else { return }
        // The outcome that lets them go may still be carried.
        _ = await committedCarried(carry)
        let waiting = deferred
        deferred = []
        for candidate in waiting {
            switch verdict(on: candidate) {
            case .waiting(.dependency), .waiting(.recordWrite): deferred.append(candidate)
            default: plan.readd(candidate)
            }
        }
    }

    /// When the next pass should run, after this one's sending and pulling (`pulls`: when the
    /// next feed is due).
    private func nextPass(after progress: Progress, pulls: Date?, trigger: WakeReason) -> Date? {
        func earliest(_ next: Date?) -> Date? { [next, pulls].compactMap { $0 }.min() }
        switch isPaused() {
        case true?: return ended(trigger, progress, next: nil, because: "paused")
        case nil: return ended(trigger, progress, next: poll(), because: "unreadable")
        case false?: break
        }
        if progress.cut != nil {
            // Cut short by the drain's budget or the expiry: the next pass is the system's to
            // schedule (``Outbox/nextWake``): when the earliest row or feed is due, even now.
            do {
                return ended(trigger, progress, next: earliest(try nextDue()), because: "budget")
            } catch {
                log.problem(.journalRead, "could not read the schedule; the next pass runs one cap from now", error: error)
                return ended(trigger, progress, next: poll(), because: "unreadable")
            }
        }
        if let offline = progress.offline {
            // No network: the other due rows stay due, unattempted, and the timer follows the
            // attempted row's backoff instead of spinning on them (or a row scheduled before it).
            let next: Date
            do {
                let backoff = try store.queries.operationState(offline)?.nextAttemptAt ?? poll()
                next = min(backoff, try nextDue(after: clock.now()) ?? backoff)
            } catch {
                log.problem(.journalRead, "could not read when the unanswered row is due; the next pass runs one cap from now", error: error, operation: offline)
                next = poll()
            }
            return ended(trigger, progress, next: earliest(next), because: "no_response")
        }
        if progress.halted { return ended(trigger, progress, next: poll(), because: "halted") }
        let next: Date?
        do {
            next = try nextDue()
        } catch {
            log.problem(.journalRead, "could not read the schedule; the next pass runs one cap from now", error: error)
            return ended(trigger, progress, next: poll(), because: "unreadable")
        }
        guard let next else { return ended(trigger, progress, next: pulls, because: pulls == nil ? "nothing_scheduled" : "feed_due") }
        return ended(trigger, progress, next: earliest(progress.sent == 0 && next <= clock.now() ? poll() : next), because: "scheduled")
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
    private func ended(_ trigger: WakeReason, _ progress: Progress, next: Date?, because reason: String) -> Date? {
        var metadata: OutboxLogger.Metadata = [
            EngineLog.Key.trigger: .string(trigger.rawValue),
            EngineLog.Key.sent: "\(progress.sent)",
            EngineLog.Key.halted: "\(progress.halted || progress.offline != nil)",
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
}
