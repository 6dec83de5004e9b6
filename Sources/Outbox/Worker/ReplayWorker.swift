import Foundation
import OutboxCore
import Synchronization

/// Carries out the ``WorkerStateMachine``'s actions: runs passes, arms the timer on the clock,
/// and resumes `drain()` callers.
actor ReplayWorker {
    private let pass: ReplayPass
    private let clock: any OutboxClock
    private var machine = WorkerStateMachine()
    private var passTask: Task<Void, Never>?
    private var timerTask: Task<Void, Never>?
    private var drainers: [Int: CheckedContinuation<Void, Never>] = [:]
    /// `pull()` callers, resumed like drainers with the report of the pass they waited for.
    private var pullers: [Int: CheckedContinuation<PullReport?, Never>] = [:]
    /// What the last pass's pull did.
    private var lastPull: PullReport?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private var nextDrainerID = 0
    /// The timer's moment, readable synchronously (`Outbox.nextWake`).
    nonisolated let armedTimer = Mutex<Date?>(nil)

    init(pass: ReplayPass, clock: any OutboxClock) {
        self.pass = pass
        self.clock = clock
    }

    func wake(_ reason: WakeReason) {
        perform(machine.wake(reason))
    }

    /// Runs a pass that pulls every feed (or waits for the one running, then one such more) and
    /// returns its pull's report; `nil` when the worker closed first.
    func pull() async -> PullReport? {
        let id = nextDrainerID
        nextDrainerID += 1
        return await withCheckedContinuation { continuation in
            pullers[id] = continuation
            perform(machine.requestPull(waiter: id))
        }
    }

    /// Runs a pass (or waits for the one running, then one more) and returns when it ends.
    func drain() async {
        let id = nextDrainerID
        nextDrainerID += 1
        await withCheckedContinuation { continuation in
            drainers[id] = continuation
            perform(machine.drain(waiter: id))
        }
    }

    /// An enqueue or a retry made a row due at `moment`.
    func becameDue(at moment: Date, because reason: WakeReason) {
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
    }

    /// Stops the worker for good and waits for the pass in progress to end, so every attempt in
    /// flight has its outcome recorded.
    func stop() async {
        pass.stop()
        perform(machine.close())
        timerTask?.cancel()
        await passTask?.value
    }

    /// Returns once no pass runs or is asked for and the timer is not due: everything the
    /// worker was going to do at this moment of the clock is done.
    func waitUntilIdle() async {
        if isIdle { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    private var isIdle: Bool {
        guard !machine.isPassRunning else { return false }
        guard let deadline = machine.timerDeadline, !machine.isClosed else { return true }
        return deadline > clock.now()
    }

    private func passFinished(_ outcome: ReplayPass.Outcome) {
        passTask = nil
        lastPull = outcome.pull
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
                for id in ids {
                    drainers.removeValue(forKey: id)?.resume()
                    pullers.removeValue(forKey: id)?.resume(returning: machine.isClosed ? nil : lastPull ?? PullReport(feeds: []))
                }
            case .armTimer(let deadline, _):
                timerTask?.cancel()
                armedTimer.withLock { $0 = deadline }
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
                armedTimer.withLock { $0 = nil }
            }
        }
        if machine.timerDeadline == nil { armedTimer.withLock { $0 = nil } }
        if isIdle, !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }
    }
}
