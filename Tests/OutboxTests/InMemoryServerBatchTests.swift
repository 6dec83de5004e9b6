import Foundation
import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire
import Testing

/// The in-memory server's `POST /sync/batch`: the same contract as the loopback test server's.
@Suite("In-memory server batches", .timeLimit(.minutes(10)))
struct InMemoryServerBatchTests {
    private let created = #"{"id":"p-1","name":"Gauze","price":12.5}"#

    private func operation(
        _ id: String, _ method: String = "POST", _ endpoint: String = "/products", key: String? = nil, payload: String,
        baseRevision: String? = nil
    ) -> BatchOperation {
        BatchOperation(
            operationID: id, idempotencyKey: key ?? id, businessID: "pharmacy-7", operationType: "product.create", method: method,
            endpoint: endpoint, payloadVersion: 1, baseRevision: baseRevision, payload: Data(payload.utf8))
    }

    private func sendBatch(_ server: InMemoryServer, _ operations: [BatchOperation]) async throws -> TransportResponse {
        let body = try BatchRequest(operations: operations).encoded()
        return try await server.send(TransportRequest(
            method: "POST", endpoint: BatchRequest.path, headers: ["Content-Type": "application/json"], body: body))
    }

    private func results(_ response: TransportResponse) throws -> [BatchResult] {
        #expect(response.statusCode == 200)
        return try JSONDecoder().decode(BatchResponse.self, from: response.body).results
    }

    private func sendSingle(_ server: InMemoryServer, key: String, body: String) async throws -> TransportResponse {
        try await server.send(TransportRequest(
            method: "POST", endpoint: "/products", headers: ["Idempotency-Key": key, "X-Business-ID": "pharmacy-7", "Content-Type": "application/json"],
            body: Data(body.utf8)))
    }

    private func code(_ body: Data) -> String? {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["code"] as? String
    }

