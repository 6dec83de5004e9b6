import Foundation
import OutboxCore
import Synchronization

/// What one commit changed.
public struct OutboxChange: Sendable, Equatable {
    /// The seqs the commit appended.
    public var seqs: ClosedRange<JournalSequence>
    /// The operations it touched.
    public var operations: Set<OperationID>
    /// The kinds of event it appended.
    public var kinds: Set<JournalEventKind>
    /// The member's records whose view it may have changed: those its writes changed (any change
    /// of their status moves the view), confirmed, wrote locally or acknowledged.
    public var records: Set<RecordKey>
    /// How many later commits were merged into this change because its reader fell behind
    /// (``ChangeBuffering/coalescing(limit:)``): its seqs, operations, kinds and records are the
    /// union of them all. 0 for one commit.
    public var coalesced = 0

    public init(seqs: ClosedRange<JournalSequence>, operations: Set<OperationID>, kinds: Set<JournalEventKind>, records: Set<RecordKey> = []) {
        self.seqs = seqs
        self.operations = operations
        self.kinds = kinds
        self.records = records
    }

    init?(events: [JournalEvent], records: Set<RecordKey>) {
        guard let first = events.first?.seq, let last = events.last?.seq else { return nil }
        self.seqs = first...last
        self.operations = Set(events.compactMap(\.operationID))
        self.kinds = Set(events.map(\.kind))
        self.records = records
    }

    /// This change and `later` as one: what a reader that missed both must react to.
    func merged(with later: OutboxChange) -> OutboxChange {
        var merged = OutboxChange(seqs: min(seqs.lowerBound, later.seqs.lowerBound)...max(seqs.upperBound, later.seqs.upperBound),
                                  operations: operations.union(later.operations), kinds: kinds.union(later.kinds),
                                  records: records.union(later.records))
        merged.coalesced = coalesced + later.coalesced + 1
        return merged
    }
}

/// How a stream of ``Outbox/changes(buffering:)`` holds the changes its reader has not taken yet.
public enum ChangeBuffering: Sendable, Equatable {
    /// At most `limit` changes wait; past it the two oldest are merged into one
    /// (``OutboxChange/coalesced`` counts the commits merged away), so a reader that falls behind
    /// holds bounded memory and still learns of every operation and record a commit touched.
    case coalescing(limit: Int)
    /// Every commit its own change, however far the reader falls behind (memory grows with it).
    case unbounded

    /// The newest 64 apart, the older merged.
    public static let standard = ChangeBuffering.coalescing(limit: 64)
}

/// The changes of every commit from the moment ``Outbox/changes(buffering:)`` was called, until
/// the outbox closes. One reader takes them (a second iterator shares the same buffer); dropping
/// the sequence and its iterator ends the subscription.
public struct OutboxChanges: AsyncSequence, Sendable {
    public typealias Element = OutboxChange
    let subscription: ChangeSubscription

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: ChangeSubscription
        public mutating func next() async -> OutboxChange? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: subscription) }
}

/// One reader's buffer: commits append under the policy, the reader takes from the front or
/// waits for the next.
final class ChangeSubscription: Sendable {
    private struct State {
        var pending: [OutboxChange] = []
        var waiter: CheckedContinuation<OutboxChange?, Never>?
        var isFinished = false
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
            if case .coalescing(let limit) = buffering, state.pending.count > max(1, limit) {
                state.pending[1] = state.pending[0].merged(with: state.pending[1])
                state.pending.removeFirst()
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
                    if !state.pending.isEmpty { return .some(state.pending.removeFirst()) }
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
