import Foundation
@testable import IdempotencyClaims
import OutboxCrypto
import OutboxWire
import Testing

private let defaultBody = #"{"id":"p-1","name":"Café"}"#

/// An operation in the harness's scope (business `b-1`, `product.create`), its key its id.
private func operation(_ id: String, key: String? = nil, body: String = defaultBody) -> BatchOperation {
    BatchOperation(
        operationID: id, idempotencyKey: key ?? id, businessID: "b-1", operationType: "product.create", method: "POST",
        endpoint: "/products", payloadVersion: 1, baseRevision: nil, payload: Data(body.utf8))
}

private func body(_ operations: [BatchOperation]) throws -> Data {
    try BatchRequest(operations: operations).encoded()
}

private func results(_ response: ClaimResponse) throws -> [String: BatchResult] {
    #expect(response.status == 200)
    #expect(response.header("Content-Type") == "application/json")
    let decoded = try JSONDecoder().decode(BatchResponse.self, from: response.body)
    return Dictionary(uniqueKeysWithValues: decoded.results.map { ($0.operationID, $0) })
}

private func code(_ body: Data) -> String? {
    ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["code"] as? String
}

/// Batches on every store: each operation claimed and applied on its own, as its single request.
@Suite("Batch handling")
struct BatchHandlingTests {
    @Test(arguments: Backend.allCases)
    func everyOperationOfABatchIsAnsweredOnItsOwnWhateverTheOthersMeet(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend, policy: ClaimPolicy(inProgressLease: 60))
        #expect(try harness.handle(key: "replay-me").outcome == .applied)
        #expect(try harness.handle(key: "conflict-me", body: #"{"id":"p-9"}"#).outcome == .applied)
        let now = harness.clock.now()
        try harness.put(
            ClaimRecord(fingerprint: SHA256Digest(of: Data(defaultBody.utf8)), takenAt: now,
                        state: .inProgress(token: ClaimToken(), leaseExpiresAt: now.addingTimeInterval(60))),
            key: "busy")

