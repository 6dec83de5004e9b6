import Foundation
import OutboxCore
import Synchronization

/// Carries out the ``WorkerStateMachine``'s actions: runs passes, arms the timer on the clock,
/// and resumes `drain()` callers.
actor ReplayWorker {
    private let pass: ReplayPass
    private let clock: any OutboxClock
    private var machine = WorkerStateMachine()
    /// The callers waiting on passes: `drain()`, `pull()`, `waitUntilIdle()`.
    private var waiters = WorkerWaiters()
    // The tasks the worker runs: a pass, the timer, and a budgeted drain's deadline.
    private var passTask: Task<Void, Never>?
    private var timerTask: Task<Void, Never>?
    private var deadlineTask: Task<Void, Never>?
    /// The moment the worker next has work, readable synchronously (`Outbox.nextWake`).
    nonisolated let armedTimer = Mutex<Date?>(nil)

    init(pass: ReplayPass, clock: any OutboxClock) {
        self.pass = pass
        self.clock = clock
    }

    func wake(_ reason: WakeReason) {
        resumeFromExpiry(reason)
        perform(machine.wake(reason))
    }

    /// The app's wakes and drains give the worker its time back after an expiry; its own timer
    /// does not (the system decides when a suspended app runs).
    private func resumeFromExpiry(_ reason: WakeReason) {
        guard reason != .timer else { return }
        let wasExpired = pass.budget.withLock { budget in
            defer { budget.expired = false }
            return budget.expired
        }
        // The timer the expiry left unarmed runs again.
        if wasExpired, timerTask == nil, let deadline = machine.timerDeadline { perform([.armTimer(deadline, .timer)]) }
    }

    /// Drains within the time the system gave, up to `deadline` of the clock: passes run while
    /// rows are due and the time left covers a request; at the deadline, or at ``expire()``, the
    /// requests in flight are cancelled and recorded, and nothing more starts until the next
    /// wake or drain.
    func drain(until deadline: Date) async -> WorkerWaiters.Tally {
        resumeFromExpiry(.drain)
        pass.budget.withLock { $0.deadline = deadline }
        deadlineTask?.cancel()
        deadlineTask = Task { [clock] in
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return
            }
            self.expire()
        }
        var total = WorkerWaiters.Tally()
        while !machine.isClosed {
            let tally = await drainOnce()
            total.add(tally)
            // Another pass only when this one ended with rows due now and time left.
            guard tally.cut == nil, tally.attempts > 0, let next = machine.nextWork, next <= clock.now(),
                  pass.budgetStop() == nil else { break }
        }
        deadlineTask?.cancel()
        deadlineTask = nil
        // Taken back while a pass had nothing of its own to cut (a request cancelled as it ended).
        if total.cut == nil, pass.budget.withLock({ $0.expired }) { total.cut = .expired }
        // The time given is over: the system is about to suspend the app.
        pass.budget.withLock { $0 = DrainBudget(deadline: nil, expired: true) }
        armedTimer.withLock { $0 = machine.nextWork }
        timerTask?.cancel()
        timerTask = nil
        return total
    }

    /// The system takes its time back: nothing more starts, the requests in flight are cancelled
    /// (each recorded as no response, `cancelled`), and the pass ends once they are recorded.
    func expire() {
        pass.budget.withLock { $0.expired = true }
        passTask?.cancel()
        timerTask?.cancel()
        timerTask = nil
    }

    /// Runs a pass that pulls every feed (or waits for the one running, then one such more) and
    /// returns its pull's report; `nil` when the worker closed first.
    func pull() async -> Outbox.PullReport? {
        resumeFromExpiry(.pullRequested)
        let id = waiters.nextID()
        return await withCheckedContinuation { continuation in
            waiters.pullers[id] = continuation
            perform(machine.requestPull(waiter: id))
        }
    }

    /// Runs a pass (or waits for the one running, then one more) and returns when it ends.
    func drain() async {
        _ = await drainOnce()
    }

    /// A pass (or the one running, then one more), and what the passes did meanwhile.
    private func drainOnce() async -> WorkerWaiters.Tally {
        resumeFromExpiry(.drain)
        let id = waiters.nextID()
        waiters.tallies[id] = WorkerWaiters.Tally()
        await withCheckedContinuation { continuation in
            waiters.drainers[id] = continuation
            perform(machine.drain(waiter: id))
        }
        return waiters.tallies.removeValue(forKey: id) ?? WorkerWaiters.Tally()
    }

    /// An enqueue or a retry made a row due at `moment`.
    func becameDue(at moment: Date, because reason: WakeReason) {
        // The member's own action (an enqueue, a retry) means the app runs again.
        resumeFromExpiry(reason)
        if moment <= clock.now() { flagWrite() }
        perform(machine.becameDue(at: moment, because: reason))
    }

    /// A write is due while a pass runs: its pull gives way after the page in hand (the machine
    /// asks for the next pass at once).
    private func flagWrite() {
        if machine.isPassRunning, machine.isStarted { pass.writesWaiting.store(true, ordering: .relaxed) }
    }

    /// Stops the timer and any pass; releases every drain caller.
    func shutdown() {
        perform(machine.close())
        passTask?.cancel()
        timerTask?.cancel()
        deadlineTask?.cancel()
    }

    /// Stops the worker for good and waits for the pass in progress to end, so every attempt in
    /// flight has its outcome recorded.
    func stop() async {
        pass.stop()
        perform(machine.close())
        timerTask?.cancel()
        deadlineTask?.cancel()
        await passTask?.value
    }

    /// Returns once no pass runs or is asked for and the timer is not due: everything the
    /// worker was going to do at this moment of the clock is done.
    func waitUntilIdle() async {
        if isIdle { return }
        await withCheckedContinuation { waiters.idle.append($0) }
    }

    private var isIdle: Bool {
        guard !machine.isPassRunning else { return false }
        // Expired, no timer runs: what is due waits for the system to give time again.
        if pass.budget.withLock({ $0.expired }) { return true }
        guard let deadline = machine.timerDeadline, !machine.isClosed else { return true }
        return deadline > clock.now()
    }

    private func passFinished(_ outcome: ReplayPass.Outcome) {
        passTask = nil
        waiters.passFinished(outcome)
        // A pass the budget or the expiry cut short: the time given is over, and what is due is
        // the system's to schedule, not this process's timer.
        if outcome.cut != nil { pass.budget.withLock { $0.expired = true } }
        perform(machine.passFinished(nextDue: outcome.next))
    }

    private func timerFired(_ deadline: Date) {
        perform(machine.timerFired(deadline: deadline))
    }

    private func perform(_ actions: [WorkerStateMachine.Action]) {
        for action in actions {
            switch action {
            case .startPass(let reason):
                passTask = Task {
                    let outcome = await pass.run(trigger: reason)
                    self.passFinished(outcome)
                }
            case .resumeDrainers(let ids):
                waiters.resume(ids, closed: machine.isClosed)
            case .armTimer(let deadline, _):
                timerTask?.cancel()
                timerTask = nil
                // Expired, the app is being suspended: the moment is the system's to schedule
                // (``Outbox/nextWake``); no timer of this process runs it.
                if pass.budget.withLock({ $0.expired }) { continue }
                timerTask = Task { [clock] in
                    do {
                        try await clock.sleep(until: deadline)
                    } catch {
                        return
                    }
                    self.timerFired(deadline)
                }
            case .cancelTimer:
                timerTask?.cancel()
                timerTask = nil
            }
        }
        // What `nextWake` reads: the machine's word, kept while a pass (a rerun too) runs.
        armedTimer.withLock { $0 = machine.nextWork }
        if isIdle { waiters.resumeIdle() }
    }
}
