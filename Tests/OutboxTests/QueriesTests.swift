import Foundation
@testable import Outbox
@testable import OutboxAudit
import Testing

/// Every read is written once, against ``ProjectionReads``: the stored projections an engine
/// keeps and the same folded in memory from the events (what a reader of an older layout uses)
/// must answer each one alike.
@Suite("Stored and folded reads", .timeLimit(.minutes(10)))
struct QueriesTests {
    @Test func theStoredProjectionsAndTheFoldedEventsAnswerEveryReadAlike() async throws {
        let seed = testSeed()
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let history = try await RandomHistory.withCompactions(journal, outbox, seed: seed)
        let stored = outbox.store.queries
        let (folded, image) = try outbox.store.foldedQueries()
        #expect(image.damaged.isEmpty)
        #expect(image.image.states.values.contains { $0.compactedAt != nil }, "seed \(seed): nothing was compacted")
        let ids = try stored.operationIDs(matchingPrefix: "")  + history.statuses.keys.sorted()
        let middle = try stored.lastSeq().rawValue / 2

        let operationQueries = [
            OperationQuery(limit: .max),
            OperationQuery(statuses: [.queued, .failed, .blocked], limit: 9),
            OperationQuery(categories: ["Products"], after: JournalSequence(rawValue: middle), limit: 25),
            OperationQuery(operationTypes: ["product.create"], createdFrom: journal.clock.now().addingTimeInterval(-2000), limit: .max),
        ]
        for query in operationQueries {
            let answer = try stored.operationStates(matching: query)
            #expect(answer == (try folded.operationStates(matching: query)), "seed \(seed): \(query)")
            #expect(answer.states.count == min(query.limit, answer.states.count))
            let now = journal.clock.now()
            #expect(try stored.operations(matching: query, now: now) == folded.operations(matching: query, now: now), "seed \(seed): \(query)")
        }
        #expect(try !stored.operationStates(matching: OperationQuery(limit: .max)).states.isEmpty)

        let ledgerQueries = [
            LedgerQuery(limit: .max),
            LedgerQuery(status: .synced, limit: 10),
            LedgerQuery(after: JournalSequence(rawValue: middle), limit: 30),
            LedgerQuery(createdBefore: journal.clock.now().addingTimeInterval(-1000), limit: .max),
        ]
        for query in ledgerQueries {
            #expect(try stored.ledger(query) == folded.ledger(query), "seed \(seed): \(query)")
        }

        #expect(try stored.summary() == folded.summary(), "seed \(seed)")
        #expect(try stored.metrics(now: journal.clock.now()) == folded.metrics(now: journal.clock.now()), "seed \(seed)")
        #expect(try stored.engineState() == folded.engineState())
        #expect(try stored.operationIDs(matchingPrefix: "a") == folded.operationIDs(matchingPrefix: "a"))
        let typed = EventQuery(operationTypes: ["product.create"], limit: 200)
        #expect(try stored.events(matching: typed) == folded.events(matching: typed))

        for id in Set(ids) {
            #expect(try stored.operationSnapshot(id, now: journal.clock.now()) == folded.operationSnapshot(id, now: journal.clock.now()), "seed \(seed): \(id)")
            #expect(try stored.history(id) == folded.history(id), "seed \(seed): \(id)")
            #expect(try stored.timeline(of: id) == folded.timeline(of: id), "seed \(seed): \(id)")
        }
    }
}
