import Foundation
import OutboxTestServer
import OutboxWire
import Synchronization
import Testing

private let gauze = #"{"id":"p-1","name":"Gauze","price":12.5}"#

/// An operation of a batch; its key is its id unless given.
private func operation(
    _ id: String, _ method: String = "POST", _ endpoint: String = "/products", key: String? = nil, payload: String,
    baseRevision: String? = nil, type: String = "product.create"
) -> BatchOperation {
    BatchOperation(
        operationID: id, idempotencyKey: key ?? id, businessID: "default", operationType: type, method: method,
        endpoint: endpoint, payloadVersion: 1, baseRevision: baseRevision, payload: Data(payload.utf8))
}

/// The text of `POST /sync/batch` carrying `operations`.
private func batchRequest(_ operations: [BatchOperation], close: Bool = false) throws -> String {
    request("POST", BatchRequest.path, body: String(decoding: try BatchRequest(operations: operations).encoded(), as: UTF8.self),
            close: close)
}

/// The results of a 200 answer, in the order answered.
private func results(_ response: RawResponse) throws -> [BatchResult] {
    #expect(response.status == 200)
    #expect(response.header("Content-Type") == "application/json")
    return try JSONDecoder().decode(BatchResponse.self, from: response.body).results
}

private func json(_ data: Data) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
}

/// Collects what the observer is told.
private final class Events: Sendable {
    let list = Mutex<[ServerEvent]>([])
    var all: [ServerEvent] { list.withLock { $0 } }
    func append(_ event: ServerEvent) { list.withLock { $0.append(event) } }
}

