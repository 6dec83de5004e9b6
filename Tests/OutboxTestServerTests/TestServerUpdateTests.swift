import Foundation
import TestHarness
import IdempotencyClaims
import OutboxWire
import OutboxTestServer
import OutboxTestServerPostgres
import ThrowawayPostgres
import Testing

/// Where a server under test keeps its data: every update rule must hold on each.
enum ServerStorageKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case lmdb
    case postgres

    var description: String { rawValue }

    /// A server on this storage, and what removes the storage after it stops.
    func start(feedLimits: FeedLimits = FeedHandling.defaultLimits) throws -> (server: TestServer, cleanUp: @Sendable () -> Void) {
        var configuration = TestServer.Configuration()
        configuration.feedLimits = feedLimits
        switch self {
        case .memory:
            return (try TestServer(configuration), {})
        case .lmdb:
            let directory = TemporaryDirectory()
            configuration.storage = .lmdb(directory: directory.url)
            return (try TestServer(configuration), { directory.remove() })
        case .postgres:
            let schema = try TestPostgres.freshSchema("updates")
            configuration.storage = .postgres(schema.settings, poolSize: 4)
            return (try TestServer(configuration), { schema.drop() })
        }
    }
}

/// A server with product p-1 created (revision 1) under key `create-1`: the start of the update
/// and delete tests.
final class UpdateRig: Sendable {
    let server: TestServer
    private let cleanUp: @Sendable () -> Void
    static let created = #"{"id":"p-1","name":"Gauze","price":12.5}"#

    init(_ storage: ServerStorageKind) async throws {
        // On a thread of its own: the first PostgreSQL server of the process starts a cluster,
        // which must not hold one of the few threads every test's tasks share.
        (server, cleanUp) = try await onThread { try storage.start() }
        let created = try await exchange(server.port, request(key: "create-1", body: Self.created))
        #expect(created.status == 201)
        #expect(created.header("ETag") == #""1""#, "a create carries its revision as an entity tag")
    }

    deinit {
        server.stop()
        cleanUp()
    }

    var port: UInt16 { server.port }

    func product() throws -> StoredRecord? {
        try server.records().first { $0.type == "product" && $0.id == "p-1" }
    }
}

func ifMatch(_ tag: String) -> [String] {
    ["If-Match: \(tag)"]
}

