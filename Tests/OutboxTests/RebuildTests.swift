import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxStorage
import Synchronization
import Testing

/// The rebuild's own paths, run on a small journal by shrinking its tuning: the fold split
/// among threads, the rewrite in many transactions, and a map that fills in the middle.
@Suite("Rebuilding the projections", .timeLimit(.minutes(10)))
struct RebuildTests {
    @Test(arguments: [2, 3, 5])
    func theShardsOfAFoldTogetherEqualTheWholeFold(_ shards: Int) async throws {
        let seed = testSeed()
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await RandomHistory.withCompactions(journal, outbox, seed: seed)
        let store = outbox.store
        let whole = try store.read { txn in try ProjectionImage.build(schema: store.schema, in: txn) }
        #expect(whole.states.values.contains { $0.compactedAt != nil }, "seed \(seed): the history compacted nothing")

        let parts = try ProjectionImage.buildSharded(schema: store.schema, environment: store.environment, count: shards) { $0 }
        #expect(parts.map(\.shard.index) == Array(0..<shards))
        var states: [OperationID: OperationState] = [:]
        for part in parts {
            for (id, state) in part.states {
                #expect(part.shard.owns(id), "seed \(seed): shard \(part.shard.index) folded \(id)")
                #expect(states.updateValue(state, forKey: id) == nil, "seed \(seed): \(id) in two shards")
            }
        }
        #expect(states == whole.states, "seed \(seed)")
        #expect(parts.reduce(0) { $0 + $1.eventCount } == whole.eventCount)
        #expect(parts.reduce(0) { $0 + $1.eventBytes } == whole.eventBytes)
        #expect(parts[0].engine == whole.engine)
    }

    /// In many steps, the map fills in the middle: the step is run again in a grown map. In one
    /// transaction, the map fills in the transaction that folded the events: it is run again
    /// with the fold it kept. Either way the rows are those of a rebuild where nothing happened.
    @Test(arguments: [1, 3], [false, true])
    func aRebuildWithAMapThatFillsWritesEveryRow(_ shards: Int, inOneTransaction: Bool) async throws {
        let seed = testSeed()
        let journal = TestJournal()
        // Once armed, this put of the rebuild finds the map full.
        let failingPut = inOneTransaction ? 5 : 40
        let armed = Atomic<Bool>(false)
        let puts = Atomic<Int>(0)
        let hook = LMDBFaultHook { call in
            guard call == .put, armed.load(ordering: .relaxed) else { return nil }
            return puts.add(1, ordering: .relaxed).newValue == failingPut ? LMDBError.mapFull : nil
        }
        let outbox = try Outbox(directory: journal.directory, transport: journal.transport, configuration: journal.configuration(), faultHook: hook)
        defer { outbox.close() }
        let history = try await RandomHistory.withCompactions(journal, outbox, seed: seed)
        let store = outbox.store
        let before = try history.statuses.keys.map { try outbox.operationState($0) }
        let mapBefore = try store.environment.info().mapSizeBytes
        let eventCount = try store.read { txn in try txn.count(store.schema.events.database) }

        armed.store(true, ordering: .relaxed)
        let tuning = JournalStore.RebuildTuning(chunk: inOneTransaction ? eventCount : 25, shardingThreshold: 0, shards: shards)
        try JournalStore.rebuildProjections(environment: store.environment, schema: store.schema, options: store.options, tuning: tuning)
        armed.store(false, ordering: .relaxed)

        #expect(puts.load(ordering: .relaxed) > failingPut, "the fault was never reached")
        #expect(try store.environment.info().mapSizeBytes > mapBefore, "the map did not grow")
        let mismatches = try store.compareProjectionsWithRebuild()
        #expect(mismatches.isEmpty, "seed \(seed): \(mismatches.prefix(5))")
        #expect(try history.statuses.keys.map { try outbox.operationState($0) } == before, "seed \(seed)")
        #expect(try store.read { txn in try txn.get(store.schema.meta, JournalSchema.MetaKey.projectionVersion) }
            == JournalSchema.projectionVersion.bigEndianBytes)
    }

    @Test func aDamagedRecordStopsTheRebuildBeforeAnythingIsWrittenNamingItsSeq() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        for number in 0..<40 { _ = try await outbox.enqueue(productRequest(number)) }
        let store = outbox.store
        let damagedSeq = JournalSequence(rawValue: 17)
        try store.environment.write { txn in
            var record = try #require(try txn.get(store.schema.events, damagedSeq))
            record[record.count / 2] ^= 0x40
            try txn.put(store.schema.events, damagedSeq, record)
        }
        let countersBefore = try store.read { txn in try txn.get(store.schema.singletons, JournalSchema.SingletonKey.counters) }
        let stateBefore = try store.read { txn in try txn.count(store.schema.state) }
        for shards in [1, 4] {
            #expect {
                try JournalStore.rebuildProjections(
                    environment: store.environment, schema: store.schema, options: store.options,
                    tuning: JournalStore.RebuildTuning(chunk: 10, shardingThreshold: 0, shards: shards)
                )
            } throws: { error in
                guard case OutboxError.journalCorrupt(let seq, _) = error else { return false }
                return seq == damagedSeq
            }
        }
        // Nothing was cleared: the projections are those of before.
        #expect(try store.read { txn in try txn.get(store.schema.singletons, JournalSchema.SingletonKey.counters) } == countersBefore)
        #expect(try store.read { txn in try txn.count(store.schema.state) } == stateBefore)
        #expect(try store.read { txn in try txn.get(store.schema.meta, JournalSchema.MetaKey.projectionVersion) }
            == JournalSchema.projectionVersion.bigEndianBytes)
    }
}
