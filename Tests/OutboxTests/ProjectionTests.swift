import Foundation
@testable import Outbox
import OutboxStorage
import Testing

@Suite("Projections equal a rebuild from the events")
struct ProjectionTests {
    @Test(arguments: 0..<4)
    func afterASeededRandomHistory(_ round: Int) async throws {
        let seed = testSeed()
        let journal = TestJournal()
        let outbox = try journal.open()
        var history = RandomHistory(seed: seed)
        for _ in 0..<1500 {
            try await history.step(outbox, now: journal.clock.now())
            journal.clock.advance(by: 1)
        }
        let mismatches = try outbox.store.compareProjectionsWithRebuild()
        #expect(mismatches.isEmpty, "seed \(seed): \(mismatches.prefix(5))")
        #expect(history.refusals > 0, "seed \(seed): the history tried no illegal event")

        // Every status the history believes in is the one stored.
        for (id, status) in history.statuses {
            #expect(try outbox.operationState(id)?.status == status, "seed \(seed): \(id)")
        }
        let eventCount = try outbox.lastSeq()
        let interrupted = history.statuses.filter { $0.value == .syncing }.map(\.key)
        outbox.close()

        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty, "seed \(seed) after reopening")
        #expect(
            try reopened.lastSeq().rawValue == eventCount.rawValue + 1 + UInt64(interrupted.count),
            "reopening appends journalOpened and abandons each interrupted attempt"
        )
        for id in interrupted {
            #expect(try reopened.operationState(id)?.latestOutcome == .abandoned)
        }
    }

    @Test func anotherProjectionVersionIsRebuiltAtOpen() async throws {
        let seed = testSeed()
        let journal = TestJournal()
        let outbox = try journal.open()
        var history = RandomHistory(seed: seed)
        for _ in 0..<300 { try await history.step(outbox, now: journal.clock.now()) }
        // Settled rows keep their state across the reopening (interrupted ones are abandoned).
        let settled = history.statuses.filter { $0.value != .syncing }.map(\.key)
        let states = try settled.map { try outbox.operationState($0) }
        // Damage the projections the way an older layout would look: wrong version, stale rows.
        let schema = outbox.store.schema
        try outbox.store.environment.write { txn in
            try txn.put(schema.meta, JournalSchema.MetaKey.projectionVersion, UInt32(0).bigEndianBytes)
            try txn.removeAll(schema.byStatus.database)
            try txn.put(schema.counters, "status/queued", 999)
        }
        #expect(try !outbox.store.compareProjectionsWithRebuild().isEmpty)
        outbox.close()

        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty, "seed \(seed)")
        #expect(try settled.map { try reopened.operationState($0) } == states)
    }

    @Test func theIndexesHoldWhatEachStatusImplies() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1, entityID: "shelf-1"))
        let second = try await outbox.enqueue(productRequest(2, entityID: "shelf-1", category: "Employees"))
        try await outbox.discard(second)
        let schema = outbox.store.schema
        try outbox.store.read { txn throws in
            #expect(try schema.operationIDs(withStatus: .queued, in: txn) == [first])
            #expect(try schema.operationIDs(withStatus: .discarded, in: txn) == [second])
            #expect(try schema.counter(CounterName.status(.queued), in: txn) == 1)
            #expect(try schema.counter(CounterName.status(.discarded), in: txn) == 1)
            #expect(try schema.counters(prefix: CounterName.tabPrefix(.waiting), in: txn) == ["Products": 1])
            #expect(try txn.count(schema.schedule.database) == 1)
            #expect(try txn.count(schema.lanes.database) == 1)
            #expect(try schema.counter(CounterName.events, in: txn) == 4)
        }
    }
}