@Suite("Updates with revisions", .timeLimit(.minutes(10)))
struct TestServerUpdateTests {
    @Test(arguments: ServerStorageKind.allCases)
    func aPatchAgainstTheCurrentRevisionMergesAndAnswersTheRecordWithItsNewRevision(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let patched = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13,"note":"new"}"#,
                                                           headers: ifMatch(#""1""#)))
        #expect(patched.status == 200)
        #expect(patched.header("ETag") == #""2""#)
        #expect(patched.header("Content-Type") == "application/json")
        #expect(String(decoding: patched.body, as: UTF8.self)
                == #"{"type":"product","id":"p-1","revision":2,"record":{"id":"p-1","name":"Gauze","price":13,"note":"new","revision":2}}"#)
        let record = try #require(try rig.product())
        #expect(record.revision == 2)
        #expect(record.idempotencyKey == "edit-1")
        #expect(String(decoding: record.body, as: UTF8.self) == #"{"id":"p-1","name":"Gauze","price":13,"note":"new"}"#,
                "what the patch did not touch keeps its bytes")
        #expect(try rig.server.appliedCounts() == ["create-1": 1, "edit-1": 1])
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aPutReplacesTheWholeRecordByteForByte(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let body = #"{"id":"p-1", "name":"Gauze 10 cm"}"#
        let put = try await exchange(rig.port, request("PUT", "/products/p-1", key: "put-1", body: body, headers: ifMatch(#""1""#)))
        #expect(put.status == 200)
        #expect(put.header("ETag") == #""2""#)
        #expect(try rig.product()?.body == Data(body.utf8))
        let wrongID = try await exchange(rig.port, request("PUT", "/products/p-1", key: "put-2", body: #"{"id":"p-2"}"#))
        #expect(wrongID.status == 422)
        #expect(wrongID.code == "validation_failed")
        #expect((wrongID.json?["message"] as? String)?.contains(#""p-1""#) == true)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aStaleIfMatchIs412WithTheServersRevisionAndRecordAndLeavesNoClaim(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let moved = try rig.server.changeRecord(type: "product", id: "p-1", patch: Data(#"{"price":14}"#.utf8))
        #expect(moved.revision == 2)
        #expect(moved.idempotencyKey == StoredRecord.changedElsewhereKey)

        let edit = request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13}"#, headers: ifMatch(#""1""#))
        let conflict = try await exchange(rig.port, edit)
        #expect(conflict.status == 412)
        #expect(conflict.code == "revision_conflict")
        #expect(conflict.header("ETag") == #""2""#)
        #expect(conflict.json?["server_revision"] as? String == "2")
        #expect((conflict.json?["message"] as? String)?.isEmpty == false)
        let current = try #require(conflict.json?["current"] as? [String: Any])
        #expect(current["price"] as? Int == 14 && current["revision"] as? Int == 2 && current["id"] as? String == "p-1")
        #expect(try rig.product() == moved, "nothing written")
        #expect(try rig.server.appliedCounts()["edit-1"] == nil)

        // The same key and body again, rebased on the server's revision: the write runs (no claim was kept).
        let rebased = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13}"#,
                                                           headers: ifMatch(#""2""#)))
        #expect(rebased.status == 200)
        #expect(rebased.header("Idempotent-Replayed") == nil)
        #expect(try rig.product()?.revision == 3)
        #expect(try rig.server.appliedCounts()["edit-1"] == 1)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func aCopyOfAnAppliedUpdateIsReplayedNotRefusedAfterTheRecordMovedOn(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let edit = request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13}"#, headers: ifMatch(#""1""#))
        let applied = try await exchange(rig.port, edit)
        #expect(applied.status == 200)
        try rig.server.changeRecord(type: "product", id: "p-1")
        let copy = try await exchange(rig.port, edit)
        #expect(copy.status == 200, "the key's claim answers before If-Match is checked")
        #expect(copy.header("Idempotent-Replayed") == "true")
        #expect(copy.body == applied.body)
        #expect(copy.header("ETag") == #""2""#, "the stored answer, exactly")
        #expect(try rig.server.appliedCounts()["edit-1"] == 1)
        #expect(try rig.product()?.revision == 3)
    }

    @Test func withoutIfMatchTheLastWriterWins() async throws {
        let rig = try await UpdateRig(.memory)
        try rig.server.changeRecord(type: "product", id: "p-1", patch: Data(#"{"price":14}"#.utf8))
        let blind = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":9}"#))
        #expect(blind.status == 200)
        #expect(blind.header("ETag") == #""3""#)
        #expect(String(decoding: try #require(try rig.product()).body, as: UTF8.self) == #"{"id":"p-1","name":"Gauze","price":9}"#)
    }

    @Test func aStarMatchesAnyRevisionAWeakTagNoneAndAListAnyOfItsTags() async throws {
        let rig = try await UpdateRig(.memory)
        let star = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-1", body: #"{"a":1}"#, headers: ifMatch("*")))
        #expect(star.status == 200)
        let weak = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-2", body: #"{"a":2}"#, headers: ifMatch(#"W/"2""#)))
        #expect(weak.status == 412, "an update compares strongly")
        let list = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-3", body: #"{"a":3}"#,
                                                        headers: ifMatch(#""7", "2""#)))
        #expect(list.status == 200)
        let missing = try await exchange(rig.port, request("PATCH", "/products/p-9", key: "e-4", body: #"{"a":4}"#, headers: ifMatch("*")))
        #expect(missing.status == 404)
    }

    @Test(arguments: ["3", #""3"#, #""3" "4""#, #"W/3"#, ""])
    func aMalformedIfMatchIs400AndLeavesNoClaim(_ header: String) async throws {
        let rig = try await UpdateRig(.memory)
        let bad = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-1", body: #"{"a":1}"#, headers: ifMatch(header)))
        #expect(bad.status == 400)
        #expect(bad.code == "if_match_invalid")
        #expect((bad.json?["message"] as? String)?.contains(#""3""#) == true, "says what a tag looks like")
        let fixed = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-1", body: #"{"a":1}"#, headers: ifMatch(#""1""#)))
        #expect(fixed.status == 200)
        #expect(fixed.header("Idempotent-Replayed") == nil)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func anUpdateOfARecordThatIsNotThereIs404AndLeavesNoClaim(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let edit = request("PATCH", "/products/p-2", key: "edit-1", body: #"{"price":1}"#)
        let missing = try await exchange(rig.port, edit)
        #expect(missing.status == 404)
        #expect(missing.code == "not_found")
        _ = try await exchange(rig.port, request(key: "create-2", body: #"{"id":"p-2"}"#))
        let later = try await exchange(rig.port, edit)
        #expect(later.status == 200, "once the record exists the same key applies")
        #expect(try rig.server.appliedCounts()["edit-1"] == 1)
    }

    @Test(arguments: [
        (#"{"id":"p-2"}"#, "id"),
        (#"{"id":null}"#, "id"),
        (#"{"revision":5}"#, "revision"),
        (#"[1]"#, "JSON object"),
    ])
    func aPatchThatTouchesTheIDOrTheRevisionOrIsNoObjectIs422(_ body: String, _ named: String) async throws {
        let rig = try await UpdateRig(.memory)
        let refused = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "e-1", body: body))
        #expect(refused.status == 422)
        #expect(refused.code == "validation_failed")
        #expect((refused.json?["message"] as? String)?.contains(named) == true)
        #expect(try rig.product()?.revision == 1)
        #expect(try rig.server.appliedCounts()["e-1"] == nil)
    }

    @Test func aRecordTakesPutPatchAndDeleteOnlyAndEmployeesAreUpdatedAlike() async throws {
        let rig = try await UpdateRig(.memory)
        for method in ["POST", "GET"] {
            let refused = try await exchange(rig.port, request(method, "/products/p-1", key: "e-1", body: "{}"))
            #expect(refused.status == 405)
            #expect(refused.header("Allow") == "PUT, PATCH, DELETE")
        }
        #expect(try await exchange(rig.port, request("PATCH", "/products/p-1/extra", key: "e-1", body: "{}")).status == 404)
        #expect(try await exchange(rig.port, request("PATCH", "/stock-movements/m-1", key: "e-1", body: "{}")).status == 404,
                "stock movements are only created")
        _ = try await exchange(rig.port, request("POST", "/employees", key: "hire-1", body: #"{"id":"e 1","role":"cashier"}"#))
        let promoted = try await exchange(rig.port, request("PATCH", "/employees/e%201", key: "promote-1", body: #"{"role":"manager"}"#,
                                                            headers: ifMatch(#""1""#)))
        #expect(promoted.status == 200)
        #expect(try rig.server.records().first { $0.type == "employee" }?.revision == 2)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func twoEditsRacingFromOneRevisionApplyOnceAndTheOtherIs412(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let port = rig.port
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for number in 0..<2 {
                group.addTask {
                    try await exchange(port, request("PATCH", "/products/p-1", key: "edit-\(number)", body: #"{"price":\#(number)}"#,
                                                     headers: ifMatch(#""1""#))).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.sorted() == [200, 412])
        #expect(try rig.product()?.revision == 2)
        #expect(try rig.server.appliedCounts().values.reduce(0, +) == 2, "the create and one edit")
    }

    // MARK: Changes made elsewhere

    @Test(arguments: ServerStorageKind.allCases)
    func theChangeRecordFaultMovesTheRecordBeforeTheRequestIsLookedAt(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let queued = try await exchange(rig.port, request("POST", "/_control/faults",
            body: #"[{"fault":"change_record","endpoint":"/products/p-1","patch":{"name":"Gauze (till)","price":15}}]"#))
        #expect(queued.status == 200)
        let listed = try await exchange(rig.port, request("GET", "/_control/faults"))
        let fault = try #require((listed.json?["faults"] as? [[String: Any]])?.first)
        #expect((fault["patch"] as? [String: Any])?["price"] as? Int == 15, "the patch is listed as JSON")

        _ = try await exchange(rig.port, request(key: "create-2", body: #"{"id":"p-2"}"#))
        #expect(rig.server.pendingFaults.count == 1, "a create does not meet it")
        let conflict = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "edit-1", body: #"{"price":13}"#,
                                                            headers: ifMatch(#""1""#)))
        #expect(conflict.status == 412)
        #expect((conflict.json?["current"] as? [String: Any])?["name"] as? String == "Gauze (till)")
        #expect(rig.server.pendingFaults.isEmpty)
        let record = try #require(try rig.product())
        #expect(String(decoding: record.body, as: UTF8.self) == #"{"id":"p-1","name":"Gauze (till)","price":15}"#)
        #expect(record.revision == 2)
    }

    @Test func aChangeRecordFaultWithAPatchThatIsNoObjectIsRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let refused = try await exchange(server.port, request("POST", "/_control/faults", body: #"[{"fault":"change_record","patch":[1]}]"#))
        #expect(refused.status == 400)
        #expect(refused.code == "invalid_faults")
        #expect((refused.json?["message"] as? String)?.contains("patch") == true)
        #expect(server.pendingFaults.isEmpty)
    }

    @Test(arguments: ServerStorageKind.allCases)
    func theControlAPIChangesARecordAsAnotherDeviceWould(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let changed = try await exchange(rig.port, request("POST", "/_control/records/product/p-1", body: #"{"price":16}"#))
        #expect(changed.status == 200)
        #expect(changed.json?["revision"] as? Int == 2)
        #expect(changed.json?["idempotency_key"] as? String == "changed-elsewhere")
        #expect(changed.json?["body"] as? String == #"{"id":"p-1","name":"Gauze","price":16}"#)
        let bumped = try await exchange(rig.port, request("POST", "/_control/records/product/p-1"))
        #expect(bumped.json?["revision"] as? Int == 3, "no body: only the revision moves")
        #expect(try rig.product()?.revision == 3)
        #expect(try rig.server.appliedCounts() == ["create-1": 1], "not a client's write")

        let missing = try await exchange(rig.port, request("POST", "/_control/records/product/p-9"))
        #expect(missing.status == 404)
        let otherBusiness = try await exchange(rig.port, request("POST", "/_control/records/product/p-1", headers: ["X-Business-ID: b-2"]))
        #expect(otherBusiness.status == 404)
        let badPatch = try await exchange(rig.port, request("POST", "/_control/records/product/p-1", body: #"{"id":"p-7"}"#))
        #expect(badPatch.status == 400)
        #expect(badPatch.code == "invalid_body")
        #expect(throws: RecordChangeError.self) { try rig.server.changeRecord(type: "product", id: "p-9") }
    }

    // MARK: Stock movements

    @Test(arguments: ServerStorageKind.allCases)
    func aStockMovementNeedsItsProductAndARefusedOneLeavesNoClaim(_ storage: ServerStorageKind) async throws {
        let rig = try await UpdateRig(storage)
        let movement = request("POST", "/stock-movements", key: "move-1", body: #"{"id":"m-1","product_id":"p-2","quantity":-2}"#)
        let early = try await exchange(rig.port, movement)
        #expect(early.status == 422)
        #expect((early.json?["message"] as? String)?.contains(#""p-2""#) == true)
        _ = try await exchange(rig.port, request(key: "create-2", body: #"{"id":"p-2"}"#))
        let later = try await exchange(rig.port, movement)
        #expect(later.status == 201)
        #expect(later.header("Location") == "/stock-movements/m-1")
        #expect(try rig.server.records().map(\.type).sorted() == ["product", "product", "stock_movement"])
        #expect(try rig.server.appliedCounts()["move-1"] == 1)
    }
}
