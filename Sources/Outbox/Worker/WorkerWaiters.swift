import Foundation
import OutboxCore

/// The callers waiting on the worker's passes, apart from the tasks that run them: `drain()`
/// callers (each with what the passes did while it waited), `pull()` callers (answered with the
/// report of the pass they waited for) and `waitUntilIdle()` callers. The ``ReplayWorker`` actor
/// owns one and mutates it only from its own isolation.
struct WorkerWaiters {
    var drainers: [Int: CheckedContinuation<Void, Never>] = [:]
    /// What the passes did while each drain caller waited.
    var tallies: [Int: Tally] = [:]
    var pullers: [Int: CheckedContinuation<Outbox.PullReport?, Never>] = [:]
    var idle: [CheckedContinuation<Void, Never>] = []
    /// What the last pass's pull did.
    private(set) var lastPull: Outbox.PullReport?
    private var nextWaiter = 0

    /// A new waiter's id, which the state machine resumes it by.
    mutating func nextID() -> Int {
        defer { nextWaiter += 1 }
        return nextWaiter
    }

    /// A pass ended: every waiting drain counts it, and its pull answers the pullers next resumed.
    mutating func passFinished(_ outcome: ReplayPass.Outcome) {
        lastPull = outcome.pull
        for id in tallies.keys { tallies[id]?.add(outcome) }
    }

    /// Resumes the drainers and pullers the state machine names; a puller of a closed worker
    /// gets `nil`.
    mutating func resume(_ ids: [Int], closed: Bool) {
        for id in ids {
            drainers.removeValue(forKey: id)?.resume()
            pullers.removeValue(forKey: id)?.resume(returning: closed ? nil : lastPull ?? Outbox.PullReport(feeds: []))
        }
    }

    /// Resumes every `waitUntilIdle()` caller.
    mutating func resumeIdle() {
        let waiting = idle
        idle.removeAll()
        for waiter in waiting { waiter.resume() }
    }

    /// What the passes did while a drain caller waited.
    struct Tally: Sendable {
        var passes = 0
        var attempts = 0
        var cancelled = 0
        var cut: DrainBudget.Stop?
        var pull: Outbox.PullReport?

        mutating func add(_ outcome: ReplayPass.Outcome) {
            passes += 1
            attempts += outcome.attempts
            cancelled += outcome.cancelled
            cut = outcome.cut ?? cut
            if let report = outcome.pull { pull = report }
        }

        /// Adds another drain's passes: the latest cut and pull win, as for one pass.
        mutating func add(_ other: Tally) {
            passes += other.passes
            attempts += other.attempts
            cancelled += other.cancelled
            cut = other.cut ?? cut
            if let report = other.pull { pull = report }
        }
    }
}
