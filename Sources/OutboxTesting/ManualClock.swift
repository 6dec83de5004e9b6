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
        /// Seconds since the simulated boot, and the boot.
        var uptimeSeconds: Double = 3600
        var boots: UInt8 = 1
        /// Boot ids are numbered, so a run replays byte for byte.
        var bootID: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, boots)) }
        var timeZone = TimeZone(identifier: "UTC")!
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

    /// The simulated monotonic clock: it moves forward with ``advance(by:)`` and never back (a
    /// ``set(to:)`` moves the wall clock only, as a person changing the device's time does).
    public func uptime() -> Uptime? {
        state.withLock { Uptime(seconds: $0.uptimeSeconds, bootID: $0.bootID) }
    }

    /// The device's time zone, UTC unless set.
    public var timeZone: TimeZone {
        get { state.withLock { $0.timeZone } }
    }

    /// Sets the device's time zone.
    public func setTimeZone(_ zone: TimeZone) {
        state.withLock { $0.timeZone = zone }
    }

    /// The device restarts: a new boot, its uptime starting again near zero. The wall clock
    /// moves on by `downtime` seconds.
    public func reboot(downtime: TimeInterval = 60) {
        state.withLock {
            $0.boots &+= 1
            $0.uptimeSeconds = 30
        }
        advance(by: downtime)
        state.withLock { $0.uptimeSeconds = 30 }
    }

    /// Moves the clock forward and resumes the sleepers now due.
    public func advance(by seconds: TimeInterval) {
        precondition(seconds >= 0, "advance(by:) moves forward; use set(to:) to move back")
        state.withLock { $0.uptimeSeconds += seconds }
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
        // Time passes: the uptime moves on with the wall clock.
        advance(by: max(0, deadline.timeIntervalSince(now())))
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
