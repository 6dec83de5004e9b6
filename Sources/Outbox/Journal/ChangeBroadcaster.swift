import Foundation
import OutboxCore
import Synchronization

/// One reader's changes not taken yet: commits append under the buffering policy, the reader
/// takes from the front.
struct ChangeBacklog: MailboxBacklog {
    let buffering: OutboxChanges.Buffering
    /// Waiting from `head` on: taking one moves `head`, so a long unbounded backlog is not
    /// shifted down at every take; the taken are dropped once they are half the array.
    var pending: [OutboxChanges.Change] = []
    var head = 0

    var waiting: Int { pending.count - head }

    mutating func take() -> OutboxChanges.Change? {
        guard head < pending.count else { return nil }
        defer { skipFirst() }
        return pending[head]
    }

    mutating func append(_ change: OutboxChanges.Change) {
        pending.append(change)
        if case .coalescing(let limit) = buffering, waiting > max(1, limit) {
            pending[head + 1] = pending[head].merged(with: pending[head + 1])
            skipFirst()
        }
    }

    /// Passes over the first waiting change (taken, or merged into the next).
    private mutating func skipFirst() {
        head += 1
        if head * 2 >= pending.count {
            pending.removeFirst(head)
            head = 0
        }
    }
}

typealias ChangeSubscription = Mailbox<ChangeBacklog>

/// Hands every commit's change to each subscriber.
final class ChangeBroadcaster: Sendable {
    private let subscriptions = MailboxRegistry<ChangeBacklog>()
    /// The records a commit's events may have changed (read once per commit, only when someone
    /// listens).
    private let recordsTouched: @Sendable ([JournalEvent]) -> Set<RecordKey>

    init(recordsTouched: @escaping @Sendable ([JournalEvent]) -> Set<RecordKey> = { _ in [] }) {
        self.recordsTouched = recordsTouched
    }

    func subscribe(buffering: OutboxChanges.Buffering) -> OutboxChanges {
        OutboxChanges(subscription: subscriptions.open(ChangeBacklog(buffering: buffering)).mailbox)
    }

    func publish(_ events: [JournalEvent]) {
        let live = subscriptions.live
        // Nobody listening: the change is not even built.
        guard !live.isEmpty, let change = OutboxChanges.Change(events: events, records: recordsTouched(events)) else { return }
        for subscription in live { subscription.deliver { $0.append(change) } }
    }

    /// The subscriptions a reader still holds.
    var subscriptionCount: Int { subscriptions.live.count }

    /// Ends every stream: the outbox closed.
    func finish() {
        subscriptions.finish()
    }
}
