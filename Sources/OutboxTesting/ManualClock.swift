public import Foundation
public import Outbox
import Synchronization

/// A clock that moves only when told: the engine's time, made deterministic for tests.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(by: 2)           // resumes every sleeper whose deadline has come
/// clock.set(to: earlier)         // the device clock moved backwards
/// await clock.waitForSleepers(1) // until the worker's timer is armed
/// ```
///
/// Sleepers whose deadline has come are resumed in deadline order. Nothing waits on real time.
public final class ManualClock: OutboxClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    /// - Parameter now: the starting moment (by default 2027-01-15 08:00 UTC).
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(now: now))
    }

    public func now() -> Date {
        state.withLock { $0.now }
    }

    /// Moves the clock forward and resumes the sleepers now due.
    public func advance(by seconds: TimeInterval) {
        precondition(seconds >= 0, "advance(by:) moves forward; use set(to:) to move back")
        move { $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to any moment, earlier ones included, and resumes the sleepers now due.
    public func set(to moment: Date) {
        move { _ in moment }
    }

    /// Moves the clock to the earliest sleeper's deadline, resuming it; answers that deadline,
    /// or `nil` when nobody sleeps.
    @discardableResult
    public func advanceToNextDeadline() -> Date? {
        guard let deadline = nextDeadline else { return nil }
        move { max($0, deadline) }
        return deadline
    }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// The earliest deadline anyone sleeps until.
    public var nextDeadline: Date? {
        state.withLock { $0.sleepers.values.map(\.deadline).min() }
    }

    /// Suspends until at least `count` tasks sleep on this clock: a way to wait for a timer to be
    /// armed without waiting on real time.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, cancelled, waiters) = state.withLock { state -> (Bool, Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (false, true, []) }
                    if deadline <= state.now { return (true, false, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, false, Self.takeReadyWaiters(&state))
                }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if resumeNow {
                    continuation.resume()
                }
                for waiter in waiters { waiter.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    private func move(_ change: (Date) -> Date) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = change(state.now)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for key in due.keys { state.sleepers.removeValue(forKey: key) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    private static func takeReadyWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
        state.sleeperWaiters.removeAll { $0.count <= count }
        return ready
    }
}
