import OutboxCore
import Synchronization

/// The rows whose attempt this process has in flight, or whose outcome waits to be committed
/// with the next start (counted: a row may be both for a moment).
///
/// A syncing row not held here lost its outcome (the commit recording it failed, or the process
/// that started it ended) and is abandoned by the next pass: so an attempt holds its row before
/// its `attemptStarted` commits, and lets go only once its outcome is committed.
final class InFlightRows: Sendable {
    private struct State {
        var held: [OperationID: Int] = [:]
        /// Who waits for no row to be held (``untilNoneHeld()``).
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// The rows held now.
    var ids: Set<OperationID> { state.withLock { Set($0.held.keys) } }

    /// How many wait in ``untilNoneHeld()`` now: what a test waits for before it lets an attempt end.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Holds `ids` while `body` runs.
    func holding<R>(_ ids: [OperationID], _ body: () async -> R) async -> R {
        hold(ids)
        defer { letGo(ids) }
        return await body()
    }

    func hold(_ ids: [OperationID]) {
        state.withLock { state in for id in ids { state.held[id, default: 0] += 1 } }
    }

    func letGo(_ ids: [OperationID]) {
        let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            for id in ids {
                let count = (state.held[id] ?? 1) - 1
                state.held[id] = count > 0 ? count : nil
            }
            guard state.held.isEmpty else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in released { waiter.resume() }
    }

    /// Returns once no row is held: every attempt in flight (an inline save's too) has ended and
    /// its outcome is committed. Call it once nothing more can start (the worker stopped).
    func untilNoneHeld() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard !state.held.isEmpty else { return true }
                state.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }
}
