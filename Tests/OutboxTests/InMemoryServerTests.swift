import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// The in-memory server's update rules: the same contract as the loopback test server's.
@Suite("In-memory server updates", .timeLimit(.minutes(10)))
struct InMemoryServerTests {
    private let created = #"{"id":"p-1","name":"Gauze","price":12.5}"#

    private func send(
        _ server: InMemoryServer, _ method: String, _ endpoint: String, key: String, body: String, ifMatch: String? = nil
    ) async throws -> TransportResponse {
        var headers = ["Idempotency-Key": key, "Content-Type": "application/json"]
        if let ifMatch { headers["If-Match"] = ifMatch }
        return try await server.send(TransportRequest(method: method, endpoint: endpoint, headers: headers, body: Data(body.utf8)))
    }

    private func json(_ response: TransportResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
    }

    @Test func aCreateIsAnsweredAsBeforeAndItsRecordCanBeUpdatedAgainstItsRevision() async throws {
        let server = InMemoryServer()
        let create = try await send(server, "POST", "/products", key: "c-1", body: created)
        #expect(create.statusCode == 201)
        #expect(String(decoding: create.body, as: UTF8.self) == #"{"revision":"1"}"#)
        #expect(server.currentRecord(at: "/products/p-1") == .init(path: "/products/p-1", body: Data(created.utf8), revision: 1))

        let patch = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":13}"#, ifMatch: #""1""#)
        #expect(patch.statusCode == 200)
        #expect(patch.header("ETag") == #""2""#)
        #expect(server.currentRecord(at: "/products/p-1")?.body == Data(#"{"id":"p-1","name":"Gauze","price":13}"#.utf8))
        let put = try await send(server, "PUT", "/products/p-1", key: "e-2", body: #"{"id":"p-1","name":"Lint"}"#, ifMatch: #""2""#)
        #expect(put.statusCode == 200)
        #expect(server.currentRecord(at: "/products/p-1")?.body == Data(#"{"id":"p-1","name":"Lint"}"#.utf8))
        #expect(server.records.map(\.key) == ["c-1", "e-1", "e-2"])
    }

    @Test func aStaleRevisionIs412WithTheServersSideAndLeavesNoClaim() async throws {
        let server = InMemoryServer()
        _ = try await send(server, "POST", "/products", key: "c-1", body: created)
        let moved = try #require(server.changeRecord(at: "/products/p-1", patch: Data(#"{"price":14}"#.utf8)))
        #expect(moved.revision == 2)
        #expect(server.records.count == 1, "a change made elsewhere is not a write the server applied for the client")

        let conflict = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":13}"#, ifMatch: #""1""#)
        #expect(conflict.statusCode == 412)
        #expect(conflict.header("ETag") == #""2""#)
        let body = try json(conflict)
        #expect(body["code"] as? String == "revision_conflict")
        #expect(body["server_revision"] as? String == "2")
        #expect((body["current"] as? [String: Any])?["price"] as? Int == 14)
        #expect(server.appliedCount("e-1") == 0)

        let rebased = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":13}"#, ifMatch: #""2""#)
        #expect(rebased.statusCode == 200, "the 412 kept no claim")
        #expect(rebased.header("Idempotent-Replayed") == nil)
        #expect(server.appliedCount("e-1") == 1)
        #expect(server.currentRecord(at: "/products/p-1")?.revision == 3)
    }

    @Test func aCopyOfAnAppliedUpdateIsReplayedAfterTheRecordMovedOn() async throws {
        let server = InMemoryServer()
        _ = try await send(server, "POST", "/products", key: "c-1", body: created)
        server.inject(.applyThenDropResponse)
        await #expect(throws: URLError.self) {
            _ = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":13}"#, ifMatch: #""1""#)
        }
        server.changeRecord(at: "/products/p-1")
        let copy = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":13}"#, ifMatch: #""1""#)
        #expect(copy.statusCode == 200)
        #expect(copy.header("Idempotent-Replayed") == "true")
        #expect(server.appliedCount("e-1") == 1)
    }

    @Test func withoutIfMatchTheLastWriterWinsAndAMissingRecordIs404WithoutAClaim() async throws {
        let server = InMemoryServer()
        let missing = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":9}"#)
        #expect(missing.statusCode == 404)
        _ = try await send(server, "POST", "/products", key: "c-1", body: created)
        server.changeRecord(at: "/products/p-1")
        let blind = try await send(server, "PATCH", "/products/p-1", key: "e-1", body: #"{"price":9}"#)
        #expect(blind.statusCode == 200)
        #expect(server.appliedCount("e-1") == 1)
        let bad = try await send(server, "PATCH", "/products/p-1", key: "e-2", body: "{}", ifMatch: "3")
        #expect(bad.statusCode == 400)
        #expect(server.changeRecord(at: "/products/p-9") == nil)
        #expect(server.changeRecord(at: "/products/p-1", patch: Data("[1]".utf8)) == nil, "a patch is a JSON object")
    }

    @Test func theEngineRecordsTheServersRevisionAndRecordOnAConflictAndRebasesOnIt() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server) { $0.operationPolicies["product.rename"] = .idempotent.onConflict(.rebase(maxTimes: 1)) }
        defer { outbox.close() }
        _ = try await send(server, "POST", "/products", key: "c-1", body: created)
        server.changeRecord(at: "/products/p-1", patch: Data(#"{"price":14}"#.utf8))
        func edit(_ type: String, _ payload: String) -> OutboxRequest {
            OutboxRequest(businessID: "pharmacy-7", operationType: type, method: "PATCH", endpoint: "/products/p-1",
                          payload: Data(payload.utf8), entityID: "p-1", category: "Products", entityLabel: "Gauze",
                          summary: "Edit", baseRevision: "1")
        }
        guard case .conflicted(let id, _) = try await outbox.save(edit("product.update", #"{"price":13}"#)) else {
            Issue.record("a stale edit is not conflicted")
            return
        }
        let row = try #require(try outbox.operation(id))
        #expect(row.conflict?.serverRevision == "2")
        let current = try #require(row.conflict?.serverCurrent.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        #expect(current["price"] as? Int == 14)
        try await outbox.resolveConflict(id, keeping: .theirs)

        let renamed = try await outbox.enqueue(edit("product.rename", #"{"name":"Gauze 5 cm"}"#))
        await outbox.drain()
        await outbox.drain()
        #expect(try outbox.operation(renamed)?.status == .synced)
        #expect(server.currentRecord(at: "/products/p-1")?.body == Data(#"{"id":"p-1","name":"Gauze 5 cm","price":14}"#.utf8))
        #expect(server.appliedCount(renamed.idempotencyKey) == 1)
    }
}
