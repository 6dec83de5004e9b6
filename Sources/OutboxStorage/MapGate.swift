import Foundation

/// Keeps the memory map still while transactions use it.
///
/// LMDB may remap the file only when no transaction of this process is active
/// (`mdb_env_set_mapsize`). Every transaction holds the gate shared; growing the map, adopting
/// another process's growth and closing take it exclusively. A waiting resizer stops new
/// transactions from entering, so a stream of readers cannot starve it.
///
/// - Warning: a thread must not open a read transaction inside another one of its own: with a
///   resizer waiting between the two, it would wait for itself.
final class MapGate: @unchecked Sendable {
    // Why unchecked: every stored property is read and written only with `condition` locked.
    private let condition = NSCondition()
    private var sharedHolders = 0
    private var exclusiveWaiting = 0
    private var exclusiveHeld = false

    func withShared<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        while exclusiveHeld || exclusiveWaiting > 0 { condition.wait() }
        sharedHolders += 1
        condition.unlock()
        defer {
            condition.lock()
            sharedHolders -= 1
            if sharedHolders == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body()
    }

    func withExclusive<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        exclusiveWaiting += 1
        while exclusiveHeld || sharedHolders > 0 { condition.wait() }
        exclusiveWaiting -= 1
        exclusiveHeld = true
        condition.unlock()
        defer {
            condition.lock()
            exclusiveHeld = false
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }
}
