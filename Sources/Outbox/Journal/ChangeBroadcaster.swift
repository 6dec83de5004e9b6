import Foundation
import OutboxCore
import Synchronization

/// One reader's buffer: commits append under the policy, the reader takes from the front or
/// waits for the next.
final class ChangeSubscription: Sendable {
    private struct State {
        /// Waiting from `head` on: taking one moves `head`, so a long unbounded backlog is not
        /// shifted down at every take; the taken are dropped once they are half the array.
        var pending: [OutboxChange] = []
        var head = 0
        var waiter: CheckedContinuation<OutboxChange?, Never>?
        var isFinished = false

        var waiting: Int { pending.count - head }

        mutating func take() -> OutboxChange? {
            guard head < pending.count else { return nil }
            defer { skipFirst() }
            return pending[head]
        }

        /// Passes over the first waiting change (taken, or merged into the next).
        mutating func skipFirst() {
            head += 1
            if head * 2 >= pending.count {
                pending.removeFirst(head)
                head = 0
            }
        }
    }

    private let state = Mutex(State())
    private let buffering: ChangeBuffering
    private let ended: @Sendable () -> Void

    init(buffering: ChangeBuffering, ended: @escaping @Sendable () -> Void) {
        self.buffering = buffering
        self.ended = ended
    }

    deinit { ended() }

    func deliver(_ change: OutboxChange) {
        let waiter = state.withLock { state -> CheckedContinuation<OutboxChange?, Never>? in
            guard !state.isFinished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending.append(change)
            if case .coalescing(let limit) = buffering, state.waiting > max(1, limit) {
                state.pending[state.head + 1] = state.pending[state.head].merged(with: state.pending[state.head + 1])
                state.skipFirst()
            }
            return nil
        }
        waiter?.resume(returning: change)
    }

    /// The oldest change waiting, or the next commit's; `nil` once the outbox closed (after what
    /// was waiting) or the reading task is cancelled.
    func next() async -> OutboxChange? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<OutboxChange?, Never>) in
                let ready = state.withLock { state -> OutboxChange?? in
                    if let next = state.take() { return .some(next) }
                    if state.isFinished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the stream: the reader takes what waits, then `nil`.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<OutboxChange?, Never>? in
            state.isFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

/// Hands every commit's change to each subscriber.
final class ChangeBroadcaster: Sendable {
    /// A subscription the broadcaster does not keep alive: its reader does.
    private struct Entry: @unchecked Sendable {
        // Read and written only under the broadcaster's lock.
        weak var subscription: ChangeSubscription?
    }

    private struct Subscribers {
        var entries: [Int: Entry] = [:]
        /// Set once the outbox closed: a stream asked for later ends at once.
        var isFinished = false
    }

    private let subscribers = Mutex(Subscribers())
    private let nextID = Atomic<Int>(0)
    /// The records a commit's events may have changed (read once per commit, only when someone
    /// listens).
    private let recordsTouched: @Sendable ([JournalEvent]) -> Set<RecordKey>

    init(recordsTouched: @escaping @Sendable ([JournalEvent]) -> Set<RecordKey> = { _ in [] }) {
        self.recordsTouched = recordsTouched
    }

    func subscribe(buffering: ChangeBuffering) -> OutboxChanges {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let subscription = ChangeSubscription(buffering: buffering) { [weak self] in
            _ = self?.subscribers.withLock { $0.entries.removeValue(forKey: id) }
        }
        let open = subscribers.withLock { subscribers in
            guard !subscribers.isFinished else { return false }
            subscribers.entries[id] = Entry(subscription: subscription)
            return true
        }
        if !open { subscription.finish() }
        return OutboxChanges(subscription: subscription)
    }

    func publish(_ events: [JournalEvent]) {
        let live = subscribers.withLock { $0.entries.values.compactMap(\.subscription) }
        // Nobody listening: the change is not even built.
        guard !live.isEmpty, let change = OutboxChange(events: events, records: recordsTouched(events)) else { return }
        for subscription in live { subscription.deliver(change) }
    }

    /// The subscriptions a reader still holds.
    var subscriptionCount: Int {
        subscribers.withLock { $0.entries.values.filter { $0.subscription != nil }.count }
    }

    /// Ends every stream: the outbox closed.
    func finish() {
        let all = subscribers.withLock { subscribers in
            subscribers.isFinished = true
            defer { subscribers.entries.removeAll() }
            return subscribers.entries.values.compactMap(\.subscription)
        }
        for subscription in all { subscription.finish() }
    }
}
