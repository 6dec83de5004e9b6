import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness
import Testing

/// Promises an app builds on: `nextWake` as `drain()` returns is the earliest moment anything is
/// scheduled, whatever the wakes, drains, enqueues and clock steps before it did, and a change
/// stream asked for after `close()` ends at once.
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

    /// One step of an app's life around the worker.
    enum Step: CaseIterable {
        case enqueue, wake, drain, clockStep
    }

    /// Seeded random interleavings of wakes (delivered through a task, so they land anywhere in a
    /// pass, or between two), drains, enqueues and clock steps, eight journals at once, half with
    /// the network down and half with a server answering 500: whenever `drain()` returns,
    /// `nextWake` is the earliest `nextAttemptAt` still ahead among the rows left queued. (With no
    /// network a pass stops at its first unanswered row, and the rows it left due wait for that
    /// row's retry, or an earlier one, instead of spinning. A pass running as `drain()` returns,
    /// a rerun or a late wake's, finds nothing due: the drain's own pass started after the call,
    /// on the same clock.)
    @Test(arguments: 0..<4) func nextWakeIsTheEarliestRetryInAnyInterleaving(batch: Int) async throws {
        let failures = try await withThrowingTaskGroup(of: [String].self) { group in
            for journalNumber in 0..<8 {
                let seed = UInt64(4_500 + batch * 8 + journalNumber)
                group.addTask { try await Self.interleave(seed: seed) }
            }
            return try await group.reduce([], +)
        }
        #expect(failures.isEmpty, "\(failures.count) drains returned with nextWake wrong: \(failures.prefix(5))")
    }

    private static func interleave(seed: UInt64) async throws -> [String] {
        var random = SeededRandom(seed: seed)
        let offline = seed % 2 == 0
        let failing: ScriptedTransport.Step = offline ? .fail(.offline) : .respond(.json(500, #"{"code":"unavailable"}"#))
        let journal = TestJournal(transport: ScriptedTransport(otherwise: failing))
        let outbox = try journal.open()
        defer { outbox.close() }
        var ids: [OperationID] = []
        var failures: [String] = []
        for step in 0..<40 {
            switch random.pick(Step.allCases)! {
            case .enqueue:
                ids.append(try await outbox.enqueue(productRequest(Int(seed) * 100 + step)))
            case .wake:
                outbox.wake(random.pick([.appLaunch, .foreground, .connectivityRegained])!)
            case .clockStep:
                journal.clock.advance(by: Double(random.int(in: 1..<120)))
            case .drain:
                await outbox.drain()
                let now = journal.clock.now()
                let read = outbox.nextWake
                let ahead = try ids.compactMap { id -> Date? in
                    guard let row = try outbox.operation(id), row.status == .queued, let next = row.nextAttemptAt, next > now else { return nil }
                    return next
                }.min()
                if read != ahead {
                    func text(_ moment: Date?) -> String { moment.map { "now + \(Int($0.timeIntervalSince(now))) s" } ?? "nil" }
                    failures.append("seed \(seed) (\(offline ? "offline" : "500")) step \(step): nextWake \(text(read)), earliest retry ahead \(text(ahead))")
                }
            }
        }
        return failures
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
