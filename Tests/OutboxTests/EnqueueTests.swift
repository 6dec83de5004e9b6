import Foundation
@testable import Outbox
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

        let history = try outbox.history(id)
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
        #expect(throws: OutboxError.operationNotFound(stranger)) { try outbox.history(stranger) }
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
        #expect(try outbox.history(id).map(\.kind) == [.enqueued, .discarded])
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
