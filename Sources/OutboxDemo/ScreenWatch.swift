import Foundation
import Outbox
import Synchronization

/// What the phone's list showed of some records after every commit while it watched: each
/// value as the list shows it, in order, so a value that went back (a flicker) is seen.
final class ScreenWatch: Sendable {
    /// One record as the list showed it after a commit.
    struct Sighting: Sendable, Equatable {
        var id: String
        var shown: String
        var state: String
    }

    private let seen = Mutex<[Sighting]>([])
    private let outbox: Outbox
    private let keys: [RecordKey]
    private let signal: Signal
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts watching `keys`: one sighting of each now, and after every commit.
    init(_ outbox: Outbox, keys: [RecordKey], signal: Signal) {
        self.outbox = outbox
        self.keys = keys
        self.signal = signal
        let changes = outbox.changes()
        look()
        let watching = Task { [weak self] in
            for await _ in changes {
                guard let self else { return }
                self.look()
            }
        }
        task.withLock { $0 = watching }
    }

    /// Stops watching, after one last look; answers every sighting of `id`, in order.
    func stop() -> [Sighting] {
        look()
        task.withLock { $0?.cancel() }
        return seen.withLock { $0 }
    }

    /// The sightings of `id`, in order.
    func sightings(of id: String) -> [Sighting] {
        seen.withLock { $0.filter { $0.id.utf8.elementsEqual(id.utf8) } }
    }

    private func look() {
        let online = signal.isOnline
        let now = keys.compactMap { key -> Sighting? in
            guard let record = try? outbox.record(key) else { return nil }
            return Sighting(id: key.id, shown: MemberScreen.shown(record.value, type: key.type), state: MemberScreen.state(record, online: online))
        }
        seen.withLock { $0 += now }
    }
}
