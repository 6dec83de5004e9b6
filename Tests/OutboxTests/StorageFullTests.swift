import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Synchronization
import Testing

@Suite("A full journal")
struct StorageFullTests {
    @Test func enqueueThrowsStorageFullAndEverythingBeforeIsIntact() async throws {
        let journal = TestJournal()
        let limit = 256 << 10
        let outbox = try journal.open {
            $0.initialJournalBytes = 64 << 10
            $0.maxJournalBytes = limit
        }
        var saved: [OperationID] = []
        var refusal: (any Error)?
        while refusal == nil {
            do {
                saved.append(try await outbox.enqueue(productRequest(saved.count)))
            } catch {
                refusal = error
            }
        }
        #expect(refusal as? OutboxError == .storageFull(limitBytes: limit))
        #expect(saved.count > 30)
        #expect(outbox.store.environment.mapSizeBytes > 64 << 10, "the map grew from 64 KiB")
        let lastSeq = try outbox.lastSeq()
        #expect(lastSeq.rawValue == UInt64(saved.count + 1), "nothing of the refused write was stored")
        outbox.close()

        // It reopens, at the same limit, and every saved write is there.
        let reopened = try journal.open { $0.maxJournalBytes = limit }
        defer { reopened.close() }
        for (number, id) in saved.enumerated() {
            #expect(try reopened.operation(id)?.request.payload == productRequest(number).payload)
        }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty)
    }
}

@Suite("The storage budget", .timeLimit(.minutes(10)))
struct StorageBudgetTests {
    @Test func compactionMakesRoomAndPendingRowsDrainWhenTheBudgetIsReached() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let budget = 2 << 20
        let outbox = try journal.open(server: server) {
            $0.durability = .processCrash
            $0.initialJournalBytes = 256 << 10
            $0.maxJournalBytes = budget
        }
        defer { outbox.close() }

        // A steady workload far larger than the budget: settled rows are compacted as it fills.
        for round in 0..<40 {
            for number in 0..<50 { _ = try await outbox.enqueue(productRequest(round * 50 + number)) }
            await outbox.drain()
        }
        #expect(server.records.count == 2000)
        let steady = try outbox.metrics()
        #expect(steady.budgetUsed < 0.9, "compaction kept the journal within its budget")
        #expect(steady.journalBudgetBytes == budget)

        // Offline, nothing settles: saving fills the budget until a save is refused, cleanly.
        server.setOnline(false)
        var pending: [OperationID] = []
        var refusal: (any Error)?
        // Twice: the second time with the worker idle, so that nothing it writes (its first
        // offline attempt of each row) moves the journal between the refusal and the checks.
        for _ in 0..<2 {
            await outbox.drain()
            refusal = nil
            while refusal == nil {
                do {
                    pending.append(try await outbox.enqueue(productRequest(10_000 + pending.count)))
                } catch {
                    refusal = error
                }
            }
        }
        #expect(refusal as? OutboxError == .storageFull(limitBytes: budget))
        #expect(pending.count > 100)
        let rows = try outbox.ledger(LedgerQuery(limit: .max)).entries.count
        await #expect(throws: OutboxError.storageFull(limitBytes: budget)) { try await outbox.enqueue(productRequest(99_999)) }
        #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries.count == rows, "a refused save writes nothing")

        // The network returns: everything already queued still drains, from the reserve.
        server.setOnline(true)
        for _ in 0..<10 {
            await outbox.drain()
            journal.clock.advance(by: 300)
        }
        #expect(try pending.allSatisfy { try outbox.operationState($0)?.status == .synced })
        // And compaction makes room again.
        _ = try await outbox.enqueue(productRequest(99_999))
        #expect(server.maxAppliedCount == 1)
        let report = try outbox.verify()
        #expect(report.isClean, "\(report.findings.prefix(3))")
    }
}

@Suite("A pull in a full journal", .timeLimit(.minutes(5)))
struct PullInAFullJournalTests {
    /// Pulled values never take the room kept back for the writes' outcomes: a journal filled
    /// with queued writes to its budget refuses the feed's pages, and every write still sends
    /// and records its answer.
    @Test func pulledPagesNeverTakeTheWritesReserve() async throws {
        let feed = ScriptedFeed(count: 400)
        // Writes are refused as busy until the pull has run: they stay queued, filling the journal.
        let writesAnswered = Mutex(false)
        let transport = ScriptedTransport(otherwise: .handle { request in
            if ScriptedFeed.isFeedRequest(request) { return feed.answer(request) }
            return writesAnswered.withLock { $0 } ? .json(201, #"{"id":"product-1"}"#) : .json(503, "{}")
        })
        let journal = TestJournal(transport: transport)
        let limit = 256 << 10
        let outbox = try journal.open {
            PullTests.configured(&$0)
            $0.initialJournalBytes = 64 << 10
            $0.maxJournalBytes = limit
        }
        defer { outbox.close() }
        var saved: [OperationID] = []
        while true {
            do {
                saved.append(try await outbox.enqueue(productRequest(saved.count)))
            } catch OutboxError.storageFull {
                break
            }
        }
        let pulled = try #require(try await outbox.pull().feed(PullTests.business))
        #expect(pulled.changesApplied == 0, "no page fits: \(pulled)")
        #expect(try outbox.records(RecordQuery(business: PullTests.business, type: "product")).records.isEmpty)
        writesAnswered.withLock { $0 = true }
        journal.clock.advance(by: 3_600)
        await outbox.drain()
        for id in saved {
            #expect(try outbox.operation(id)?.status == .synced, "every write's outcome found room")
        }
    }
}
