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

    /// Removes and answers the first fault matching a request to `path` with `key`;
    /// `targetsRecord` when the request updates one record.
    func take(path: String, key: String?, targetsRecord: Bool) -> Fault? {
        faults.withLock { faults in
            guard let index = faults.firstIndex(where: { $0.matches(path: path, key: key, targetsRecord: targetsRecord) }) else {
                return nil
            }
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
