import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import Testing

/// The engine's intent features (stable ids, revisions and conflicts, rules, resolutions,
/// dependencies, coalescing, giving up) against the loopback test server over a real socket,
/// proven by what the server applied and holds, not only by the engine's statuses.
@Suite("Intent end to end over loopback", .timeLimit(.minutes(10)))
struct IntentEndToEndTests {
    static let business = "folakes-pharmacy"

    typealias Rig = EndToEndTests.Rig

    static func product(_ id: String, price: String = "12.5", operationID: OperationID? = nil) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"\#(id)","name":"Antiseptic 500 ml","price":\#(price)}"#.utf8),
            entityID: id, category: "Products", entityLabel: "Antiseptic 500 ml", summary: "New product", operationID: operationID)
    }

    /// A price edit of product `id`, against `revision`.
    static func priceEdit(_ id: String = "p-1", price: String, revision: String?, type: String = "product.update") -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: type, method: "PATCH", endpoint: "/products/\(id)",
            payload: Data(#"{"price":\#(price)}"#.utf8), entityID: id, category: "Products",
            entityLabel: "Antiseptic 500 ml", summary: "New price", baseRevision: revision)
    }

    // MARK: Revisions

    @Test func anEditCarryingItsBaseRevisionApplies() async throws {
        let rig = try Rig()
        let create = try await rig.createProduct()
        guard case .synced(let response) = try await rig.outbox.save(Self.priceEdit(price: "13", revision: "1")) else {
            Issue.record("an edit against the current revision did not sync")
            return
        }
        #expect(response.statusCode == 200)
        let edit = try #require(rig.network.requests.last)
        #expect(edit.headers["If-Match"] == #""1""#)
        let editID = try #require(edit.headers["Idempotency-Key"].flatMap(OperationID.init))
        #expect(try rig.outbox.operation(editID)?.serverRevision == "2", "the server's new revision, recorded")
        let record = try #require(try rig.product())
        #expect(record.revision == 2 && record.idempotencyKey == editID.idempotencyKey)
        #expect(String(decoding: record.body, as: UTF8.self) == #"{"id":"p-1","name":"Antiseptic 500 ml","price":13}"#)
        #expect(try rig.server.appliedCounts() == [create.idempotencyKey: 1, editID.idempotencyKey: 1])
    }

    @Test func aRecordChangedElsewhereBetweenSaveAndSendIsConflictedWithTheServersSide() async throws {
        let rig = try Rig()
        try await rig.createProduct()
        rig.network.setOnline(false)
        guard case .queued(let id) = try await rig.outbox.save(Self.priceEdit(price: "13", revision: "1")) else {
            Issue.record("an edit with no signal is queued")
            return
        }
        // The second device, while this phone is offline.
        rig.server.addFaults([Fault(.changeRecord, endpoint: "/products/p-1", patch: Data(#"{"price":14}"#.utf8))])
        rig.network.setOnline(true)
        try await rig.drainUntilSettled()

        let row = try #require(try rig.outbox.operation(id))
        #expect(row.status == .conflicted)
        #expect(row.conflict?.serverRevision == "2")
        let theirs = try #require(row.conflict?.serverCurrent.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        #expect(theirs["price"] as? Int == 14 && theirs["revision"] as? Int == 2)
        #expect(try rig.outbox.syncTab(isOnline: true).conflictCard?.count == 1)
        // The server kept the other device's change and applied nothing of ours.
        #expect(try rig.product()?.revision == 2)
        #expect(try rig.productFields()["price"] as? Int == 14)
        #expect(try rig.server.appliedCounts()[id.idempotencyKey] == nil)
        #expect(rig.serverEvents.last?.outcome == .revisionConflict)
    }

    @Test func keepingTheirsDiscardsTheEditAndTheServersRecordStaysAsItWas() async throws {
        let rig = try Rig()
        try await rig.createProduct()
        try rig.server.changeRecord(type: "product", id: "p-1", businessID: Self.business, patch: Data(#"{"price":14}"#.utf8))
        guard case .conflicted(let id, let revision) = try await rig.outbox.save(Self.priceEdit(price: "13", revision: "1")) else {
            Issue.record("a stale edit is not conflicted")
            return
        }
        #expect(revision == "2")
        let before = try #require(try rig.product())
        let sent = rig.network.requests.count

        #expect(try await rig.outbox.resolveConflict(id, keeping: .theirs) == nil)
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(id)?.status == .discarded)
        guard case .discarded(let discarded)? = try rig.outbox.journalEvents(of: id).last?.body else {
            Issue.record("no discard in the history")
            return
        }
        #expect(discarded.reason == .serverWon && discarded.requestedBy == .member)
        #expect(try rig.product() == before, "the server's record is unchanged")
        #expect(rig.network.requests.count == sent, "nothing more was sent")
        #expect(try rig.outbox.badgeCount() == 0)
    }

    @Test func keepingMineSupersedesTheEditAndSendsANewOneAgainstTheServersRevision() async throws {
        let rig = try Rig()
        try await rig.createProduct()
        try rig.server.changeRecord(type: "product", id: "p-1", businessID: Self.business, patch: Data(#"{"name":"Antiseptic 1 l"}"#.utf8))
        guard case .conflicted(let id, let revision) = try await rig.outbox.save(Self.priceEdit(price: "13", revision: "1")),
            let revision
        else {
            Issue.record("a stale edit is not conflicted with the server's revision")
            return
        }
        let resent = try #require(try await rig.outbox.resolveConflict(id, keeping: .mine(
            payload: Data(#"{"price":13}"#.utf8), baseRevision: revision)))
        try await rig.drainUntilSettled()

        #expect(try rig.outbox.operation(id)?.status == .superseded)
        #expect(try rig.outbox.operation(id)?.supersededBy == resent)
        #expect(try rig.outbox.operation(resent)?.status == .synced)
        let last = try #require(rig.network.requests.last)
        #expect(last.headers["If-Match"] == #""2""#, "the server's revision")
        #expect(last.headers["Idempotency-Key"] == resent.idempotencyKey, "a new operation, a new key")
        let record = try #require(try rig.product())
        #expect(record.revision == 3 && record.idempotencyKey == resent.idempotencyKey)
        #expect(String(decoding: record.body, as: UTF8.self) == #"{"id":"p-1","name":"Antiseptic 1 l","price":13}"#,
                "both changes kept")
        let applied = try rig.server.appliedCounts()
        #expect(applied[resent.idempotencyKey] == 1 && applied[id.idempotencyKey] == nil)
    }

    @Test func theRebaseRuleAppliesTheEditAfterOneRebaseUnderTheSameKey() async throws {
        let rig = try Rig { $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 1)) }
        try await rig.createProduct()
        rig.network.setOnline(false)
        guard case .queued(let id) = try await rig.outbox.save(Self.priceEdit(price: "13", revision: "1")) else {
            Issue.record("an edit with no signal is queued")
            return
        }
        try rig.server.changeRecord(type: "product", id: "p-1", businessID: Self.business, patch: Data(#"{"name":"Antiseptic 1 l"}"#.utf8))
        rig.network.setOnline(true)
        try await rig.drainUntilSettled()

        #expect(try rig.outbox.operation(id)?.status == .synced)
        #expect(try rig.outbox.operation(id)?.state.rebaseCount == 1)
        let edits = rig.network.requests.filter { $0.method == "PATCH" }
        #expect(edits.map { $0.headers["If-Match"] } == [#""1""#, #""2""#])
        #expect(Set(edits.compactMap { $0.headers["Idempotency-Key"] }) == [id.idempotencyKey])
        #expect(rig.serverEvents.filter { $0.method == "PATCH" }.map(\.outcome) == [.revisionConflict, .applied])
        #expect(try rig.server.appliedCounts()[id.idempotencyKey] == 1, "the 412 kept no claim: the same key applied")
        #expect(try rig.product()?.revision == 3)
        #expect(try rig.productFields()["price"] as? Int == 13)
    }

    @Test func aReplayOfAnAppliedUpdateWhoseAnswerWasLostGetsItsStoredAnswerNotAConflict() async throws {
        let rig = try Rig()
        try await rig.createProduct()
        let id = try await rig.outbox.enqueue(Self.priceEdit(price: "13", revision: "1"))
        rig.server.addFaults([Fault(.dropAfterCommit, key: id.idempotencyKey)])
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(id)?.status == .queued, "no answer: sent again later")
        #expect(try rig.product()?.revision == 2, "but it applied")
        // Another device moves the record on before the retry: If-Match "1" is stale now.
        try rig.server.changeRecord(type: "product", id: "p-1", businessID: Self.business, patch: Data(#"{"name":"Antiseptic 1 l"}"#.utf8))
        try await rig.drainUntilSettled()

        let row = try #require(try rig.outbox.operation(id))
        #expect(row.status == .synced)
        #expect(row.latestOutcome == .replayed)
        #expect(row.attemptCount == 2)
        #expect(row.serverRevision == "2", "the stored answer's revision")
        #expect(rig.serverEvents.filter { $0.method == "PATCH" }.map(\.outcome) == [.applied, .replayed])
        #expect(try rig.server.appliedCounts()[id.idempotencyKey] == 1)
        #expect(try rig.product()?.revision == 3)
        #expect(try rig.productFields()["price"] as? Int == 13 && rig.productFields()["name"] as? String == "Antiseptic 1 l")
    }

    // MARK: Stable ids

    @Test func aStableIDSavedTwiceIsAppliedOnce() async throws {
        let rig = try Rig()
        let id = OperationID()
        let request = Self.product("p-7", operationID: id)
        guard case .synced = try await rig.outbox.save(request) else {
            Issue.record("the first save did not sync")
            return
        }
        guard case .alreadySaved(let snapshot) = try await rig.outbox.save(request) else {
            Issue.record("the second save was not recognised")
            return
        }
        #expect(snapshot.id == id && snapshot.status == .synced)
        #expect(try await rig.outbox.enqueue(request) == id)
        try await rig.drainUntilSettled()
        #expect(rig.network.requests.count == 1, "the double tap sent nothing")
        #expect(try rig.server.appliedCounts() == [id.idempotencyKey: 1])
        #expect(try rig.server.records().count == 1)
        #expect(try rig.product("p-7")?.revision == 1, "a second create would show as revision 2")
    }

    // MARK: Dependencies

    @Test func aStockMovementIsAppliedOnlyAfterItsProductsCreate() async throws {
        let rig = try Rig { $0.maxConcurrentLanes = 4 }
        let productID = OperationID()
        rig.server.addFaults([Fault(.unavailable, key: productID.idempotencyKey)])
        let product = try await rig.outbox.enqueue(Self.product("p-9", operationID: productID))
        let movement = try await rig.outbox.enqueue(OutboxRequest(
            businessID: Self.business, operationType: "stock.move", endpoint: "/stock-movements",
            payload: Data(#"{"id":"m-1","product_id":"p-9","quantity":-2}"#.utf8), entityID: "stock-m-1",
            category: "Stock", entityLabel: "2 x Antiseptic 500 ml", summary: "Sold", dependsOn: [product]))
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(movement)?.waitingOn == .dependency(product, .queued))
        #expect(rig.serverEvents.map(\.path) == ["/products"], "the movement waits for its product")

        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(product)?.status == .synced)
        #expect(try rig.outbox.operation(movement)?.status == .synced)
        let applied = rig.serverEvents.filter { $0.outcome == .applied }.map(\.path)
        #expect(applied == ["/products", "/stock-movements"])
        #expect(!rig.serverEvents.contains { $0.path == "/stock-movements" && $0.status == 422 }, "never sent before its product existed")
        #expect(try rig.server.records().map(\.type).sorted() == ["product", "stock_movement"])
        #expect(try rig.server.appliedCounts()[movement.idempotencyKey] == 1)
    }

    // MARK: Coalescing

    @Test func coalescingSendsOnlyTheLastOfSeveralEdits() async throws {
        let rig = try Rig { $0.operationPolicies["product.update"] = .idempotent.coalescing() }
        try await rig.createProduct()
        rig.network.setOnline(false)
        var ids: [OperationID] = []
        for price in ["13", "14", "15"] {
            ids.append(try await rig.outbox.enqueue(Self.priceEdit(price: price, revision: "1")))
        }
        rig.network.setOnline(true)
        try await rig.drainUntilSettled()

        #expect(try ids.dropLast().allSatisfy { try rig.outbox.operation($0)?.status == .superseded })
        #expect(try rig.outbox.operation(ids[2])?.status == .synced)
        let edits = rig.network.requests.filter { $0.method == "PATCH" }
        #expect(edits.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"price":15}"#])
        let applied = try rig.server.appliedCounts()
        #expect(applied[ids[2].idempotencyKey] == 1)
        #expect(applied[ids[0].idempotencyKey] == nil && applied[ids[1].idempotencyKey] == nil)
        #expect(try rig.product()?.revision == 2, "one update")
        #expect(try rig.productFields()["price"] as? Int == 15)
    }

    // MARK: Giving up

    @Test func theRetryPolicyGivesUpAfterThreeUnavailableAnswers() async throws {
        let rig = try Rig { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 3) }
        let id = OperationID()
        rig.server.addFaults(Array(repeating: Fault(.unavailable, key: id.idempotencyKey), count: 5))
        _ = try await rig.outbox.enqueue(Self.product("p-3", operationID: id))
        try await rig.drainUntilSettled()

        let row = try #require(try rig.outbox.operation(id))
        #expect(row.status == .failed)
        #expect(row.lastErrorCode == ErrorCode.gaveUp)
        #expect(row.attemptCount == 3)
        #expect(rig.server.pendingFaults.count == 2, "exactly three requests reached the server")
        #expect(rig.serverEvents.map(\.status) == [503, 503, 503])
        #expect(try rig.server.appliedCounts().isEmpty && rig.server.records().isEmpty)

        // A retry starts over: the last two 503s, then the create applies once.
        try await rig.outbox.retry(id)
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(id)?.status == .synced)
        #expect(try rig.server.appliedCounts() == [id.idempotencyKey: 1])
    }
}

extension EndToEndTests.Rig {
    /// Product `id` created through the engine and synced: revision 1 on the server.
    @discardableResult
    func createProduct(_ id: String = "p-1", price: String = "12.5") async throws -> OperationID {
        let saved = try await outbox.save(IntentEndToEndTests.product(id, price: price))
        let synced = if case .synced = saved { true } else { false }
        try #require(synced, "the create of \(id) did not sync: \(saved)")
        let record = try #require(try product(id))
        #expect(record.revision == 1)
        return try #require(OperationID(record.idempotencyKey))
    }

    /// The server's product `id`.
    func product(_ id: String = "p-1") throws -> StoredRecord? {
        try server.records().first { $0.type == "product" && $0.id == id }
    }

    /// The server's product `id`, as a JSON object.
    func productFields(_ id: String = "p-1") throws -> [String: Any] {
        let record = try #require(try product(id))
        return try #require(try JSONSerialization.jsonObject(with: record.body) as? [String: Any])
    }
}
