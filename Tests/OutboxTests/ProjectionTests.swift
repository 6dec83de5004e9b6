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
            var statusKeys: [[UInt8]] = []
            try txn.scan(schema.byStatus) { entry in
                statusKeys.append(Array(entry.keyBytes))
                return .next
            }
            for key in statusKeys { try txn.delete(schema.byStatus, encodedKey: key) }
            var counters = try schema.counters(in: txn)
            counters.add(999, to: .queued)
            try Projection.writeCounters(counters, schema: schema, in: txn)
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
            let counters = try schema.counters(in: txn)
            #expect(counters.count(of: .queued) == 1)
            #expect(counters.count(of: .discarded) == 1)
            #expect(counters.tabCounts(.waiting) == ["Products": 1])
            #expect(try rows(of: schema.schedule, in: txn) == 1)
            #expect(try rows(of: schema.lanes, in: txn) == 1)
            #expect(counters.events == 4)
        }
    }

    /// The entries of one table of `state`.
    private func rows<K, V>(of table: LMDBTable<K, V>, in txn: borrowing LMDBTransaction) throws -> Int {
        var count = 0
        try txn.scan(table) { _ in
            count += 1
            return .next
        }
        return count
    }
}
