import Foundation
import Synchronization

/// What a mailbox holds for its reader between two takes: commits' changes under a buffering
/// policy, or the union of commits' regions.
protocol MailboxBacklog: Sendable {
    associatedtype Element: Sendable
    /// The next thing the reader takes, removed; `nil` when nothing waits.
    mutating func take() -> Element?
}

/// One reader's mailbox: producers add to its backlog (a commit, on the writer's thread: never
/// more than a lock and an append), the reader takes from it or waits for the next. It ends when
/// finished (the outbox closed) or its reading task is cancelled; dropping it tells its registry.
final class Mailbox<Backlog: MailboxBacklog>: Sendable {
    private struct State {
        var backlog: Backlog
        var waiter: CheckedContinuation<Backlog.Element?, Never>?
        var isFinished = false
    }

    private let state: Mutex<State>
    private let ended: @Sendable () -> Void

    init(_ backlog: Backlog, ended: @escaping @Sendable () -> Void) {
        state = Mutex(State(backlog: backlog))
        self.ended = ended
    }

    deinit { ended() }

    /// Adds to the backlog, and hands the reader waiting (if one waits) what it may take now.
    func deliver(_ add: (inout Backlog) -> Void) {
        let wake = state.withLock { state -> (CheckedContinuation<Backlog.Element?, Never>, Backlog.Element?)? in
            guard !state.isFinished else { return nil }
            add(&state.backlog)
            guard let waiter = state.waiter, let ready = state.backlog.take() else { return nil }
            state.waiter = nil
            return (waiter, ready)
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
    }

    /// What waits, or the next thing to come; `nil` once finished (after what was waiting) or the
    /// reading task is cancelled.
    func next() async -> Backlog.Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Backlog.Element?, Never>) in
                let ready = state.withLock { state -> Backlog.Element?? in
                    if let next = state.backlog.take() { return .some(next) }
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

    /// Ends the mailbox: the reader takes what waits, then `nil`.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Backlog.Element?, Never>? in
            state.isFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

/// The mailboxes of one kind a producer hands to: kept weakly (their readers keep them alive),
/// all finished at once when the outbox closes; one asked for after that is finished at once.
final class MailboxRegistry<Backlog: MailboxBacklog>: Sendable {
    private struct Entry: @unchecked Sendable {
        // Read and written only under the registry's lock.
        weak var mailbox: Mailbox<Backlog>?
    }

    private struct Entries {
        var byID: [Int: Entry] = [:]
        var isFinished = false
    }

    private let entries = Mutex(Entries())
    private let nextID = Atomic<Int>(0)

    init() {}

    /// A new mailbox, registered; `nil` when the registry is finished (the mailbox is then
    /// finished too: its reader ends at once).
    func open(_ backlog: Backlog) -> (mailbox: Mailbox<Backlog>, registered: Bool) {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let mailbox = Mailbox(backlog) { [weak self] in _ = self?.entries.withLock { $0.byID.removeValue(forKey: id) } }
        let registered = entries.withLock { entries -> Bool in
            guard !entries.isFinished else { return false }
            entries.byID[id] = Entry(mailbox: mailbox)
            return true
        }
        if !registered { mailbox.finish() }
        return (mailbox, registered)
    }

    /// The mailboxes a reader still holds.
    var live: [Mailbox<Backlog>] {
        entries.withLock { $0.byID.values.compactMap(\.mailbox) }
    }

    /// Finishes every mailbox, and any opened later.
    func finish() {
        let all = entries.withLock { entries in
            entries.isFinished = true
            defer { entries.byID.removeAll() }
            return entries.byID.values.compactMap(\.mailbox)
        }
        for mailbox in all { mailbox.finish() }
    }
}