    @Test func eachOperationIsAnsweredAsItsSingleRequestAndABatchedAndASingleSendReplayEachOther() async throws {
        let server = InMemoryServer()
        #expect(try await sendSingle(server, key: "c-1", body: created).statusCode == 201)
        let operations = [
            operation("op-new", payload: #"{"id":"p-2"}"#),
            operation("op-copy", key: "c-1", payload: created),
            operation("op-reused", key: "c-1", payload: #"{"id":"p-1","name":"Other"}"#),
            operation("op-edit", "PATCH", "/products/p-1", payload: #"{"price":13}"#, baseRevision: "1"),
            operation("op-stale", "PATCH", "/products/p-1", payload: #"{"price":11}"#, baseRevision: "1"),
            operation("op-blank", key: "", payload: #"{"id":"p-3"}"#),
        ]
        let answered = try results(try await sendBatch(server, operations))
        #expect(answered.map(\.operationID) == operations.map(\.operationID))
        #expect(answered.map(\.outcome) == [.accepted, .replayed, .keyConflict, .accepted, .revisionConflict, .rejected])
        #expect(answered.map(\.status) == [201, 201, 409, 200, 412, 400])
        #expect(answered[3].headers["ETag"] == #""3""#)
        #expect(code(answered[4].body) == "revision_conflict")
        #expect(server.currentRecord(at: "/products/p-1")?.body == Data(#"{"id":"p-1","name":"Gauze","price":13}"#.utf8))
        #expect(server.appliedCount("c-1") == 1)
        #expect(server.appliedCount("op-stale") == 0, "a 412 keeps no claim")

        let single = try await sendSingle(server, key: "op-new", body: #"{"id":"p-2"}"#)
        #expect(single.statusCode == 201)
        #expect(single.header("Idempotent-Replayed") == "true")
        #expect(single.body == answered[0].body)
        #expect(server.appliedCount("op-new") == 1)
        #expect(server.batches.count == 1)
        #expect(server.operationsPerBatch == [6])
        #expect(server.records.map(\.key) == ["c-1", "op-new", "op-edit"])
    }

    @Test func oneOperationCanBeAnswered503OrLeftOutOfTheAnswerAppliedOrNot() async throws {
        let server = InMemoryServer()
        server.inject(.respond(.error(503, code: "unavailable", message: "down", headers: ["Retry-After": "3"])), forKey: "op-2")
        server.inject(.applyThenDropResponse, forKey: "op-3")
        server.inject(.noResponse(.timedOut), forKey: "op-4")
        let operations = (1...4).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        let first = try results(try await sendBatch(server, operations))
        #expect(first.map(\.operationID) == ["op-1", "op-2"], "op-3 and op-4 are missing from the answer")
        #expect(first.map(\.outcome) == [.accepted, .retry])
        #expect(first[1].headers["Retry-After"] == "3")
        #expect(server.appliedCount("op-2") == 0)
        #expect(server.appliedCount("op-3") == 1, "applied, its answer lost")
        #expect(server.appliedCount("op-4") == 0)

        let again = try results(try await sendBatch(server, operations))
        #expect(again.map(\.outcome) == [.replayed, .accepted, .replayed, .accepted])
        #expect(server.maxAppliedCount == 1)
        #expect(server.operationsPerBatch == [4, 4])
    }

    @Test func aWholeBatchCanBeRefused413Or401Or503OrLoseItsAnswer() async throws {
        let server = InMemoryServer()
        let operations = (1...2).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        server.inject(
            .respond(.error(413, code: "batch_too_large", message: "split it")),
            .respond(.error(401, code: "unauthorized", message: "sign in")),
            .respond(.error(503, code: "unavailable", message: "down")))
        for status in [413, 401, 503] {
            #expect(try await sendBatch(server, operations).statusCode == status)
        }
        #expect(server.maxAppliedCount == 0, "nothing of them applied")

        server.inject(.applyThenDropResponse)
        await #expect(throws: URLError.self) { try await sendBatch(server, operations) }
        #expect(server.appliedCount("op-1") == 1 && server.appliedCount("op-2") == 1)
        #expect(try results(try await sendBatch(server, operations)).map(\.outcome) == [.replayed, .replayed])
        #expect(server.batches.count == 5, "every batch counted, whatever it was answered")
    }

    @Test func tooManyOperationsIs413WithTheLimitAndABodyThatIsNotABatchIs400() async throws {
        let server = InMemoryServer(maxBatchOperations: 2)
        let three = (1...3).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        let tooMany = try await sendBatch(server, three)
        #expect(tooMany.statusCode == 413)
        let body = try #require(try JSONSerialization.jsonObject(with: tooMany.body) as? [String: Any])
        #expect(body["code"] as? String == "batch_too_large")
        #expect(body["max_operations"] as? Int == 2)
        #expect(server.maxAppliedCount == 0)

        let malformed = try await server.send(TransportRequest(
            method: "POST", endpoint: BatchRequest.path, headers: [:], body: Data(#"{"operations":[{}]}"#.utf8)))
        #expect(malformed.statusCode == 400)
        #expect(code(malformed.body) == "batch_invalid")
        #expect(server.operationsPerBatch == [3], "a body that is not a batch is a request, not a batch")
        #expect(server.requests.count == 2)
    }

    @Test func aFaultForAKeyMeetsASingleRequestWithThatKeyToo() async throws {
        let server = InMemoryServer()
        server.inject(.respond(.error(503, code: "unavailable", message: "down")), forKey: "op-1")
        #expect(try await sendSingle(server, key: "op-2", body: #"{"id":"p-2"}"#).statusCode == 201, "another key is not met")
        #expect(try await sendSingle(server, key: "op-1", body: #"{"id":"p-1"}"#).statusCode == 503)
        #expect(try await sendSingle(server, key: "op-1", body: #"{"id":"p-1"}"#).statusCode == 201, "consumed")
    }
}
