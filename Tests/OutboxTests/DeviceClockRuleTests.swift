import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// The decisions that wait out a period read the device's uptime: a wall clock moved by the
/// member neither ends them early nor holds them off.
@Suite("Decisions that do not trust the wall clock")
struct DeviceClockRuleTests {
    @Test func theGiveUpAgeIsNotReachedByAWallClockMovedForward() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .respond(.json(503, "{}"))))
        let outbox = try journal.open { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: nil, orAge: 3_600) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        // The member moves the clock two days on: a minute of uptime has passed, not an hour.
        journal.clock.set(to: journal.clock.now().addingTimeInterval(2 * 86_400))
        journal.clock.advance(by: 60)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .queued, "gave up on a wall clock moved forward")
        #expect(try outbox.operation(id)?.attemptCount == 2)
        // An hour of uptime after its first attempt, it gives up.
        journal.clock.advance(by: 3_600)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .failed)
        #expect(try outbox.operation(id)?.lastErrorCode == ErrorCode.gaveUp)
    }

    @Test func theCompactionPolicysKeepPeriodIsMeasuredByUptime() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .respond(.json(201, "{}"))))
        let outbox = try journal.open { $0.compaction = OutboxConfiguration.CompactionPolicy(maxEvents: 1, keepSettledSeconds: 86_400) }
        defer { outbox.close() }
        let settled = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.operation(settled)?.status == .synced)
        // A wall clock moved a week on does not make a row settled an hour ago compactable.
        journal.clock.set(to: journal.clock.now().addingTimeInterval(7 * 86_400))
        journal.clock.advance(by: 3_600)
        _ = try await outbox.enqueue(productRequest(2))
        #expect(try outbox.operation(settled)?.compactedAt == nil, "compacted on a wall clock moved forward")
        // A day of uptime later, it is.
        journal.clock.advance(by: 86_400)
        _ = try await outbox.enqueue(productRequest(3))
        #expect(try outbox.operation(settled)?.compactedAt != nil)
    }
}
