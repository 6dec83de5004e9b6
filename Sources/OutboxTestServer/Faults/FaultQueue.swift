import Synchronization

/// The faults waiting to be applied, in the order queued.
final class FaultQueue: Sendable {
    private let faults = Mutex<[Fault]>([])

    func append(_ more: [Fault]) -> Int {
        faults.withLock { faults in
            faults += more
            return faults.count
        }
    }

    /// Removes and answers the first fault matching `target`.
    func take(_ target: Fault.Target) -> Fault? {
        faults.withLock { faults in
            guard let index = faults.firstIndex(where: { $0.matches(target) }) else { return nil }
            return faults.remove(at: index)
        }
    }

    var pending: [Fault] {
        faults.withLock { $0 }
    }

    func removeAll() {
        faults.withLock { $0.removeAll() }
    }
}
