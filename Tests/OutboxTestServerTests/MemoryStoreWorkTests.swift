import Foundation
import IdempotencyClaims
import OutboxTestServer
import Testing

/// The in-memory store's create costs the same whatever the store holds, counted in the slots
/// its transactions copy (``SnapshotWork``), never timed.
@Suite("The in-memory store's work per create")
struct MemoryStoreWorkTests {
    /// What one create writes: the claim taken, the record, its applied count, the claim
    /// completed. Each write copies at most its key's path: 13 levels of at most 32 slots.
    static let mostSlotsPerCreate = 4 * 13 * 32

    static func create(_ key: String) -> HTTPRequest {
        HTTPRequest(method: "POST", path: "/products", headers: [("Idempotency-Key", key)],
                    body: Data(#"{"id":"\#(key)","name":"Gauze"}"#.utf8))
    }

    /// The slots copied while `server` answers `request`, and its status.
    static func work(_ server: TestServer, _ request: HTTPRequest) -> (slots: Int, status: Int?) {
        let meter = SnapshotWork.Meter()
        let status = SnapshotWork.$meter.withValue(meter) { server.respond(to: request)?.status }
        return (meter.slotsCopied, status)
    }

    /// Fills `server` with `count` more products, in batches of 100.
    static func fill(_ server: TestServer, _ count: Int, from first: Int) throws {
        for start in stride(from: first, to: first + count, by: 100) {
            let operations = (start..<min(start + 100, first + count)).map { number in
                let payload = Data(#"{"id":"fill-\#(number)"}"#.utf8).base64EncodedString()
                return #"{"operation_id":"fill-\#(number)","idempotency_key":"fill-\#(number)","business_id":"default","#
                    + #""operation_type":"product.create","method":"POST","endpoint":"/products","payload_version":1,"payload":"\#(payload)"}"#
            }
            let batch = HTTPRequest(method: "POST", path: "/sync/batch",
                                    body: Data((#"{"operations":["# + operations.joined(separator: ",") + "]}").utf8))
            try #require(server.respond(to: batch)?.status == 200)
        }
    }

    @Test func aCreateCopiesNoMoreOnAStoreOfThreeThousandRecordsThanTheBoundOfAnEmptyOne() throws {
        let server = try TestServer()
        defer { server.stop() }
        let empty = Self.work(server, Self.create("first"))
        #expect(empty.status == 201)
        #expect(empty.slots <= Self.mostSlotsPerCreate)

        try Self.fill(server, 3_000, from: 0)
        #expect(try server.records().count == 3_001)
        let full = Self.work(server, Self.create("after-3000"))
        #expect(full.status == 201)
        #expect(full.slots <= Self.mostSlotsPerCreate, "a create on 3,000 records copied \(full.slots) slots; on none, \(empty.slots)")
        #expect(try server.appliedCounts()["after-3000"] == 1)
    }

    @Test func aReplayAndARefusedCreateCopyNoMoreThanTheBoundEither() throws {
        let server = try TestServer()
        defer { server.stop() }
        try Self.fill(server, 2_000, from: 0)
        #expect(Self.work(server, Self.create("k-1")).status == 201)
        let replay = Self.work(server, Self.create("k-1"))
        #expect(replay.status == 201)
        #expect(replay.slots <= Self.mostSlotsPerCreate)
        let refused = Self.work(server, HTTPRequest(method: "POST", path: "/products", headers: [("Idempotency-Key", "k-2")],
                                                    body: Data(#"{"name":"no id"}"#.utf8)))
        #expect(refused.status == 422)
        #expect(refused.slots <= Self.mostSlotsPerCreate)
    }
}
