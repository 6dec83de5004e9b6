import Foundation
import OutboxTestServer
import OutboxTestServerPostgres
import OutboxWire
import ThrowawayPostgres
import Testing

private func delete(_ path: String = "/products/p-1", key: String, ifMatch tag: String? = nil, body: String = "") -> String {
    request("DELETE", path, key: key, body: body, headers: tag.map(ifMatch) ?? [])
}

/// An operation of a batch; its key is its id unless given.
private func operation(
    _ id: String, _ method: String, _ endpoint: String, key: String? = nil, type: String, baseRevision: String? = nil, payload: String
) -> BatchOperation {
    BatchOperation(
        operationID: id, idempotencyKey: key ?? id, businessID: "default", operationType: type, method: method,
        endpoint: endpoint, payloadVersion: 1, baseRevision: baseRevision, payload: Data(payload.utf8))
}

private func text(_ response: RawResponse) -> String {
    String(decoding: response.body, as: UTF8.self)
}

@Suite("Deletes with revisions, keeping a tombstone", .timeLimit(.minutes(10)))
struct TestServerDeleteTests {
    @Test(arguments: ServerStorageKind.allCases)
    func aDeleteAgainstTheCurrentRevisionAnswersItsRevisionAndKeepsATombstone(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let deleted = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#))
        #expect(deleted.status == 200)
        #expect(deleted.header("ETag") == #""2""#)
        #expect(deleted.header("Content-Type") == "application/json")
        #expect(text(deleted) == #"{"type":"product","id":"p-1","revision":2,"deleted":true}"#)
        let tombstone = try #require(try rig.product())
        #expect(tombstone.isDeleted)
        #expect(tombstone.revision == 2)
        #expect(tombstone.idempotencyKey == "delete-1")
        #expect(tombstone.body.isEmpty, "a tombstone keeps no value")
        #expect(try rig.server.appliedCounts() == ["create-1": 1, "delete-1": 1])

        let listed = try await exchange(rig.port, request("GET", "/_control/records"))
        let line = try #require((listed.json?["records"] as? [[String: Any]])?.first)
        #expect(line["deleted"] as? Bool == true && line["revision"] as? Int == 2 && line["body"] as? String == "")
    }