@Suite("Batched pushes", .timeLimit(.minutes(10)))
struct TestServerBatchTests {
    @Test(arguments: ServerStorageKind.allCases)
    func eachOperationIsAnsweredByItsEndpointAsItsSingleRequestWouldBe(_ storage: ServerStorageKind) async throws {
        // On a thread of its own: the first PostgreSQL server of the process starts a cluster.
        let (server, cleanUp) = try await onThread { try storage.start() }
        defer {
            server.stop()
            cleanUp()
        }
        #expect(try await exchange(server.port, request(key: "create-1", body: gauze)).status == 201)
        let operations = [
            operation("op-new", payload: #"{"id":"p-2","name":"Lint"}"#),
            operation("op-copy", key: "create-1", payload: gauze),
            operation("op-reused", key: "create-1", payload: #"{"id":"p-1","name":"Other"}"#),
            operation("op-edit", "PATCH", "/products/p-1", payload: #"{"price":13}"#, baseRevision: "1", type: "product.update"),
            operation("op-stale", "PATCH", "/products/p-1", payload: #"{"price":11}"#, baseRevision: "1", type: "product.update"),
            operation("op-movement", "POST", "/stock-movements", payload: #"{"id":"m-1","product_id":"p-9","quantity":-2}"#,
                      type: "stock_movement.create"),
            operation("op-nowhere", "POST", "/_control/reset", payload: "{}"),
            operation("op-method", "POST", "/products/p-1", payload: "{}"),
            operation("op-blank", key: " ", payload: #"{"id":"p-3"}"#),
        ]
        let answered = try results(try await exchange(server.port, try batchRequest(operations)))
        #expect(answered.map(\.operationID) == operations.map(\.operationID), "every operation, in order")
        #expect(answered.map(\.outcome) == [
            .accepted, .replayed, .keyConflict, .accepted, .revisionConflict, .rejected, .rejected, .rejected, .rejected,
        ])
        #expect(answered.map(\.status) == [201, 201, 409, 200, 412, 422, 404, 405, 400])
        let byID = Dictionary(uniqueKeysWithValues: answered.map { ($0.operationID, $0) })
        // Every storage keeps a change feed: its answers say where their change is visible, the
        // business's second change on the numbered stores, a transaction's id on PostgreSQL.
        var headers = byID["op-new"]?.headers ?? [:]
        let visibleText = headers.removeValue(forKey: "Outbox-Visible-At")
        let visible = try FeedPosition(text: try #require(visibleText))
        if storage != .postgres { #expect(visible == FeedPosition(epoch: 1, major: 2)) }
        #expect(headers == ["Content-Type": "application/json", "Location": "/products/p-2", "ETag": #""1""#])
        #expect(String(decoding: byID["op-copy"]?.body ?? Data(), as: UTF8.self)
                == #"{"type":"product","id":"p-1","revision":1,"record":{"id":"p-1","name":"Gauze","price":12.5,"revision":1}}"#)
        #expect(byID["op-copy"]?.headers["Idempotent-Replayed"] == "true")
        #expect(String(decoding: byID["op-edit"]?.body ?? Data(), as: UTF8.self)
                == #"{"type":"product","id":"p-1","revision":2,"record":{"id":"p-1","name":"Gauze","price":13,"revision":2}}"#)
        #expect(byID["op-edit"]?.headers["ETag"] == #""2""#)
        let conflict = try #require(json(byID["op-stale"]?.body ?? Data()))
        #expect(conflict["code"] as? String == "revision_conflict")
        #expect(conflict["server_revision"] as? String == "2")
        #expect(byID["op-method"]?.headers["Allow"] == "PUT, PATCH, DELETE")
        #expect(json(byID["op-blank"]?.body ?? Data())?["code"] as? String == "idempotency_key_required")
        #expect(try server.appliedCounts() == ["create-1": 1, "op-new": 1, "op-edit": 1], "a control path is never reached from a batch")
        #expect(try server.records().map(\.id) == ["p-1", "p-2"])

        // The 412 kept no claim: the same key, rebased, runs as a single request.
        let rebased = try await exchange(server.port, request("PATCH", "/products/p-1", key: "op-stale", body: #"{"price":11}"#,
                                                              headers: [#"If-Match: "2""#]))
        #expect(rebased.status == 200)
        #expect(rebased.header("Idempotent-Replayed") == nil)
    }

    @Test func aBatchedAndASingleSendOfOneKeyReplayEachOther() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let batched = try #require(try results(try await exchange(server.port, try batchRequest([operation("op-1", payload: gauze)]))).first)
        #expect(batched.outcome == .accepted)
        let single = try await exchange(server.port, request(key: "op-1", body: gauze))
        #expect(single.status == 201)
        #expect(single.header("Idempotent-Replayed") == "true")
        #expect(single.body == batched.body, "the batched answer, byte for byte")
        #expect(single.header("ETag") == batched.headers["ETag"])

        let first = try await exchange(server.port, request(key: "op-2", body: #"{"id":"p-2"}"#))
        let copy = try #require(try results(try await exchange(server.port, try batchRequest([operation("op-2", payload: #"{"id":"p-2"}"#)]))).first)
        #expect(copy.outcome == .replayed)
        #expect(copy.status == first.status)
        #expect(copy.body == first.body)

        // A copy of an applied update, batched after the record moved on: replayed, not 412.
        let edit = operation("op-3", "PATCH", "/products/p-1", payload: #"{"price":13}"#, baseRevision: "1", type: "product.update")
        #expect(try results(try await exchange(server.port, try batchRequest([edit]))).first?.outcome == .accepted)
        try server.changeRecord(type: "product", id: "p-1")
        let again = try await exchange(server.port, request("PATCH", "/products/p-1", key: "op-3", body: #"{"price":13}"#,
                                                            headers: [#"If-Match: "1""#]))
        #expect(again.status == 200)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1, "op-3": 1])
    }

    @Test func aBodyThatIsNotABatchIs400NamingWhatIsWrongAndAnotherMethodIs405() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let missing = try await exchange(server.port, request("POST", BatchRequest.path, body: #"{"operations":[{"operation_id":"op-1"}]}"#))
        #expect(missing.status == 400)
        #expect(missing.code == "batch_invalid")
        #expect((missing.json?["message"] as? String)?.hasPrefix("operations[0].idempotency_key is missing") == true)
        let twice = try await exchange(server.port, try batchRequest([operation("op-1", payload: "{}"), operation("op-1", key: "k", payload: "{}")]))
        #expect(twice.status == 400)
        #expect((twice.json?["message"] as? String)?.contains(#"the same operation_id "op-1""#) == true)
        let notJSON = try await exchange(server.port, request("POST", BatchRequest.path, body: "operations"))
        #expect(notJSON.code == "batch_invalid")
        let get = try await exchange(server.port, request("GET", BatchRequest.path))
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func tooManyOperationsOrTooLargeABodyIs413ForTheWholeBatch() async throws {
        let server = try TestServer(.init(maxBodyBytes: 2048, maxBatchOperations: 2))
        defer { server.stop() }
        let three = (1...3).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        let tooMany = try await exchange(server.port, try batchRequest(three))
        #expect(tooMany.status == 413)
        #expect(tooMany.code == "batch_too_large")
        #expect(tooMany.json?["max_operations"] as? Int == 2)
        #expect(try server.appliedCounts().isEmpty, "nothing of it applied")
        #expect(try results(try await exchange(server.port, try batchRequest(Array(three.prefix(2))))).count == 2,
                "a half of it is taken")

        let large = [operation("op-9", payload: #"{"id":"p-9","note":""# + String(repeating: "x", count: 2048) + #""}"#)]
        let tooLarge = try await exchangeUntilClosed(server.port, try batchRequest(large))
        #expect(String(decoding: tooLarge, as: UTF8.self).hasPrefix("HTTP/1.1 413 "))
        #expect(String(decoding: tooLarge, as: UTF8.self).contains("body_too_large"))
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1])
    }

    @Test func anOperationCanBeAnswered503OrLeftOutOfTheAnswerByItsKey() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.unavailable, key: "op-2", retryAfterSeconds: 3), Fault(.dropAfterCommit, key: "op-3")])
        let operations = (1...3).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        let first = try results(try await exchange(server.port, try batchRequest(operations)))
        #expect(first.map(\.operationID) == ["op-1", "op-2"], "op-3 is missing from the answer")
        #expect(first.map(\.outcome) == [.accepted, .retry])
        #expect(first.last?.status == 503)
        #expect(first.last?.headers["Retry-After"] == "3")
        #expect(try server.appliedCounts() == ["op-1": 1, "op-3": 1], "op-3 applied, its answer lost")
        #expect(server.pendingFaults.isEmpty)

        let again = try results(try await exchange(server.port, try batchRequest(operations)))
        #expect(again.map(\.outcome) == [.replayed, .accepted, .replayed])
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1, "op-3": 1])
    }

    @Test func aWholeBatchCanBeRefused401Or503OrLoseItsAnswer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let operations = (1...2).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        server.addFaults([Fault(.slow, key: "op-9"), Fault(.unauthorized, endpoint: BatchRequest.path)])
        let unauthorized = try await exchange(server.port, try batchRequest(operations))
        #expect(unauthorized.status == 401)
        #expect(unauthorized.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)

        server.addFaults([Fault(.unavailable, endpoint: "/products"), Fault(.unavailable)])
        let unavailable = try await exchange(server.port, try batchRequest(operations))
        #expect(unavailable.status == 503, "a fault naming neither endpoint nor key stops the batch as a whole")
        #expect(try server.appliedCounts().isEmpty)
        #expect(server.pendingFaults.map(\.kind) == [.slow, .unavailable], "those for one write are left for operations")
        try server.reset()

        server.addFaults([Fault(.dropAfterCommit, endpoint: BatchRequest.path)])
        let dropped = try await exchangeUntilClosed(server.port, try batchRequest(operations))
        #expect(dropped.isEmpty, "no byte of an answer")
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1], "every operation committed")
        let again = try results(try await exchange(server.port, try batchRequest(operations)))
        #expect(again.map(\.outcome) == [.replayed, .replayed])
    }

    @Test func aSlowOperationHoldsItsBatchUntilACopyOfItsKeyIsAnswered() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.slow, key: "op-2")])
        let operations = (1...2).map { operation("op-\($0)", payload: #"{"id":"p-\#($0)"}"#) }
        let text = try batchRequest(operations)
        let batch = Task { try await exchange(server.port, text) }
        await server.waitUntilHeld(key: "op-2")
        let copy = try await exchange(server.port, request(key: "op-2", body: #"{"id":"p-2"}"#))
        #expect(copy.status == 409)
        #expect(copy.code == "idempotency_in_progress")
        let answered = try results(try await batch.value)
        #expect(answered.map(\.outcome) == [.accepted, .accepted])
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1])
    }

    @Test func theObserverIsToldEachOperationWithItsPlaceInTheBatch() async throws {
        let events = Events()
        let server = try TestServer(.init(observer: { events.append($0) }))
        defer { server.stop() }
        let operations = [
            operation("op-1", payload: #"{"id":"p-1"}"#),
            operation("op-2", "PATCH", "/products/p-1?x=1", payload: #"{"n":1}"#, baseRevision: "1", type: "product.update"),
        ]
        _ = try results(try await exchange(server.port, try batchRequest(operations)))
        _ = try results(try await exchange(server.port, try batchRequest([operation("op-3", payload: #"{"id":"p-3"}"#)])))
        _ = try await exchange(server.port, request("POST", BatchRequest.path, body: "{}"))
        let seen = events.all
        #expect(seen.map(\.idempotencyKey) == ["op-1", "op-2", "op-3", nil])
        #expect(seen.map(\.outcome) == [.applied, .applied, .applied, .refused])
        #expect(seen.map(\.method) == ["POST", "PATCH", "POST", "POST"])
        #expect(seen.map(\.target) == ["/products", "/products/p-1?x=1", "/products", "/sync/batch"])
        #expect(seen.map(\.path) == ["/products", "/products/p-1", "/products", "/sync/batch"])
        #expect(seen.map(\.batch) == [
            .init(number: 1, operationID: "op-1", index: 0, count: 2),
            .init(number: 1, operationID: "op-2", index: 1, count: 2),
            .init(number: 2, operationID: "op-3", index: 0, count: 1),
            nil,
        ])
        #expect(seen.last?.status == 400)
    }
}
