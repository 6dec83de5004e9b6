import Foundation
import OutboxWire
import Synchronization

/// Requests held by the `slow` and `hold_in_transaction` faults, and the means to let them go.
/// Keys are matched byte for byte.
///
/// A held request blocks its connection's thread until ``release(key:)``, until the server
/// stops, or until the safety limit passes: a forgotten hold must not keep a thread forever. A
/// `slow` hold holds no transaction (the claim is taken and no database lock is held) and also
/// ends once another copy of its key has been answered (``releaseCopies(key:)``); a hold inside
/// the write's transaction ends only when told, so a test can kill the server there.
final class Holds: Sendable {
    private final class Ticket: Sendable {
        let key: String
        let releasableByCopies: Bool
        let semaphore = DispatchSemaphore(value: 0)

        init(key: String, releasableByCopies: Bool) {
            self.key = key
            self.releasableByCopies = releasableByCopies
        }
    }

    private struct State {
        var held: [ObjectIdentifier: Ticket] = [:]
        var watchers: [(key: String, notify: @Sendable () -> Void)] = []
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Blocks until released or `limit` seconds pass; returns at once once closed.
    /// - Parameter releasableByCopies: whether an answered copy of the key lets it go too.
    func hold(key: String, limit: TimeInterval, releasableByCopies: Bool = true) {
        let ticket = Ticket(key: key, releasableByCopies: releasableByCopies)
        let registered: [@Sendable () -> Void]? = state.withLock { state in
            guard !state.isClosed else { return nil }
            state.held[ObjectIdentifier(ticket)] = ticket
            let (due, waiting) = state.watchers.partitioned { $0.key.hasSameBytes(as: key) }
            state.watchers = waiting
            return due.map(\.notify)
        }
        guard let registered else { return }
        for notify in registered { notify() }
        _ = ticket.semaphore.wait(timeout: .now() + limit)
        _ = state.withLock { $0.held.removeValue(forKey: ObjectIdentifier(ticket)) }
    }

    /// Lets go of the requests held for `key`, or of every held request when `key` is `nil`.
    /// - Returns: how many were released.
    @discardableResult
    func release(key: String? = nil) -> Int {
        release { ticket in key.map { ticket.key.hasSameBytes(as: $0) } ?? true }
    }

    /// Lets go of the `slow` holds of `key`: another copy of it has been answered.
    func releaseCopies(key: String) {
        _ = release { $0.key.hasSameBytes(as: key) && $0.releasableByCopies }
    }

    private func release(where matches: (Ticket) -> Bool) -> Int {
        let released = state.withLock { state in
            let matching = state.held.filter { matches($0.value) }
            for id in matching.keys { state.held[id] = nil }
            return Array(matching.values)
        }
        for ticket in released { ticket.semaphore.signal() }
        return released.count
    }

    /// The keys of the requests held now, in byte order.
    var heldKeys: [String] {
        state.withLock { $0.held.values.map(\.key) }.sorted { ExactString($0) < ExactString($1) }
    }

    /// Returns once a request with `key` is held (at once if one is, or if the server stopped).
    func waitUntilHeld(key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !watch(key: key, { continuation.resume() }) { continuation.resume() }
        }
    }

    /// Blocks until a request with `key` is held, or `timeout` seconds pass.
    /// - Returns: whether one is held (`false` on timeout or once the server stopped).
    func waitUntilHeld(key: String, timeout: TimeInterval) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        if !watch(key: key, { semaphore.signal() }) {
            return state.withLock { state in !state.isClosed && state.held.values.contains { $0.key.hasSameBytes(as: key) } }
        }
        return semaphore.wait(timeout: .now() + timeout) == .success
            && state.withLock { state in !state.isClosed }
    }

    /// Registers `notify` for the next hold of `key`; answers `false` (registering nothing) when
    /// one is held already or the server stopped.
    private func watch(key: String, _ notify: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.isClosed || state.held.values.contains(where: { $0.key.hasSameBytes(as: key) }) { return false }
            state.watchers.append((key, notify))
            return true
        }
    }

    /// Releases everything and holds nothing from now on.
    func close() {
        let watchers = state.withLock { state in
            state.isClosed = true
            defer { state.watchers = [] }
            return state.watchers.map(\.notify)
        }
        release()
        for notify in watchers { notify() }
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
