import Foundation
@testable import Outbox
import OutboxTesting
import Testing

/// Two promises an app builds on: `nextWake` as `drain()` returns is the timer that pass armed,
/// and a change stream asked for after `close()` ends at once.
@Suite("What the worker promises an app", .timeLimit(.minutes(10)))
struct WorkerPromisesTests {
    /// Thirty journals at once, so that a drain caller resumed before the timer is armed would
    /// read `nil` on another thread.
    @Test func nextWakeIsThePassesTimerWhenDrainReturns() async throws {
        let misses = try await withThrowingTaskGroup(of: Int.self) { group in
            for round in 0..<30 {
                group.addTask {
                    let journal = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
                    let outbox = try journal.open()
                    defer { outbox.close() }
                    var misses = 0
                    for number in 0..<5 {
                        let id = try await outbox.enqueue(productRequest(round * 10 + number))
                        await outbox.drain()
                        let due = try #require(try outbox.operation(id)?.nextAttemptAt, "the row was not rescheduled")
                        if outbox.nextWake != min(due, outbox.nextWake ?? due) || outbox.nextWake == nil { misses += 1 }
                    }
                    return misses
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(misses == 0, "\(misses) of 150 drains returned before the timer was armed")
    }

    @Test func aChangeStreamAskedForAfterCloseEndsAtOnce() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        outbox.close()
        var yielded = 0
        for await _ in outbox.changes() { yielded += 1 }
        #expect(yielded == 0)
    }
}
