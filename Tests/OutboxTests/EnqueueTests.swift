import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("Enqueue and the reading API")
struct EnqueueTests {
    @Test func anEnqueuedWriteIsQueuedDueNowWithItsRequestAndHash() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let request = productRequest(entityID: "product-1")
        let id = try await outbox.enqueue(request)

        let row = try #require(try outbox.operation(id))
        #expect(row.status == .queued)
        #expect(row.request == request)
        #expect(row.requestHash == SHA256Digest(of: request.payload))
        #expect(row.attemptCount == 0)
        #expect(row.nextAttemptAt == nil)
        #expect(row.createdAt == journal.clock.now())
        #expect(row.firstSeq == row.latestSeq)
        #expect(row.state.account == "member-42")

        let history = try outbox.journalEvents(of: id)
        #expect(history.map(\.kind) == [.enqueued])
        #expect(history[0].seq == row.firstSeq)
        #expect(history[0].operationID == id)
    }

    @Test func theJournalRecordsEachOpening() throws {
        let journal = TestJournal()
        try journal.open { $0.appVersion = "3.2" }.close()
        let outbox = try journal.open()
        defer { outbox.close() }
        let events = try outbox.events()
        #expect(events.map(\.kind) == [.journalOpened, .journalOpened])
        guard case .journalOpened(let first) = events[0].body else { return }
        #expect(first.appVersion == "3.2")
        #expect(first.formatVersion == RecordCodec.formatVersion)
        #expect(try outbox.engineState().openCount == 2)
    }

    @Test func badInputThrowsAndLeavesTheJournalUnchanged() async throws {
        let journal = TestJournal()
        let outbox = try journal.open { $0.maxPayloadBytes = 100 }
        defer { outbox.close() }
        let before = try outbox.lastSeq()
        var requests: [OutboxRequest] = []
        for mutate: (inout OutboxRequest) -> Void in [
            { $0.operationType = "" },
            { $0.category = "" },
            { $0.endpoint = "products" },
            { $0.method = "FETCH" },
            { $0.payload = Data("<html>".utf8) },
            { $0.payload = Data(#"{"name":"\#(String(repeating: "x", count: 200))"}"#.utf8) },
        ] {
            var request = productRequest()
            mutate(&request)
            requests.append(request)
        }
        for request in requests {
            await #expect(throws: OutboxError.self) { try await outbox.enqueue(request) }
        }
        #expect(try outbox.lastSeq() == before)
    }

    @Test func anOnlineOnlyTypeIsRefusedAndReportedByCanQueue() async throws {
        let journal = TestJournal()
        let outbox = try journal.open { $0.operationPolicies = ["dispatch.cancel": .onlineOnly] }
        defer { outbox.close() }
        var request = productRequest()
        request.operationType = "dispatch.cancel"
        #expect(!outbox.canQueue("dispatch.cancel"))
        #expect(outbox.canQueue("product.create"))
        await #expect(throws: OutboxError.onlineOnly(operationType: "dispatch.cancel")) {
            try await outbox.enqueue(request)
        }
        #expect(try outbox.events().map(\.kind) == [.journalOpened])
    }

    @Test func unknownOperationsAreNotFound() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let stranger = OperationID()
        #expect(try outbox.operation(stranger) == nil)
        #expect(throws: OutboxError.operationNotFound(stranger)) { try outbox.journalEvents(of: stranger) }
        await #expect(throws: OutboxError.operationNotFound(stranger)) { try await outbox.retry(stranger) }
    }

    @Test func aClosedOutboxRefusesEverything() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        let id = try await outbox.enqueue(productRequest())
        outbox.close()
        outbox.close()
        #expect(throws: OutboxError.closed) { try outbox.operation(id) }
        await #expect(throws: OutboxError.closed) { try await outbox.enqueue(productRequest()) }
    }

    @Test func aJournalOpensOncePerProcessAndForOneAccount() throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        #expect(throws: OutboxError.self) { _ = try journal.open() }
        outbox.close()
        #expect(throws: OutboxError.wrongAccount(journal: "member-42", configured: "member-7")) {
            _ = try journal.open { $0.account = "member-7" }
        }
        try journal.open().close()
    }

    @Test func decisionsAreEventsRefusedWhenIllegal() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest())
        await #expect {
            try await outbox.retry(id)
        } throws: { error in
            guard case OutboxError.illegalTransition(let operation, let status, let event, _) = error else { return false }
            return operation == id && status == .queued && event == .requeued
        }
        await #expect(throws: OutboxError.self) { try await outbox.recordApprovalDecision(id, approved: true) }
        try await outbox.discard(id)
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .discarded)
        // The payload stays readable after a discard.
        #expect(row.request.payload == productRequest().payload)
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .discarded])
        await #expect(throws: OutboxError.self) { try await outbox.discard(id) }
    }

    @Test func changesYieldAfterEveryCommitWithTheOperationsTouched() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var changes = outbox.changes().makeAsyncIterator()
        let id = try await outbox.enqueue(productRequest())
        let change = try #require(await changes.next())
        #expect(change.operations == [id])
        #expect(change.kinds == [.enqueued])
        #expect(change.seqs.upperBound == (try outbox.lastSeq()))
        try await outbox.discard(id)
        let second = try #require(await changes.next())
        #expect(second.kinds == [.discarded])
    }

    /// A reader that takes nothing while commits land: under a limit, the newest changes stay
    /// apart and the older are merged (no operation lost, every commit counted); unbounded, each
    /// commit is its own change.
    @Test(arguments: [OutboxChanges.Buffering.coalescing(limit: 4), .coalescing(limit: 1), .unbounded])
    func aReaderThatFallsBehindKeepsTheNewestApartAndTheOlderMerged(_ buffering: OutboxChanges.Buffering) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        let stream = outbox.changes(buffering: buffering)
        let everyCommit = outbox.changes(buffering: .unbounded)
        var ids: Set<OperationID> = []
        for number in 1...10 { ids.insert(try await outbox.enqueue(productRequest(number))) }
        outbox.close()
        var taken: [OutboxChanges.Change] = []
        for await change in stream { taken.append(change) }
        var commits: [OutboxChanges.Change] = []
        for await change in everyCommit { commits.append(change) }
        #expect(commits.count >= 10 && commits.allSatisfy { $0.coalesced == 0 })
        #expect(Set(taken.flatMap(\.operations)) == ids, "every operation touched is in some change")
        #expect(taken.reduce(0) { $0 + $1.coalesced + 1 } == commits.count, "every commit counted once")
        #expect(taken.first?.seqs.lowerBound == commits.first?.seqs.lowerBound && taken.last?.seqs.upperBound == commits.last?.seqs.upperBound)
        #expect(zip(taken, taken.dropFirst()).allSatisfy { $0.seqs.upperBound < $1.seqs.lowerBound }, "in journal order")
        switch buffering {
        case .coalescing(let limit):
            #expect(taken.count == min(limit, commits.count) && taken.dropFirst().allSatisfy { $0.coalesced == 0 }, "\(taken.map(\.coalesced))")
            #expect(Array(taken.dropFirst()) == Array(commits.suffix(taken.count - 1)), "the newest stay as they were")
        case .unbounded:
            #expect(taken == commits)
        }
    }

    @Test func aStreamNoLongerReadEndsItsSubscription() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        do {
            let stream = outbox.changes()
            var iterator = stream.makeAsyncIterator()
            _ = try await outbox.enqueue(productRequest())
            #expect(await iterator.next() != nil)
            #expect(outbox.broadcaster.subscriptionCount == 1)
        }
        #expect(outbox.broadcaster.subscriptionCount == 0, "dropped with its iterator")
        // A reader cancelled while it waits ends with nil.
        let waiting = Task {
            var iterator = outbox.changes().makeAsyncIterator()
            return await iterator.next()
        }
        waiting.cancel()
        #expect(await waiting.value == nil)
    }

    @Test func closingEndsTheChangeStreams() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        let stream = outbox.changes()
        outbox.close()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }
}
