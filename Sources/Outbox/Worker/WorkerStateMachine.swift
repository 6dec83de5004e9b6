import Foundation
import OutboxCore

/// When the worker runs a pass and when its timer fires: a pure state machine.
///
/// Single-flight: a wake while a pass runs does not start a second one; it asks for one more
/// pass after the current one. `drain()` callers wait for a pass that starts after their call. The
/// timer is armed after every pass for the earliest scheduled retry, and re-armed sooner when an
/// enqueue or a retry makes something due. The ``ReplayWorker`` actor carries out the actions.
struct WorkerStateMachine {
    enum Action: Equatable {
        case startPass(WakeReason)
        case resumeDrainers([Int])
        case armTimer(Date, WakeReason)
        case cancelTimer
    }

    /// Whether anything asked the worker to work yet (an app launch, a drain, ...). Until then an
    /// enqueue sends nothing on its own.
    private(set) var isStarted = false
    private(set) var isPassRunning = false
    private(set) var isClosed = false
    /// The moment the timer is armed for.
    private(set) var timerDeadline: Date?
    /// The earliest moment the worker has work at, as the last pass left it (and enqueues and
    /// retries since made sooner): what ``Outbox/nextWake`` says. Unlike the timer it stays while
    /// a pass runs, the one after it included, until that pass says anew.
    private(set) var nextWork: Date?
    /// The earliest moment an enqueue or a retry made due while a pass ran: the pass read its
    /// schedule before, so its own next moment may not hold it.
    private var dueDuringPass: Date?
    private var timerReason: WakeReason = .timer
    /// A pass asked for while one runs, and why.
    private var rerun: WakeReason?
    /// The number of the pass running, or of the last one run.
    private var passNumber = 0
    /// Drain callers, each with the pass whose end it waits for.
    private var drainers: [(id: Int, pass: Int)] = []

    /// A wake signal: app launch, connectivity, foreground, a retryable save.
    mutating func wake(_ reason: WakeReason) -> [Action] {
        guard !isClosed else { return [] }
        isStarted = true
        return requestPass(reason)
    }

    /// `drain()`: a pass now, and the caller waits until a pass that starts after this call ends.
    mutating func drain(waiter: Int) -> [Action] {
        guard !isClosed else { return [.resumeDrainers([waiter])] }
        isStarted = true
        drainers.append((waiter, passNumber + 1))
        return requestPass(.drain)
    }

    /// The pass ended; `nextDue` is the earliest scheduled retry it left (nil: none, or paused).
    ///
    /// The drain callers it ends are resumed last, after the timer is armed (or the next pass
    /// started): a caller that reads `nextWake` as `drain()` returns reads this pass's timer.
    mutating func passFinished(nextDue: Date?) -> [Action] {
        precondition(isPassRunning, "a pass finished while none was running")
        isPassRunning = false
        let done = drainers.filter { $0.pass <= passNumber }.map(\.id)
        drainers.removeAll { $0.pass <= passNumber }
        if !isClosed { nextWork = [nextDue, dueDuringPass].compactMap { $0 }.min() }
        dueDuringPass = nil
        var actions = isClosed ? [] : timerOrRerun(nextDue: nextDue)
        if !done.isEmpty { actions.append(.resumeDrainers(done)) }
        return actions
    }

    /// After a pass: the pass asked for meanwhile, or the timer for `nextDue`.
    private mutating func timerOrRerun(nextDue: Date?) -> [Action] {
        var actions: [Action] = []
        if let reason = rerun {
            rerun = nil
            actions += startPass(reason)
        } else if let nextDue {
            timerDeadline = nextDue
            timerReason = .timer
            actions.append(.armTimer(nextDue, .timer))
        } else if timerDeadline != nil {
            timerDeadline = nil
            actions.append(.cancelTimer)
        }
        return actions
    }

    /// An enqueue or a retry made a row due at `moment`: re-arm the timer if that is sooner.
    mutating func becameDue(at moment: Date, because reason: WakeReason) -> [Action] {
        guard isStarted, !isClosed else { return [] }
        nextWork = nextWork.map { min($0, moment) } ?? moment
        if isPassRunning {
            dueDuringPass = dueDuringPass.map { min($0, moment) } ?? moment
            rerun = Self.rerun(rerun, asked: reason)
            return []
        }
        if let deadline = timerDeadline, deadline <= moment { return [] }
        timerDeadline = moment
        timerReason = reason
        return [.armTimer(moment, reason)]
    }

    /// The timer armed for `deadline` fired. A stale timer (re-armed since) is ignored.
    mutating func timerFired(deadline: Date) -> [Action] {
        guard !isClosed, timerDeadline == deadline else { return [] }
        timerDeadline = nil
        return requestPass(timerReason)
    }

    /// `pull()`: a pass that pulls every feed now (``WakeReason/pullRequested``), and the caller
    /// waits until such a pass, started after this call, ends. A pass asked for meanwhile
    /// becomes one.
    mutating func requestPull(waiter: Int) -> [Action] {
        guard !isClosed else { return [.resumeDrainers([waiter])] }
        isStarted = true
        drainers.append((waiter, passNumber + 1))
        return requestPass(.pullRequested)
    }

    /// The outbox closed: release every drain caller, stop the timer.
    mutating func close() -> [Action] {
        isClosed = true
        rerun = nil
        nextWork = nil
        var actions: [Action] = []
        if !drainers.isEmpty { actions.append(.resumeDrainers(drainers.map(\.id))) }
        drainers.removeAll()
        if timerDeadline != nil {
            timerDeadline = nil
            actions.append(.cancelTimer)
        }
        return actions
    }

    private mutating func requestPass(_ reason: WakeReason) -> [Action] {
        if isPassRunning {
            rerun = Self.rerun(rerun, asked: reason)
            return []
        }
        return startPass(reason)
    }

    /// The reason of the pass asked for while one runs: the first asked, unless a later one pulls
    /// every feed and it does not (a pull asked for is never lost in a pass that would not pull).
    static func rerun(_ pending: WakeReason?, asked reason: WakeReason) -> WakeReason {
        guard let pending else { return reason }
        return reason.forcesPull && !pending.forcesPull ? reason : pending
    }

    private mutating func startPass(_ reason: WakeReason) -> [Action] {
        isPassRunning = true
        passNumber += 1
        var actions: [Action] = [.startPass(reason)]
        if timerDeadline != nil {
            // The pass will arm the timer afresh when it ends.
            timerDeadline = nil
            actions.append(.cancelTimer)
        }
        return actions
    }
}
