import OutboxCore
import Synchronization

/// The rows whose attempt this process has in flight, or whose outcome waits to be committed
/// with the next start (counted: a row may be both for a moment).
///
/// A syncing row not held here lost its outcome (the commit recording it failed, or the process
/// that started it ended) and is abandoned by the next pass: so an attempt holds its row before
/// its `attemptStarted` commits, and lets go only once its outcome is committed.
final class InFlightRows: Sendable {
    private let held = Mutex<[OperationID: Int]>([:])

    /// The rows held now.
    var ids: Set<OperationID> { held.withLock { Set($0.keys) } }

    /// Holds `ids` while `body` runs.
    func holding<R>(_ ids: [OperationID], _ body: () async -> R) async -> R {
        hold(ids)
        defer { letGo(ids) }
        return await body()
    }

    func hold(_ ids: [OperationID]) {
        held.withLock { held in for id in ids { held[id, default: 0] += 1 } }
    }

    func letGo(_ ids: [OperationID]) {
        held.withLock { held in
            for id in ids {
                let count = (held[id] ?? 1) - 1
                held[id] = count > 0 ? count : nil
            }
        }
    }
}
