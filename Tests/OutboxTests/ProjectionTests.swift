import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import OutboxCore
import Testing

@Suite("Projections equal a rebuild from the events")
struct ProjectionTests {
    @Test(arguments: historyRounds(4))
    func afterASeededRandomHistory(_ round: Int) async throws {
        let seed = testSeed(round: round)
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

    /// The Sync tab's entry holds its row (layout 12): the fields of the folded state the tab
    /// shows and judges it by, so that an attempt more rewrites it at the same size while the
    /// `operations` entry grows by the attempt's two seqs.
    @Test func aSyncTabEntryHoldsItsRowWithoutItsHistory() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let busy = TransportResponse.error(503, code: "unavailable", message: "Try again shortly")
        server.inject(.respond(busy), .respond(busy), .respond(busy))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        let schema = outbox.store.schema
        var tabSizes: [Int] = []
        var stateSizes: [Int] = []
        for attempt in 1...3 {
            await outbox.drain()
            let state = try #require(try outbox.operationState(id))
            #expect(state.attemptCount == attempt && state.status == .queued)
            try outbox.store.read { txn throws in
                var entries: [[UInt8]] = []
                try txn.scan(schema.syncTab) { entry in
                    entries.append(Array(entry.valueBytes))
                    return .next
                }
                #expect(entries == [StateCodec.tabRowBytes(state)], "attempt \(attempt): the entry is the state's row")
                tabSizes += entries.map(\.count)
                stateSizes.append(try #require(try txn.get(schema.state, key: schema.operations.prefix + JournalCodec.ID.bytes(id))).count)
            }
            journal.clock.advance(by: 3600)
        }
        #expect(Set(tabSizes).count == 1, "the tab's entry does not grow with the attempts: \(tabSizes)")
        #expect(stateSizes == [stateSizes[0], stateSizes[0] + 16, stateSizes[0] + 32], "the state grows by two seqs an attempt")
        #expect(tabSizes[0] < stateSizes[0] / 2, "a row keeps less than half of a state: \(tabSizes[0]) of \(stateSizes[0]) bytes")
    }

    /// For every state a seeded random history leaves (every status, lanes, dependencies,
    /// corrections, conflicts), its tab row shows the same `SyncTab.Row` and gets the same verdict
    /// as the whole state: the row keeps every field the tab reads.
    @Test(arguments: historyRounds(2))
    func aTabRowShowsAndIsJudgedAsItsWholeState(_ round: Int) async throws {
        let seed = testSeed(round: round)
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var history = RandomHistory(seed: seed)
        for _ in 0..<1000 {
            try await history.step(outbox, now: journal.clock.now())
            journal.clock.advance(by: 1)
        }
        let schema = outbox.store.schema
        var compared = 0
        try outbox.store.read { txn throws in
            let engine = try schema.engineState(in: txn)
            for id in history.statuses.keys {
                guard var whole = try schema.state(id, in: txn), whole.compactedAt == nil else { continue }
                var row = try StateCodec.decodeTabRow(StateCodec.tabRowBytes(whole))
                for now in [Date.distantPast, journal.clock.now()] {
                    #expect(try schema.verdict(on: row, engine: engine, now: now, in: txn)
                        == schema.verdict(on: whole, engine: engine, now: now, in: txn), "seed \(seed): \(id) at \(now)")
                }
                schema.open(&whole)
                schema.open(&row)
                #expect(SyncTab.Row(row) == SyncTab.Row(whole), "seed \(seed): \(id)")
                compared += 1
            }
        }
        #expect(compared > 50, "seed \(seed): only \(compared) states compared")
    }

    /// A Sync tab entry that no longer holds what the fold says (a state changed under it) is
    /// a mismatch `verify` names, and the tab shows what the rebuild writes back.
    @Test func aStaleSyncTabEntryIsFoundAndRebuilt() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        let id = try await outbox.enqueue(productRequest(1))
        let schema = outbox.store.schema
        try outbox.store.environment.write { txn in
            var key: [UInt8] = []
            var stale: OperationState?
            try txn.scan(schema.syncTab) { entry in
                key = Array(entry.keyBytes)
                stale = try entry.value()
                return .stop
            }
            var changed = try #require(stale)
            changed.entityLabel = "Something else"
            try txn.put(schema.state, key: schema.syncTab.prefix + key, value: StateCodec.tabRowBytes(changed))
        }
        #expect(try outbox.syncTab(isOnline: true).card("Products")?.rows.map(\.entityLabel) == ["Something else"])
        let mismatches = try outbox.store.compareProjectionsWithRebuild()
        #expect(mismatches.map(\.database) == ["sync-tab"], "\(mismatches)")
        try outbox.store.environment.write { txn in
            try txn.put(schema.meta, JournalSchema.MetaKey.projectionVersion, UInt32(0).bigEndianBytes)
        }
        outbox.close()

        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty)
        let row = try #require(try reopened.syncTab(isOnline: true).card("Products")?.rows.first)
        let label = try reopened.operationState(id)?.entityLabel
        #expect(row.operationID == id && row.entityLabel == label && label == "Antiseptic 1")
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
