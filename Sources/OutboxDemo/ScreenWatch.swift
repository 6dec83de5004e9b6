import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// What the phone's list showed of some records while it watched, from the engine's one
/// observation (`Outbox.observe`): each yield is a list as the member saw it, so a value that went
/// back (a flicker) is seen in the yields themselves.
final class ScreenWatch: Sendable {
    /// One record as the list showed it.
    struct Sighting: Sendable, Equatable {
        var id: String
        var shown: String
        var state: String
    }

    private struct Seen {
        var yields: [[Sighting]] = []
        /// `stop()` waiting for the list to read as the journal does now.
        var waiting: (target: [Sighting], continuation: CheckedContinuation<Void, Never>)?
    }

    private let seen = Mutex(Seen())
    private let outbox: Outbox
    private let keys: [RecordKey]
    private let signal: Signal
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts watching `keys`: the list now (the observation's first yield, read as it starts),
    /// then every list the observation yields.
    init(_ outbox: Outbox, keys: [RecordKey], signal: Signal) {
        self.outbox = outbox
        self.keys = keys
        self.signal = signal
        let lists = outbox.observe(OutboxObservation { [keys, signal] outbox in try Self.list(outbox, keys: keys, online: signal.isOnline) })
        let watching = Task { [weak self] in
            for await list in lists {
                guard let self else { return }
                self.saw(list)
            }
        }
        task.withLock { $0 = watching }
    }

    private static func list(_ outbox: Outbox, keys: [RecordKey], online: Bool) throws -> [Sighting] {
        try keys.compactMap { key -> Sighting? in
            guard let record = try outbox.record(key) else { return nil }
            return Sighting(id: key.id, shown: MemberScreen.shown(record.value, type: key.type), state: MemberScreen.state(record, online: online))
        }
    }

    private func saw(_ list: [Sighting]) {
        let done = seen.withLock { seen -> CheckedContinuation<Void, Never>? in
            seen.yields.append(list)
            guard let waiting = seen.waiting, waiting.target == list else { return nil }
            seen.waiting = nil
            return waiting.continuation
        }
        done?.resume()
    }

    /// Returns once the observation has yielded the list the journal shows now: what the member
    /// sees at this moment is among its yields.
    func caughtUp() async {
        let now = (try? Self.list(outbox, keys: keys, online: signal.isOnline)) ?? []
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = seen.withLock { seen -> Bool in
                if seen.yields.last == now { return true }
                seen.waiting = (now, continuation)
                return false
            }
            if reached { continuation.resume() }
        }
    }

    /// Stops watching once the observation caught up; answers every sighting, in order.
    func stop() async -> [Sighting] {
        await caughtUp()
        task.withLock { $0?.cancel() }
        return seen.withLock { $0.yields.flatMap { $0 } }
    }

    /// The sightings of `id`, in order.
    func sightings(of id: String) -> [Sighting] {
        seen.withLock { $0.yields.flatMap { $0 }.filter { $0.id.utf8.elementsEqual(id.utf8) } }
    }
}