        let operations = [
            operation("op-new", key: "new"),
            operation("op-replay", key: "replay-me"),
            operation("op-conflict", key: "conflict-me"),
            operation("op-busy", key: "busy"),
            operation("op-stale", key: "stale"),
            operation("op-blank", key: "  "),
            operation("op-fails", key: "fails"),
            operation("op-parked", key: "parked"),
        ]
        let response = harness.batch(try body(operations), writes: ["op-stale": .refusing, "op-fails": .failing, "op-parked": .approval])
        let decoded = try JSONDecoder().decode(BatchResponse.self, from: response.body)
        #expect(decoded.results.map(\.operationID) == operations.map(\.operationID), "every operation answered, in order")
        let byID = try results(response)
        let expected: [String: (BatchOutcome, Int)] = [
            "op-new": (.accepted, 201), "op-replay": (.replayed, 201), "op-conflict": (.keyConflict, 409),
            "op-busy": (.inProgress, 409), "op-stale": (.revisionConflict, 412), "op-blank": (.rejected, 400),
            "op-fails": (.retry, 500), "op-parked": (.accepted, 202),
        ]
        for (id, (outcome, status)) in expected {
            #expect(byID[id]?.outcome == outcome, "\(id)")
            #expect(byID[id]?.status == status, "\(id)")
        }
        #expect(byID["op-new"]?.headers == ["Content-Type": "application/json", "Location": "/products/p-1"],
                "the stored headers only, as a single answer has them")
        #expect(byID["op-replay"]?.headers["Idempotent-Replayed"] == "true")
        #expect(code(byID["op-conflict"]?.body ?? Data()) == "idempotency_conflict")
        #expect(byID["op-busy"]?.headers["Retry-After"] == "1")
        #expect(byID["op-stale"]?.body == Write.refusal.body)
        #expect(byID["op-stale"]?.headers["ETag"] == #""7""#)
        #expect(code(byID["op-blank"]?.body ?? Data()) == "idempotency_key_required")
        #expect(code(byID["op-fails"]?.body ?? Data()) == "internal_error")

        #expect(try harness.effects("new") == 1)
        #expect(try harness.effects("parked") == 1)
        #expect(try harness.effects("replay-me") == 1, "replayed, not applied again")
        #expect(try harness.effects("conflict-me") == 1)
        #expect(try harness.effects("busy") == 0)
        #expect(try harness.effects("stale") == 0, "the refusal rolled back")
        #expect(try harness.effects("fails") == 0, "the failure rolled back")
        #expect(try harness.claim("stale") == nil, "a refusal leaves no claim")
        #expect(try harness.claim("fails") == nil, "a failure leaves no claim")
        guard case .inProgress? = try harness.claim("busy")?.state else {
            Issue.record("the claim in progress is left as it was")
            return
        }
    }

    @Test(arguments: Backend.allCases)
    func aBatchedAndASingleSendOfOneKeyReplayEachOthersAnswer(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let batched = try #require(try results(harness.batch(try body([operation("op-a", key: "a")])))["op-a"])
        #expect(batched.outcome == .accepted)
        let single = try harness.handle(key: "a")
        #expect(single.outcome == .replayed)
        #expect(single.response.status == batched.status)
        #expect(single.response.body == batched.body)
        #expect(Dictionary(uniqueKeysWithValues: single.response.headers.map { ($0.name, $0.value) })
                == batched.headers.merging(["Idempotent-Replayed": "true"]) { $1 })
        #expect(try harness.handle(key: "a", body: #"{"id":"p-2"}"#).outcome == .conflict,
                "a single send with another payload conflicts with the batched one")

        let first = try harness.handle(key: "b")
        #expect(first.outcome == .applied)
        let replayed = try #require(try results(harness.batch(try body([operation("op-b", key: "b")])))["op-b"])
        #expect(replayed.outcome == .replayed)
        #expect(replayed.status == first.response.status)
        #expect(replayed.body == first.response.body)
        #expect(replayed.headers["Idempotent-Replayed"] == "true")
        let conflicting = try #require(try results(harness.batch(try body([operation("op-b2", key: "b", body: "{}")])))["op-b2"])
        #expect(conflicting.outcome == .keyConflict)
        #expect(try harness.effects("a") == 1)
        #expect(try harness.effects("b") == 1)
    }

    @Test(arguments: Backend.allCases)
    func aConflictOnOneOperationLeavesTheOthersAppliedAndCommitted(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        _ = try harness.handle(key: "y", body: #"{"id":"p-0"}"#)
        let batch = try body([operation("op-x", key: "x"), operation("op-y", key: "y"), operation("op-z", key: "z")])
        let first = try results(harness.batch(batch))
        #expect(first.mapValues(\.outcome) == ["op-x": .accepted, "op-y": .keyConflict, "op-z": .accepted])
        #expect(try harness.effects("x") == 1)
        #expect(try harness.effects("z") == 1)
        #expect(try harness.claim("x")?.response?.status == 201, "committed with its claim")
        #expect(try harness.claim("z")?.response?.status == 201)

        let again = try results(harness.batch(batch))
        #expect(again.mapValues(\.outcome) == ["op-x": .replayed, "op-y": .keyConflict, "op-z": .replayed])
        #expect(try harness.totalEffects() == 3)
    }

    @Test(arguments: Backend.allCases)
    func anOperationWhoseKeyIsBeingAppliedElsewhereIsInProgressAndTheOthersGoOn(_ backend: Backend) async throws {
        let harness = try ClaimsHarness.make(backend)
        let claimed = Signal()
        let gate = Gate()
        let single = Task {
            try await onThread {
                try harness.handle(key: "k-1", whileClaimed: {
                    claimed.fire()
                    try gate.wait()
                })
            }
        }
        await claimed.wait()
        let batch = try body([operation("op-1", key: "k-1"), operation("op-2", key: "k-2")])
        let during = try results(harness.batch(batch))
        #expect(during["op-1"]?.outcome == .inProgress)
        #expect(during["op-1"]?.status == 409)
        #expect(during["op-2"]?.outcome == .accepted)
        #expect(try harness.effects("k-1") == 0)

        gate.open()
        #expect(try await single.value.outcome == .applied)
        let after = try results(harness.batch(batch))
        #expect(after.mapValues(\.outcome) == ["op-1": .replayed, "op-2": .replayed])
        #expect(try harness.effects("k-1") == 1)
        #expect(try harness.effects("k-2") == 1)
    }

    @Test func aBatchThatCannotBeReadIsRefusedWholeSayingWhatIsWrongAndNothingRuns() throws {
        let harness = try ClaimsHarness.make(.memory)
        let valid = try body([operation("op-1")])
        let text = String(decoding: valid, as: UTF8.self)
        let cases: [(Data, String)] = [
            (Data("not json".utf8), "not JSON"),
            (Data(#"{"ops":[]}"#.utf8), "operations is missing"),
            (Data(#"{"operations":[]}"#.utf8), "at least one operation"),
            (Data(text.replacingOccurrences(of: #""idempotency_key":"op-1","#, with: "").utf8), "operations[0].idempotency_key is missing"),
            (Data(text.replacingOccurrences(of: #""payload_version":1"#, with: #""payload_version":"1""#).utf8),
             "operations[0].payload_version must be a whole number"),
            (Data(text.replacingOccurrences(of: #""payload":""#, with: #""payload":"!"#).utf8), "operations[0].payload is not base64"),
            (try body([operation("")]), "operations[0].operation_id is empty"),
            (try body([operation("op-1", key: "a"), operation("op-1", key: "b")]), #"same operation_id "op-1""#),
            (Data(text.replacingOccurrences(of: #""payload_version":1"#, with: #""payload_version":1.5"#).utf8),
             "operations[0].payload_version is 1.5: it must be a whole number"),
            (Data(text.replacingOccurrences(of: #""payload_version":1"#, with: #""payload_version":9223372036854775808"#).utf8),
             "operations[0].payload_version is 9223372036854775808, out of range"),
            (Data(text.replacingOccurrences(of: #""payload_version":1"#, with: #""payload_version":1e400"#).utf8),
             "operations[0].payload_version is 1e400, a number out of range"),
            (Data(text.replacingOccurrences(of: #""idempotency_key":"op-1""#, with: #""idempotency_key":"op-\ud800""#).utf8),
             #"operations[0].idempotency_key holds \uD800"#),
            (Data(text.replacingOccurrences(of: #""idempotency_key":"op-1""#, with: #""idempotency_key":"op-1","idempotency_key":"op-2""#).utf8),
             "operations[0].idempotency_key appears 2 times"),
            // `#` stands for a byte that is not UTF-8 (the rest of the body holds none).
            (Data(text.replacingOccurrences(of: #""business_id":"b-1""#, with: #""business_id":"b-#""#).utf8.map { $0 == UInt8(ascii: "#") ? 0xFF : $0 }),
             "operations[0].business_id holds bytes that are not UTF-8"),
        ]
        for (bytes, phrase) in cases {
            let response = harness.batch(bytes)
            #expect(response.status == 400, "\(phrase)")
            #expect(response.header("Content-Type") == "application/json")
            let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            #expect(object["code"] as? String == "batch_invalid")
            let message = try #require(object["message"] as? String)
            #expect(message.contains(phrase), "\(message)")
        }
        #expect(try harness.totalEffects() == 0)
    }

    @Test(arguments: Backend.allCases)
    func operationIDsAndKeysThatDifferOnlyInTheirBytesAreTwoOperations(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let response = harness.batch(try body([operation("op-caf\u{E9}", key: "k-caf\u{E9}"), operation("op-cafe\u{301}", key: "k-cafe\u{301}")]))
        let answered = try JSONDecoder().decode(BatchResponse.self, from: response.body).results
        #expect(answered.map(\.outcome) == [.accepted, .accepted])
        #expect(answered.map { Array($0.operationID.utf8) } == [Array("op-caf\u{E9}".utf8), Array("op-cafe\u{301}".utf8)])
        #expect(try harness.totalEffects() == 2)
    }

    @Test func aBatchOfMoreOperationsThanTheServerTakesIs413WithTheLimitAndNothingRuns() throws {
        let harness = try ClaimsHarness.make(.memory)
        let response = harness.batch(try body((0..<4).map { operation("op-\($0)") }), maxOperations: 3)
        #expect(response.status == 413)
        let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        #expect(object["code"] as? String == "batch_too_large")
        #expect(object["max_operations"] as? Int == 3)
        #expect((object["message"] as? String)?.contains("4 operations") == true)
        #expect(try harness.totalEffects() == 0)
        #expect(try results(harness.batch(try body((0..<3).map { operation("op-\($0)") }), maxOperations: 3)).count == 3)
    }

    @Test func anOperationThatAnswersNothingIsLeftOutOfTheAnswer() throws {
        let response = BatchHandling.respond(to: try body([operation("op-1"), operation("op-2")])) { operation in
            operation.operationID == "op-1" ? nil : ClaimResponse(status: 201)
        }
        #expect(try JSONDecoder().decode(BatchResponse.self, from: response.body).results.map(\.operationID) == ["op-2"])
    }
}

/// What the batch protocol's words and shapes mean on the wire.
@Suite("Batch wire format")
struct BatchWireTests {
    @Test(arguments: [
        (201, [:], "{}", BatchOutcome.accepted),
        (202, [:], #"{"request_id":"apr-1","status":"pending_approval"}"#, .accepted),
        (200, ["idempotent-replayed": "TRUE"], "{}", .replayed),
        (409, [:], #"{"code":"idempotency_conflict","message":"m"}"#, .keyConflict),
        (422, [:], #"{"code":"idempotency_conflict","message":"m"}"#, .keyConflict),
        (409, ["Retry-After": "1"], #"{"code":"idempotency_in_progress","message":"m"}"#, .inProgress),
        (412, [:], #"{"code":"revision_conflict","message":"m"}"#, .revisionConflict),
        (409, [:], #"{"code":"revision_conflict","message":"m"}"#, .revisionConflict),
        (409, [:], #"{"code":"other","message":"m"}"#, .rejected),
        (400, [:], #"{"code":"idempotency_key_required","message":"m"}"#, .rejected),
        (404, [:], "", .rejected),
        (422, [:], "not json", .rejected),
        (401, [:], "", .unauthorized),
        (408, [:], "", .retry),
        (429, [:], "", .retry),
        (500, [:], "", .retry),
        (503, [:], "", .retry),
        (302, [:], "", .retry),
    ] as [(Int, [String: String], String, BatchOutcome)])
    func theOutcomeWordFollowsTheStatusAndTheBodysCode(status: Int, headers: [String: String], body: String, outcome: BatchOutcome) {
        #expect(BatchOutcome(status: status, headers: headers, body: Data(body.utf8)) == outcome)
    }

    @Test func aBatchTravelsAsSnakeCaseJSONWithItsPayloadInBase64() throws {
        let request = BatchRequest(operations: [
            BatchOperation(operationID: "op-1", idempotencyKey: "op-1", businessID: "b-1", operationType: "product.update",
                           method: "PATCH", endpoint: "/products/p-1", payloadVersion: 2, baseRevision: "3",
                           payload: Data(#"{"price":13}"#.utf8)),
        ])
        let encoded = try request.encoded()
        let object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        let first = try #require((object["operations"] as? [[String: Any]])?.first)
        #expect(Set(first.keys) == ["operation_id", "idempotency_key", "business_id", "operation_type", "method", "endpoint",
                                    "payload_version", "base_revision", "payload"])
        #expect(first["payload"] as? String == Data(#"{"price":13}"#.utf8).base64EncodedString())
        #expect(first["endpoint"] as? String == "/products/p-1")
        #expect(String(decoding: encoded, as: UTF8.self).contains(#""/products/p-1""#), "slashes are not escaped")
        #expect(try BatchRequest.decoded(from: encoded) == request)

        let response = BatchResponse(results: [BatchResult(operationID: "op-1", status: 200, headers: ["ETag": #""4""#], body: Data("{}".utf8))])
        let decoded = try JSONDecoder().decode(BatchResponse.self, from: try response.encoded())
        #expect(decoded == response)
        #expect(decoded.results.first?.outcome == .accepted)
    }
}