    @Test(arguments: ServerStorageKind.allCases)
    func withoutIfMatchADeleteRemovesWhateverTheRevision(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        try rig.server.changeRecord(type: "product", id: "p-1", patch: Data(#"{"price":14}"#.utf8))
        let blind = try await exchange(rig.port, delete(key: "delete-1"))
        #expect(blind.status == 200, "the last writer wins, as for updates")
        #expect(blind.json?["revision"] as? Int == 3)
        #expect(try rig.product()?.isDeleted == true)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aStaleIfMatchIs412WithTheServersRevisionAndRecordAndLeavesNoClaim(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let moved = try rig.server.changeRecord(type: "product", id: "p-1", patch: Data(#"{"price":14}"#.utf8))
        let conflict = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#))
        #expect(conflict.status == 412)
        #expect(conflict.code == "revision_conflict")
        #expect(conflict.header("ETag") == #""2""#)
        #expect(conflict.json?["server_revision"] as? String == "2")
        let current = try #require(conflict.json?["current"] as? [String: Any])
        #expect(current["price"] as? Int == 14 && current["revision"] as? Int == 2 && current["id"] as? String == "p-1")
        #expect(try rig.product() == moved, "nothing written")
        #expect(try rig.server.appliedCounts()["delete-1"] == nil)

        let rebased = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""2""#))
        #expect(rebased.status == 200, "no claim was kept: the same key deletes against the server's revision")
        #expect(rebased.header("Idempotent-Replayed") == nil)
        #expect(rebased.json?["revision"] as? Int == 3)
        #expect(try rig.server.appliedCounts()["delete-1"] == 1)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aCopyOfAnAppliedDeleteGetsItsStoredAnswerAfterTheRecordWasCreatedAgain(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let first = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#, body: "{}"))
        #expect(first.status == 200)
        let recreated = try await exchange(rig.port, request(key: "create-2", body: UpdateRig.created))
        #expect(recreated.status == 201)
        let copy = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#, body: "{}"))
        #expect(copy.status == 200, "the key's claim answers before If-Match or the tombstone are looked at")
        #expect(copy.header("Idempotent-Replayed") == "true")
        #expect(copy.body == first.body)
        #expect(copy.header("ETag") == #""2""#, "the stored answer, exactly")
        let record = try #require(try rig.product())
        #expect(!record.isDeleted && record.revision == 3, "the copy deleted nothing")
        #expect(try rig.server.appliedCounts() == ["create-1": 1, "delete-1": 1, "create-2": 1])
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aDeletedRecordIs404ToUpdatesAndDeletesAndACreateBringsItBackAtTheNextRevision(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        #expect(try await exchange(rig.port, delete(key: "delete-1")).status == 200)
        let patch = request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13}"#)
        for (name, sent) in [("a PATCH", patch),
                             ("a PUT", request("PUT", "/products/p-1", key: "put-1", body: UpdateRig.created)),
                             ("another delete", delete(key: "delete-2", ifMatch: #""2""#))] {
            let gone = try await exchange(rig.port, sent)
            #expect(gone.status == 404, "\(name) of a tombstone")
            #expect(gone.code == "not_found")
            #expect((gone.json?["message"] as? String)?.contains("deleted at revision 2") == true, "\(name): \(text(gone))")
        }
        #expect(try rig.product()?.revision == 2, "nothing written")

        let created = try await exchange(rig.port, request(key: "create-2", body: #"{"id":"p-1","name":"Gauze, again"}"#))
        #expect(created.status == 201)
        #expect(created.header("ETag") == #""3""#, "the revision never moves back")
        #expect(text(created) == #"{"type":"product","id":"p-1","revision":3,"record":{"id":"p-1","name":"Gauze, again","revision":3}}"#)
        let edited = try await exchange(rig.port, patch)
        #expect(edited.status == 200, "the 404 kept no claim: the same key applies to the live record")
        #expect(edited.json?["revision"] as? Int == 4)
        #expect(try rig.server.appliedCounts() == ["create-1": 1, "delete-1": 1, "create-2": 1, "edit-1": 1])
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aDeleteOfAnUnknownRecordIs404AndLeavesNoClaim(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let missing = try await exchange(rig.port, delete("/products/p-2", key: "delete-1"))
        #expect(missing.status == 404)
        #expect(missing.code == "not_found")
        _ = try await exchange(rig.port, request(key: "create-2", body: #"{"id":"p-2"}"#))
        let later = try await exchange(rig.port, delete("/products/p-2", key: "delete-1"))
        #expect(later.status == 200, "once the record exists the same key deletes it")
        #expect(try rig.server.appliedCounts()["delete-1"] == 1)
        #expect(try rig.server.records().map { "\($0.id)@\($0.revision)\($0.isDeleted ? " deleted" : "")" } == ["p-1@1", "p-2@2 deleted"])
    }

    @Test func aDeletedProductTakesNoStockMovementAndOthersAreNotDeletedHere() async throws {
        let rig = try await UpdateRig(.memory)
        #expect(try await exchange(rig.port, delete(key: "delete-1")).status == 200)
        let movement = try await exchange(rig.port, request("POST", "/stock-movements", key: "move-1",
                                                            body: #"{"id":"m-1","product_id":"p-1","quantity":-2}"#))
        #expect(movement.status == 422)
        #expect(movement.json?["field"] as? String == "product_id")
        #expect(try await exchange(rig.port, delete("/stock-movements/m-1", key: "delete-2")).status == 404,
                "stock movements are only created")
        #expect(try await exchange(rig.port, delete("/products", key: "delete-3")).status == 405)
        #expect(throws: RecordChangeError.self, "another device cannot change a tombstone") {
            try rig.server.changeRecord(type: "product", id: "p-1")
        }
    }

    @Test func anEmployeeIsDeletedAlikeAndTheChangeRecordFaultMeetsADelete() async throws {
        let rig = try await UpdateRig(.memory)
        _ = try await exchange(rig.port, request("POST", "/employees", key: "hire-1", body: #"{"id":"e 1","role":"cashier"}"#))
        let fired = try await exchange(rig.port, delete("/employees/e%201", key: "fire-1", ifMatch: #""1""#))
        #expect(text(fired) == #"{"type":"employee","id":"e 1","revision":2,"deleted":true}"#)

        rig.server.addFaults([Fault(.changeRecord, endpoint: "/products/p-1", patch: Data(#"{"price":15}"#.utf8))])
        let conflict = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#))
        #expect(conflict.status == 412, "another device changed the record just before the delete")
        #expect((conflict.json?["current"] as? [String: Any])?["price"] as? Int == 15)
        #expect(rig.server.pendingFaults.isEmpty)
    }

    @Test func aDeleteHeldForApprovalAnswersTheEnvelopeAndDeletesNothing() async throws {
        let rig = try await UpdateRig(.memory)
        rig.server.addFaults([Fault(.pendingApproval, key: "delete-1")])
        let parked = try await exchange(rig.port, delete(key: "delete-1", ifMatch: #""1""#))
        #expect(parked.status == 202)
        #expect(parked.json?["status"] as? String == "pending_approval")
        #expect(try rig.product()?.isDeleted == false)
        #expect(try rig.server.approvals().map(\.type) == ["product"])
    }

    // MARK: Stores written before deletes

    @Test func aRecordAnLMDBStorageKeptBeforeDeletesReadsAsALiveRecord() throws {
        let stored = #"{"type":"product","businessID":"default","id":"p-1","revision":2,"idempotencyKey":"op-1","body":"e30="}"#
        let record = try JSONDecoder().decode(StoredRecord.self, from: Data(stored.utf8))
        #expect(!record.isDeleted && record.revision == 2 && record.body == Data("{}".utf8))
        let tombstone = StoredRecord(type: "product", businessID: "default", id: "p-1", revision: 3, idempotencyKey: "op-2",
                                     body: Data(), isDeleted: true)
        #expect(try JSONDecoder().decode(StoredRecord.self, from: JSONEncoder().encode(tombstone)) == tombstone)
    }

    @Test func aPostgreSQLDatabaseOfTheFirstSchemaIsMigratedAndItsRecordsDeleted() async throws {
        let schema = try await onThread { try TestPostgres.freshSchema("deletes") }
        defer { schema.drop() }
        // The test server's tables as its first schema version made them, with one record.
        _ = try schema.execute("""
            CREATE TABLE outbox_schema_versions (component text PRIMARY KEY, version integer NOT NULL,
                                                 migrated_at timestamptz NOT NULL DEFAULT now())
            """)
        _ = try schema.execute("""
            CREATE TABLE test_server_records (type text NOT NULL, business_id text NOT NULL, id text NOT NULL,
                revision integer NOT NULL, idempotency_key text NOT NULL, body bytea NOT NULL, PRIMARY KEY (type, business_id, id))
            """)
        _ = try schema.execute("""
            CREATE TABLE test_server_approvals (sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, type text NOT NULL,
                business_id text NOT NULL, idempotency_key text NOT NULL, body bytea NOT NULL)
            """)
        _ = try schema.execute("CREATE TABLE test_server_applied (key text PRIMARY KEY, count integer NOT NULL)")
        _ = try schema.execute("INSERT INTO outbox_schema_versions (component, version) VALUES ('outbox_test_server', 1)")
        _ = try schema.execute("""
            INSERT INTO test_server_records VALUES ('product', 'default', 'p-1', 1, 'create-1', convert_to('{"id":"p-1"}', 'UTF8'))
            """)

        let server = try await onThread { try TestServer(.init(storage: .postgres(schema.settings, poolSize: 2))) }
        defer { server.stop() }
        #expect(try server.records().map(\.isDeleted) == [false], "a record of the first schema is live")
        let deleted = try await exchange(server.port, delete(key: "delete-1", ifMatch: #""1""#))
        #expect(text(deleted) == #"{"type":"product","id":"p-1","revision":2,"deleted":true}"#)
        #expect(try server.records().map(\.isDeleted) == [true])
    }

    // MARK: What every create and update answers

    @Test(arguments: ServerStorageKind.allCases)
    func everyCreateAndUpdateAnswersTheRecordItsRevisionAndWhichRecordItIsSingleAndBatched(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let put = try await exchange(rig.port, request("PUT", "/products/p-1", key: "put-1", body: #"{"id":"p-1","name":"Lint"}"#,
                                                       headers: ifMatch(#""1""#)))
        try expectRecordAnswer(put.body, type: "product", id: "p-1", revision: 2, fields: ["name": "Lint"])
        let movement = try await exchange(rig.port, request("POST", "/stock-movements", key: "move-1",
                                                            body: #"{"id":"m-1","product_id":"p-1","quantity":-2}"#))
        try expectRecordAnswer(movement.body, type: "stock_movement", id: "m-1", revision: 1, fields: ["product_id": "p-1"])

        let operations = [
            operation("op-1", "POST", "/employees", type: "employee.create", payload: #"{"id":"e-1","name":"Ada"}"#),
            operation("op-2", "PATCH", "/products/p-1", type: "product.update", baseRevision: "2", payload: #"{"name":"Gauze"}"#),
            operation("op-3", "DELETE", "/products/p-1", type: "product.delete", baseRevision: "3", payload: "{}"),
            operation("op-4", "DELETE", "/products/p-1", type: "product.delete", baseRevision: "3", payload: "{}"),
            operation("op-5", "DELETE", "/products/p-1", key: "op-3", type: "product.delete", baseRevision: "3", payload: "{}"),
        ]
        let body = String(decoding: try BatchRequest(operations: operations).encoded(), as: UTF8.self)
        let batch = try await exchange(rig.port, request("POST", BatchRequest.path, body: body))
        let results = try JSONDecoder().decode(BatchResponse.self, from: batch.body).results
        #expect(results.map(\.outcome) == [.accepted, .accepted, .accepted, .rejected, .replayed])
        #expect(results.map(\.status) == [201, 200, 200, 404, 200])
        try expectRecordAnswer(results[0].body, type: "employee", id: "e-1", revision: 1, fields: ["name": "Ada"])
        try expectRecordAnswer(results[1].body, type: "product", id: "p-1", revision: 3, fields: ["name": "Gauze"])
        #expect(String(decoding: results[2].body, as: UTF8.self) == #"{"type":"product","id":"p-1","revision":4,"deleted":true}"#)
        #expect(results[4].body == results[2].body && results[4].headers["Idempotent-Replayed"] == "true")

        // The single request replays the batched answer, byte for byte.
        let single = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "op-2", body: #"{"name":"Gauze"}"#,
                                                          headers: ifMatch(#""2""#)))
        #expect(single.header("Idempotent-Replayed") == "true")
        #expect(single.body == results[1].body)
    }
}

/// A create's or an update's answer: `type`, `id` and `revision` naming the record, and `record`
/// holding it with `fields` and its own `revision`.
private func expectRecordAnswer(_ body: Data, type: String, id: String, revision: Int, fields: [String: String],
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
    let answer = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any], sourceLocation: sourceLocation)
    #expect(Set(answer.keys) == ["type", "id", "revision", "record"], sourceLocation: sourceLocation)
    #expect(answer["type"] as? String == type && answer["id"] as? String == id && answer["revision"] as? Int == revision,
            sourceLocation: sourceLocation)
    let record = try #require(answer["record"] as? [String: Any], sourceLocation: sourceLocation)
    #expect(record["id"] as? String == id && record["revision"] as? Int == revision, sourceLocation: sourceLocation)
    for (name, value) in fields {
        #expect(record[name] as? String == value, "record.\(name)", sourceLocation: sourceLocation)
    }
}
