import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("Inline save", .timeLimit(.minutes(10)))
struct SaveTests {
    @Test func aSaveTheServerAcceptsIsSyncedInTheSameInteraction() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let result = try await outbox.save(productRequest(1))
        guard case .synced(let response) = result else {
            Issue.record("expected synced, got \(result)")
            return
        }
        #expect(response.statusCode == 201)
        #expect(server.records.count == 1)
        let id = try #require(server.records.first.flatMap { OperationID($0.key) })
        #expect(try outbox.operation(id)?.status == .synced)
        guard case .attemptStarted(let started) = try outbox.journalEvents(of: id)[1].body else { return }
        #expect(started.trigger == .inlineSave)
    }

    @Test func aSaveHeldForApprovalSaysSo() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.holdForApproval(requestID: "apr-77"))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        #expect(try await outbox.save(productRequest(1)) == .pendingApproval(approvalRequestID: "apr-77"))
    }

    @Test func aSaveWithNoSignalIsQueuedAndTheWorkerWoken() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let result = try await outbox.save(productRequest(1))
        guard case .queued(let id) = result else {
            Issue.record("expected queued, got \(result)")
            return
        }
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .queued && row.attemptCount == 1)
        // The save woke the worker: its timer is armed for the retry.
        await journal.clock.waitForSleepers(1)
        server.setOnline(true)
        journal.clock.advance(by: 2)
        try await eventually(outbox) { try outbox.operation(id)?.status == .synced }
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    @Test func aValidationErrorWithdrawsTheRowAndReturnsTheMessage() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let result = try await outbox.save(productRequest(1))
        #expect(result == .rejected(code: "validation_failed", message: "Price must be positive"))
        let id = try #require(server.requests.first?.headers["Idempotency-Key"].flatMap(OperationID.init))
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .withdrawn)
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .withdrawn])
    }

    @Test func aForbiddenSaveIsBlockedWithItsReason() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(403, code: "not_owner", message: "Only the owner may add products")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let result = try await outbox.save(productRequest(1))
        guard case .blocked(let id, let code, let message) = result else {
            Issue.record("expected blocked, got \(result)")
            return
        }
        #expect(code == "not_owner" && message == "Only the owner may add products")
        #expect(try outbox.operation(id)?.status == .blocked)
    }

    @Test func aSaveBehindAnEarlierWriteToTheSameEntityWaitsItsTurn() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let earlier = try await outbox.enqueue(productRequest(1, entityID: "shelf-1"))
        server.setOnline(true)
        let result = try await outbox.save(productRequest(2, entityID: "shelf-1"))
        guard case .queued(let later) = result else {
            Issue.record("expected queued, got \(result)")
            return
        }
        #expect(try outbox.operation(later)?.attemptCount == 0)
        await outbox.drain()
        #expect(server.records.map(\.key) == [earlier.idempotencyKey, later.idempotencyKey])
    }

    @Test func aCaptivePortalLeavesTheSaveQueued() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(TransportResponse(statusCode: 200, headers: ["Content-Type": "text/html"], body: Data("<html>Log in to Wi-Fi</html>".utf8))))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        guard case .queued(let id) = try await outbox.save(productRequest(1)) else {
            Issue.record("a captive portal's page is not a success")
            return
        }
        #expect(try outbox.operation(id)?.lastErrorCode == "invalid_response")
        #expect(server.records.isEmpty)
    }

    @Test func anOnlineOnlySaveIsRefusedBeforeAnythingIsWritten() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer()) { $0.operationPolicies = ["dispatch.cancel": .onlineOnly] }
        defer { outbox.close() }
        var request = productRequest(1)
        request.operationType = "dispatch.cancel"
        await #expect(throws: OutboxError.onlineOnly(operationType: "dispatch.cancel")) { try await outbox.save(request) }
        #expect(try outbox.lastSeq() == 1)
    }

    @Test func aSaveWaitsForAWriteItDependsOnThatIsNotSyncedYet() async throws {
        let created = ScriptedTransport.Step.respond(TransportResponse.json(201, #"{"revision":"1"}"#))
        let transport = ScriptedTransport(otherwise: created)
        transport.script(.respond(TransportResponse.error(503, code: "down", message: "Down")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        func movement(_ quantity: Int) -> OutboxRequest {
            OutboxRequest(businessID: "pharmacy-7", operationType: "stock.move", endpoint: "/stock", payload: Data(#"{"qty":\#(quantity)}"#.utf8),
                          category: "Stock", entityLabel: "Antiseptic", summary: "Stock movement", dependsOn: [product])
        }
        guard case .queued(let waiting) = try await outbox.save(movement(3)) else {
            Issue.record("a save whose product is not synced was not left queued")
            return
        }
        #expect(transport.requests.map(\.endpoint) == ["/products"], "the movement was not sent before its product")
        #expect(try outbox.operation(waiting)?.waitingOn == .dependency(product, .queued))
        journal.clock.advance(by: 10)
        await outbox.drain()
        #expect(transport.requests.map(\.endpoint) == ["/products", "/products", "/stock"])
        #expect(try outbox.operation(waiting)?.status == .synced)
        guard case .synced = try await outbox.save(movement(4)) else {
            Issue.record("a save whose product is synced was not sent at once")
            return
        }
    }

    /// A save the retry policy gives up on tells the member the engine's words, never the 5xx
    /// body the journal keeps for support (behind a pooler it names the database's host and user).
    @Test func aSaveGivenUpNeverShowsTheServersBody() async throws {
        let leak = "could not connect to server: host=10.0.4.7 port=6432 user=outbox_app"
        let transport = ScriptedTransport(otherwise: .respond(.json(503, #"{"code":"db_unavailable","message":"\#(leak)"}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 1) }
        defer { outbox.close() }
        let result = try await outbox.save(productRequest(1))
        guard case .failed(let id, let code, let message) = result else { Issue.record("\(result)"); return }
        #expect(code == ErrorCode.gaveUp && message == OutboxWords.english.gaveUp && !message.contains("10.0.4.7"))
        #expect(try outbox.operation(id)?.lastServerMessage?.contains("10.0.4.7") == true, "support still reads it")
    }
}
