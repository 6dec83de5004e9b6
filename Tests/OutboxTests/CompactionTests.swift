import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxStorage
import OutboxTesting
import Testing

@Suite("Compaction", .timeLimit(.minutes(10)))
struct CompactionTests {
    @Test(arguments: historyRounds(3))
    func aRandomHistoryCompactedAtRandomHorizonsLosesNothingItMustKeep(_ round: Int) async throws {
        let seed = testSeed(round: round)
        var random = SeededRandom(seed: seed)
        let journal = TestJournal()
        let outbox = try journal.open()
        var history = RandomHistory(seed: seed)
        for _ in 0..<4 {
            for _ in 0..<250 {
                try await history.step(outbox, now: journal.clock.now())
                journal.clock.advance(by: Double(random.int(in: 0..<60)))
            }
            let before = try Dictionary(uniqueKeysWithValues: history.statuses.keys.map { ($0, try #require(try outbox.operationState($0))) })
            let ledgerBefore = try outbox.ledger(LedgerQuery(limit: .max)).entries
            let eventsBefore = try outbox.events(from: 1, limit: .max)
            let horizon = journal.clock.now().addingTimeInterval(-Double(random.int(in: 0..<3000)))

            let result = try await outbox.compact(before: horizon)

            // Every row not settled before the horizon is untouched, with its history.
            for (id, state) in before {
                let after = try #require(try outbox.operationState(id), "seed \(seed): \(id) lost")
                if state.status.isTerminal, state.changedAt < horizon {
                    #expect(after.compactedAt != nil, "seed \(seed)")
                    #expect(try outbox.journalEvents(of: id).map(\.kind) == [.compacted], "seed \(seed)")
                } else {
                    #expect(after == state, "seed \(seed): compaction touched a row it must not")
                }
            }
            // Every ledger row is kept, and reads the same.
            #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries == ledgerBefore, "seed \(seed)")
            // The journal verifies clean, projections and all.
            let report = try outbox.verify()
            #expect(report.isClean, "seed \(seed): \(report.findings.prefix(3))")
            #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty, "seed \(seed)")
            // Each digest is the SHA-256 of the removed records, recomputed from before.
            let remaining = Set(try outbox.events(from: 1, limit: .max).map(\.seq))
            var removedTotal = 0
            for seq in result.compactedEvents {
                guard case .compacted(let compacted) = try outbox.events(from: seq, limit: 1).first?.body else {
                    Issue.record("seed \(seed): no compacted event at \(seq)")
                    continue
                }
                let removed = eventsBefore.filter { !remaining.contains($0.seq) && $0.seq >= compacted.firstSeq && $0.seq <= compacted.lastSeq }
                let removedIDs = Set(compacted.operations.map(\.id))
                let mine = removed.filter { $0.operationID.map(removedIDs.contains) ?? false }
                #expect(mine.count == compacted.removedCount, "seed \(seed)")
                #expect(SHA256Digest(ofConcatenated: mine.map(RecordCodec.encode)) == compacted.digest, "seed \(seed)")
                removedTotal += compacted.removedCount
            }
            #expect(removedTotal == result.eventsRemoved)
        }
        outbox.close()
        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.verify().isClean, "seed \(seed) after reopening")
    }

    @Test func aCompactedOperationStillSaysWhatHappenedToIt() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.applyThenDropResponse)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        journal.clock.advance(by: 2)
        await outbox.drain()
        let ledgerRow = try #require(try outbox.ledger().entries.first)
        let before = try #require(try outbox.operationState(id))
        journal.clock.advance(by: 86_400)
        let result = try await outbox.compact(before: journal.clock.now())
        #expect(result.operations == 1 && result.eventsRemoved == 5)

        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced && row.attemptCount == 2 && row.latestOutcome == .replayed)
        #expect(row.compactedAt == journal.clock.now())
        #expect(row.state.form == .compacted(at: journal.clock.now()))
        #expect(row.request.payload.isEmpty)
        // Who and what it was is kept, every field true: only the history and payload are gone.
        let request = productRequest(1)
        #expect(row.state.keptRequest)
        #expect(row.state.businessID == request.businessID && row.state.method == request.method)
        #expect(row.state.endpoint == request.endpoint && row.state.category == request.category)
        #expect(row.state.entityLabel == request.entityLabel && row.state.summary == request.summary)
        #expect(row.state.requestHash == SHA256Digest(of: request.payload))
        #expect(row.state.payloadByteCount == request.payload.count && row.state.account == journal.account)
        #expect(row.state.eventSeqs.isEmpty && !before.eventSeqs.isEmpty)
        let exported = try JSONSerialization.jsonObject(with: JSONEncoder().encode(row.state)) as? [String: Any]
        #expect(exported?["form"] as? String == "compacted")
        #expect(exported?["requestHash"] as? String == SHA256Digest(of: request.payload).hex)
        #expect(try outbox.ledger().entries.first == ledgerRow)
        #expect(try outbox.metrics().totalAttempts == 2)
        await #expect(throws: OutboxError.self) { try await outbox.discard(id) }
    }

    @Test func compactingTheJournalsLastEventsNeverGivesASeqTwice() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        for number in 0..<3 { _ = try await outbox.enqueue(productRequest(number)) }
        await outbox.drain()
        let last = try outbox.lastSeq()
        journal.clock.advance(by: 60)
        let result = try await outbox.compact(before: journal.clock.now())
        #expect(result.compactedEvents == [last.next], "the compacted event follows every seq ever given")
        let id = try await outbox.enqueue(productRequest(9))
        #expect(try outbox.journalEvents(of: id).first?.seq == last.next.next)
        #expect(try outbox.verify().isClean)
    }

    @Test func pendingRowsAreNeverCompacted() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(403, code: "no", message: "No")), .holdForApproval(requestID: "apr-1"), .respond(.error(422, code: "bad", message: "Bad")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<4 { ids.append(try await outbox.enqueue(productRequest(number))) }
        server.setOnline(false)
        await outbox.drain()
        // blocked, pending approval, failed, queued.
        let result = try await outbox.compact(before: journal.clock.now().addingTimeInterval(86_400))
        #expect(result.operations == 0)
        for id in ids { #expect(try outbox.operationState(id)?.compactedAt == nil) }
    }

    /// The file's growth per operation over a steady workload, with and without compaction.
    private func growthPerOperation(compaction: OutboxConfiguration.CompactionPolicy?) async throws -> (early: Int, late: Int, events: Int) {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer()) {
            $0.durability = .processCrash
            $0.compaction = compaction
        }
        defer { outbox.close() }
        var sizes: [Int] = []
        for round in 0..<24 {
            for number in 0..<100 {
                // A product as an app sends one: a description makes it some 600 bytes.
                var request = productRequest(round * 100 + number)
                request.payload = Data(#"{"id":"product-\#(round * 100 + number)","description":"\#(String(repeating: "x", count: 560))"}"#.utf8)
                _ = try await outbox.enqueue(request)
            }
            await outbox.drain()
            journal.clock.advance(by: 10)
            sizes.append(try outbox.store.environment.info().usedBytes)
        }
        #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries.count == 2400, "every ledger row kept")
        return ((sizes[5] - sizes[0]) / 500, (sizes[23] - sizes[5]) / 1800, try outbox.metrics().journalEvents)
    }

    @Test func withCompactionOnTheFileGrowsOnlyByLedgerRows() async throws {
        let without = try await growthPerOperation(compaction: nil)
        let with = try await growthPerOperation(compaction: OutboxConfiguration.CompactionPolicy(maxEvents: 600, keepSettledSeconds: 0))
        #expect(with.events < 1000, "compaction kept the journal's events bounded")
        // What remains per settled operation is its ledger row, with who and what it was (type,
        // label, summary, category, entity, endpoint, request hash), never its payload: a
        // fraction of its events.
        #expect(Double(with.late) * 1.5 < Double(without.late), "bytes per operation: \(with.late) with compaction, \(without.late) without")
        print("compaction: \(without.late) bytes per operation without compaction, \(with.late) with (ledger rows only)")
    }
}
