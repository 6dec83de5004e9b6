import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A batch server in a closure: answers each operation of every batch as `answer` decides (an
/// operation it answers `nil` for is left out of the answer), and keeps every batch it was sent.
private final class BatchServer: Sendable {
    private let received = Mutex<[BatchRequest]>([])
    private let answer: @Sendable (BatchOperation) -> BatchResult?

    init(_ answer: @escaping @Sendable (BatchOperation) -> BatchResult? = { .created($0) }) {
        self.answer = answer
    }

    var batches: [BatchRequest] { received.withLock { $0 } }

    func handle(_ request: TransportRequest) throws -> TransportResponse {
        let batch = try JSONDecoder().decode(BatchRequest.self, from: request.body)
        received.withLock { $0.append(batch) }
        return TransportResponse(statusCode: 200, body: try BatchResponse(results: batch.operations.compactMap(answer)).encoded())
    }

    var step: ScriptedTransport.Step { .handle { [self] in try handle($0) } }
}

extension BatchResult {
    /// A 201 for `operation`, with a revision.
    static func created(_ operation: BatchOperation) -> BatchResult {
        BatchResult(operationID: operation.operationID, outcome: .accepted, status: 201,
                    headers: ["ETag": "\"1\""], body: Data(#"{"revision":1}"#.utf8))
    }

    static func error(_ operation: BatchOperation, _ status: Int, _ code: String, outcome: BatchOutcome) -> BatchResult {
        BatchResult(operationID: operation.operationID, outcome: outcome, status: status,
                    body: Data(#"{"code":"\#(code)","message":"\#(code) here"}"#.utf8))
    }
}

@Suite("Batched pushes", .timeLimit(.minutes(10)))
struct BatchingTests {
    /// A journal whose worker is held (nobody signed in) while `count` writes are saved, each to
    /// its own entity unless `lanes` says otherwise; then the member signs in.
    private func queued(_ count: Int, transport: ScriptedTransport, lanes: (Int) -> String? = { "product-\($0)" },
                        batching: OutboxConfiguration.Batching = OutboxConfiguration.Batching()) async throws -> (TestJournal, Outbox, [OperationID], SwitchableSession) {
        let journal = TestJournal(transport: transport)
        let session = SwitchableSession(account: nil)
        let outbox = try journal.open(server: transport, session: session) { $0.batching = batching }
        var ids: [OperationID] = []
        for number in 0..<count { ids.append(try await outbox.enqueue(productRequest(number, entityID: lanes(number)))) }
        session.signIn(journal.account)
        return (journal, outbox, ids, session)
    }

    @Test func aPassSendsItsDueWritesInOneBatchEachRecordedAsItsOwnAttempt() async throws {
        let server = BatchServer { operation in
            switch operation.payload.contains(Data("product-1\"".utf8)) ? 1 : operation.payload.contains(Data("product-2\"".utf8)) ? 2 : 0 {
            case 1: .error(operation, 422, "validation_failed", outcome: .rejected)
            case 2: .error(operation, 503, "server_unavailable", outcome: .retry)
            default: .created(operation)
            }
        }
        let transport = ScriptedTransport(otherwise: server.step)
        let (journal, outbox, ids, _) = try await queued(3, transport: transport)
        defer { outbox.close() }
        await outbox.drain()

        #expect(transport.requests.count == 1, "one request for the three")
        let request = try #require(transport.requests.first)
        #expect(request.method == "POST" && request.endpoint == "/sync/batch")
        let batch = try #require(server.batches.first)
        #expect(batch.operations.map(\.operationID) == ids.map(\.idempotencyKey), "in journal order")
        let single = productRequest(0, entityID: "product-0")
        #expect(batch.operations[0].payload == single.payload, "the payload byte for byte")
        #expect(batch.operations[0].operationType == "product.create" && batch.operations[0].method == "POST")
        #expect(batch.operations[0].endpoint == "/products" && batch.operations[0].businessID == "pharmacy-7")

        #expect(try outbox.operation(ids[0])?.status == .synced)
        #expect(try outbox.operation(ids[0])?.serverRevision == "1")
        #expect(try outbox.operation(ids[1])?.status == .failed)
        #expect(try outbox.operation(ids[1])?.lastErrorCode == "validation_failed")
        let retried = try #require(try outbox.operation(ids[2]))
        #expect(retried.status == .queued && retried.nextAttemptAt == journal.clock.now().addingTimeInterval(2))
        for id in ids {
            #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
        }
        // Every start is recorded before the batch leaves: the three starts precede the outcomes.
        let kinds = try outbox.events(from: 1, limit: 100).filter { $0.operationID != nil }.map(\.kind)
        #expect(Array(kinds.suffix(6)) == [.attemptStarted, .attemptStarted, .attemptStarted, .attemptFinished, .attemptFinished, .attemptFinished])
    }

    @Test func anOperationLeftOutOfTheAnswerCountsAsUnansweredAndTheOthersSettle() async throws {
        // The second write is left out of the first answer only.
        let leftOut = Mutex(false)
        let server = BatchServer { operation in
            let omit = operation.payload.contains(Data("product-1\"".utf8)) && leftOut.withLock { done in
                defer { done = true }
                return !done
            }
            return omit ? nil : .created(operation)
        }
        let transport = ScriptedTransport(otherwise: server.step)
        let (journal, outbox, ids, _) = try await queued(3, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(try outbox.operation(ids[0])?.status == .synced)
        #expect(try outbox.operation(ids[2])?.status == .synced)
        let missing = try #require(try outbox.operation(ids[1]))
        #expect(missing.status == .queued && missing.state.lastOutcome == .noResponse(.missingFromBatch))
        #expect(missing.nextAttemptAt == journal.clock.now().addingTimeInterval(2))
        // Replayed under the same key in the next batch.
        journal.clock.advance(by: 2)
        await outbox.drain()
        #expect(try outbox.operation(ids[1])?.status == .synced)
        #expect(server.batches.last?.operations.map(\.idempotencyKey) == [ids[1].idempotencyKey])
    }

    @Test func aBatchTooLargeIsSplitInHalvesUntilEachPartFits() async throws {
        let server = BatchServer()
        let transport = ScriptedTransport(otherwise: server.step)
        // The whole batch of four and then its first half are too large; the halves of that half fit.
        let tooLarge = TransportResponse.error(413, code: "payload_too_large", message: "Too large")
        transport.script(.respond(tooLarge), .respond(tooLarge))
        let (_, outbox, ids, _) = try await queued(4, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(transport.requests.count == 5, "4, then 2 (too large), then 1 and 1, then 2")
        #expect(server.batches.map(\.operations.count) == [1, 1, 2])
        for id in ids {
            #expect(try outbox.operation(id)?.status == .synced)
            #expect(try outbox.operation(id)?.attemptCount == 1, "one attempt each, however often it was split")
        }
    }

    @Test func aSingleWriteAnswered413IsRejectedAsAloneItWouldBe() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.error(413, code: "payload_too_large", message: "Too large")))
        let (_, outbox, ids, _) = try await queued(1, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(transport.requests.count == 1)
        #expect(try outbox.operation(ids[0])?.status == .failed)
    }

    @Test func aWholeBatch401PausesTheWorkerOnceAndEveryRowWaits() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.error(401, code: "unauthorized", message: "Sign in again")))
        let (_, outbox, ids, _) = try await queued(3, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(transport.requests.count == 1)
        #expect(try outbox.engineState().isPaused)
        for id in ids {
            let row = try #require(try outbox.operation(id))
            #expect(row.status == .queued && row.nextAttemptAt == nil && row.lastErrorCode == "unauthorized")
        }
        let pauses = try outbox.events(from: 1, limit: 100).filter { $0.kind == .sessionPaused }
        #expect(pauses.count == 1)
    }

    @Test func aWholeBatch503RetriesEveryRowByTheBackoff() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.error(503, code: "server_unavailable", message: "Later")))
        let (journal, outbox, ids, _) = try await queued(3, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(transport.requests.count == 1)
        for id in ids {
            let row = try #require(try outbox.operation(id))
            #expect(row.status == .queued && row.nextAttemptAt != nil && row.nextAttemptAt! > journal.clock.now())
        }
    }

    @Test func noConnectionLeavesEveryRowOfTheBatchUnansweredAndEndsThePass() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let (_, outbox, ids, _) = try await queued(3, transport: transport)
        defer { outbox.close() }
        await outbox.drain()
        #expect(transport.requests.count == 1, "the pass stops: no spinning on the rows still due")
        for id in ids {
            #expect(try outbox.operation(id)?.state.lastOutcome == .noResponse(.offline))
        }
    }

    @Test func batchesHoldAtMostTheirOperationsAndBytesAndOneWriteOfALane() async throws {
        let server = BatchServer()
        let transport = ScriptedTransport(otherwise: server.step)
        // Five writes: two to one product (a lane), three to others; batches of at most three
        // writes, and at most two payloads' bytes.
        let payloadBytes = productRequest(0).payload.count
        let (_, outbox, ids, _) = try await queued(5, transport: transport, lanes: { $0 < 2 ? "product-shared" : "product-\($0)" },
                                                   batching: OutboxConfiguration.Batching(maxOperations: 3, maxBytes: payloadBytes * 2 + 1))
        defer { outbox.close() }
        await outbox.drain()
        for id in ids { #expect(try outbox.operation(id)?.status == .synced) }
        let batches = server.batches.map { $0.operations.map(\.operationID) }
        #expect(batches.allSatisfy { $0.count <= 2 }, "\(batches)")
        // The lane's second write never shares a batch with its first, and comes after it.
        let first = try #require(batches.firstIndex { $0.contains(ids[0].idempotencyKey) })
        let second = try #require(batches.firstIndex { $0.contains(ids[1].idempotencyKey) })
        #expect(first < second)
        #expect(batches.flatMap { $0 }.count == 5, "each write sent once")
    }

    @Test func aDependentNeverSharesABatchWithItsUnsyncedDependency() async throws {
        let server = BatchServer()
        let transport = ScriptedTransport(otherwise: server.step)
        let journal = TestJournal(transport: transport)
        let session = SwitchableSession(account: nil)
        let outbox = try journal.open(server: transport, session: session) { $0.batching = OutboxConfiguration.Batching() }
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1, entityID: "product-1"))
        var movement = productRequest(2, entityID: "move-1")
        movement.dependsOn = [product]
        let moved = try await outbox.enqueue(movement)
        session.signIn(journal.account)
        await outbox.drain()
        #expect(try outbox.operation(moved)?.status == .synced)
        let batches = server.batches.map { $0.operations.map(\.operationID) }
        #expect(batches == [[product.idempotencyKey], [moved.idempotencyKey]])
    }

    @Test func aBatchEndpointThatIsNotAPathIsRefusedAtOpen() throws {
        let journal = TestJournal()
        #expect(throws: OutboxError.self) {
            _ = try journal.open { $0.batching = OutboxConfiguration.Batching(endpoint: "sync/batch") }
        }
        #expect(throws: OutboxError.invalidConfiguration(field: "batching.maxOperations", problem: "must be within 1...1000, not 0")) {
            _ = try journal.open { $0.batching = OutboxConfiguration.Batching(maxOperations: 0) }
        }
    }
}
