import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import Testing

/// The member's records against the loopback test server over a real socket: what the phone
/// shows, proven against what the server holds.
@Suite("Records end to end over loopback", .timeLimit(.minutes(10)))
struct RecordsEndToEndTests {
    typealias Rig = EndToEndTests.Rig
    static let business = IntentEndToEndTests.business

    static func key(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }

    static func create(_ id: String, price: Double) -> (OutboxRequest, RecordChange) {
        let value = Data(#"{"id":"\#(id)","name":"Antiseptic 500 ml","price":\#(price)}"#.utf8)
        let request = OutboxRequest(businessID: business, operationType: "product.create", endpoint: "/products", payload: value,
                                    category: "Products", entityLabel: "Antiseptic 500 ml", summary: "New product")
        return (request, .put(key(id), value))
    }

    static func priceEdit(_ id: String, price: Double) -> (OutboxRequest, RecordChange) {
        let value = Data(#"{"id":"\#(id)","name":"Antiseptic 500 ml","price":\#(price)}"#.utf8)
        var request = OutboxRequest(businessID: business, operationType: "product.update", method: "PUT", endpoint: "/products/\(id)",
                                    payload: value, category: "Products", entityLabel: "Antiseptic 500 ml", summary: "New price")
        request.revisionFrom = key(id)
        return (request, .put(key(id), value))
    }

    @Test func twoOfflineEditsOfOneRecordLandInOrderWithoutAConflictAndTheBaseIsTheServers() async throws {
        let rig = try Rig()
        rig.network.setOnline(false)
        let (create, created) = Self.create("p-1", price: 12.5)
        _ = try await rig.outbox.enqueue(create, changing: [created])
        let (first, firstChange) = Self.priceEdit("p-1", price: 13.5)
        let (second, secondChange) = Self.priceEdit("p-1", price: 14)
        let firstID = try await rig.outbox.enqueue(first, changing: [firstChange])
        let secondID = try await rig.outbox.enqueue(second, changing: [secondChange])
        // Offline, the member's latest value shows, waiting.
        var record = try #require(try rig.outbox.record(Self.key("p-1")))
        #expect(record.value == secondChange.value && record.server == nil)
        #expect(record.sync.pending.count == 3)

        rig.network.setOnline(true)
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(firstID)?.status == .synced && rig.outbox.operation(secondID)?.status == .synced)
        // Sent in the member's order, each against the revision the one before it returned.
        let ifMatches = rig.network.requests.filter { $0.method == "PUT" }.map { $0.headers["If-Match"] }
        #expect(ifMatches == [#""1""#, #""2""#])
        let server = try #require(try rig.product())
        #expect(server.revision == 3)
        record = try #require(try rig.outbox.record(Self.key("p-1")))
        #expect(record.sync.isSynced, "\(record.sync)")
        #expect(record.server?.revision == 3)
        // The base is the server's record, as it answered.
        let base = try #require(record.server?.value.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        #expect(base["price"] as? Int == 14 && base["revision"] as? Int == 3)
        #expect(try rig.outbox.verify().isClean)
    }

    @Test func aRefusedWriteIsRolledBackOnScreenWithTheServersReason() async throws {
        let rig = try Rig()
        let (create, created) = Self.create("p-2", price: 12.5)
        guard case .synced = try await rig.outbox.save(create, changing: [created]) else {
            Issue.record("the create did not sync")
            return
        }
        let confirmed = try #require(try rig.outbox.record(Self.key("p-2")))
        #expect(confirmed.server?.revision == 1)
        // A price the server refuses: the form is told, and the record shows the server's again.
        rig.server.addFaults([Fault(.validationFailed, endpoint: "/products/p-2", message: "Price must be positive")])
        let (edit, change) = Self.priceEdit("p-2", price: -1)
        let id = try await rig.outbox.enqueue(edit, changing: [change])
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(id)?.status == .failed)
        let record = try #require(try rig.outbox.record(Self.key("p-2")))
        #expect(record.value == confirmed.server?.value, "the rolled-back price never shows")
        #expect(record.sync.rolledBack?.operation == id)
        #expect(record.sync.rolledBack?.message == "Price must be positive")
        #expect(try rig.product("p-2")?.revision == 1, "the server kept its record")
    }

    @Test func aDeleteLeavesATombstoneInTheBaseAndTheQueryLeavesTheRecordOut() async throws {
        let rig = try Rig()
        let (create, created) = Self.create("p-3", price: 9)
        _ = try await rig.outbox.enqueue(create, changing: [created])
        var delete = OutboxRequest(businessID: Self.business, operationType: "product.delete", method: "DELETE", endpoint: "/products/p-3",
                                   payload: Data("{}".utf8), category: "Products", entityLabel: "Antiseptic 500 ml", summary: "Deleted")
        delete.revisionFrom = Self.key("p-3")
        _ = try await rig.outbox.enqueue(delete, changing: [.delete(Self.key("p-3"))])
        try await rig.drainUntilSettled()
        let record = try #require(try rig.outbox.record(Self.key("p-3")))
        #expect(record.value == nil && record.server?.isDeleted == true && record.server?.revision == 2)
        #expect(try rig.outbox.records(RecordQuery(business: Self.business, type: "product")).records.isEmpty)
        #expect(rig.network.requests.last?.headers["If-Match"] == #""1""#)
    }
}
