import Foundation
import Synchronization

/// Threads started together, for work that blocks (the server's in-process answers, PostgreSQL).
enum Threads {
    /// Runs `body(0)` ... `body(count - 1)` each on a thread of its own, all released at once;
    /// returns when every one has, rethrowing the first error thrown.
    /// - Returns: the nanoseconds from their release until the last returned.
    @discardableResult
    static func run(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws -> Double {
        let failure = Mutex<(any Error)?>(nil)
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            group.enter()
            Thread {
                defer { group.leave() }
                start.wait()
                do { try body(index) } catch { failure.withLock { $0 = $0 ?? error } }
            }.start()
        }
        let total = Stopwatch.time {
            for _ in 0..<count { start.signal() }
            group.wait()
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return total
    }
}
