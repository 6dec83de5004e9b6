import Foundation
import Synchronization

/// Requests held "finalizing" by the `slow` fault, and the means to let them go.
///
/// A held request blocks its connection's thread (never a transaction: the claim is taken and
/// no database lock is held) until ``release(key:)``, until the server stops, or until the
/// safety limit passes: a forgotten hold must not keep a thread forever.
final class Holds: Sendable {
    private final class Ticket: Sendable {
        let key: String
        let semaphore = DispatchSemaphore(value: 0)

        init(key: String) {
            self.key = key
        }
    }

    private struct State {
        var held: [ObjectIdentifier: Ticket] = [:]
        var watchers: [(key: String, continuation: CheckedContinuation<Void, Never>)] = []
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Blocks until released or `limit` seconds pass; returns at once once closed.
    func hold(key: String, limit: TimeInterval) {
        let ticket = Ticket(key: key)
        let registered: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard !state.isClosed else { return nil }
            state.held[ObjectIdentifier(ticket)] = ticket
            let (due, waiting) = state.watchers.partitioned { $0.key == key }
            state.watchers = waiting
            return due.map(\.continuation)
        }
        guard let registered else { return }
        for watcher in registered { watcher.resume() }
        _ = ticket.semaphore.wait(timeout: .now() + limit)
        _ = state.withLock { $0.held.removeValue(forKey: ObjectIdentifier(ticket)) }
    }

    /// Lets go of the requests held for `key`, or of every held request when `key` is `nil`.
    /// - Returns: how many were released.
    @discardableResult
    func release(key: String? = nil) -> Int {
        let released = state.withLock { state in
            let matching = state.held.filter { key == nil || $0.value.key == key }
            for id in matching.keys { state.held[id] = nil }
            return Array(matching.values)
        }
        for ticket in released { ticket.semaphore.signal() }
        return released.count
    }

    /// The keys of the requests held now, sorted.
    var heldKeys: [String] {
        state.withLock { $0.held.values.map(\.key) }.sorted()
    }

    /// Returns once a request with `key` is held (at once if one is, or if the server stopped).
    func waitUntilHeld(key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.isClosed || state.held.values.contains(where: { $0.key == key }) { return true }
                state.watchers.append((key, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Releases everything and holds nothing from now on.
    func close() {
        let watchers = state.withLock { state in
            state.isClosed = true
            defer { state.watchers = [] }
            return state.watchers.map(\.continuation)
        }
        release()
        for watcher in watchers { watcher.resume() }
    }
}

extension Array {
    /// The elements that satisfy `belongs`, and the others, each in order.
    func partitioned(by belongs: (Element) -> Bool) -> (matching: [Element], others: [Element]) {
        var matching: [Element] = []
        var others: [Element] = []
        for element in self {
            if belongs(element) { matching.append(element) } else { others.append(element) }
        }
        return (matching, others)
    }
}
