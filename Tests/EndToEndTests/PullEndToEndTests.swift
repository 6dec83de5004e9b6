import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import OutboxWire
import Testing

/// Another device's creates, edits and deletes reach the phone by pulling the loopback test
/// server's change feed, while the phone's own unsent edit stays on its screen.
@Suite("Pull end to end over loopback", .timeLimit(.minutes(5)))
struct PullEndToEndTests {
    typealias Rig = EndToEndTests.Rig
    static let business = RecordsEndToEndTests.business
    static func key(_ id: String) -> RecordKey { RecordsEndToEndTests.key(id) }

    /// A second device of the same account on the rig's server.
    final class Phone: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-pull-\(UUID().uuidString)")
        let network: EndToEndTests.SwitchableNetwork
        let outbox: Outbox

        init(_ rig: Rig, pageSize: Int = 500) throws {
            network = EndToEndTests.SwitchableNetwork(URLSessionTransport(baseURL: rig.server.baseURL, timeoutSeconds: EndToEndTests.patience) {
                ["Authorization": "Bearer fresh-token"]
            })
            outbox = try Outbox(directory: directory, transport: network,
                                configuration: Self.configuration(rig, pageSize: pageSize))
        }

        static func configuration(_ rig: Rig, pageSize: Int) -> OutboxConfiguration {
            var configuration = OutboxConfiguration(account: "folake", clock: rig.clock, defaultPolicy: .idempotent)
            configuration.pull = PullConfiguration(pageSize: pageSize, businesses: [PullEndToEndTests.business])
            return configuration
        }

        deinit {
            outbox.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func price(_ record: LocalRecord?) -> Double? {
        (record?.value.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })?["price"] as? Double
    }
    static func serverPrice(_ record: LocalRecord?) -> Double? {
        (record?.server?.value.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })?["price"] as? Double
    }

    @Test func theCountersChangesReachThePhoneWhileItsOwnUnsentEditStaysOnScreen() async throws {
        let rig = try Rig()
        let phone = try Phone(rig, pageSize: 2)
        // The counter creates three products.
        for (id, price) in [("p-1", 12.5), ("p-2", 9.0), ("p-3", 4.0)] {
            let (create, change) = RecordsEndToEndTests.create(id, price: price)
            guard case .synced = try await rig.outbox.save(create, changing: [change]) else { Issue.record("\(id) did not sync"); return }
        }
        var report = try #require(try await phone.outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == nil && report.reachedEnd, "\(report)")
        #expect(report.pagesApplied == 2 && report.changesApplied == 3, "two pages of at most two")
        #expect(try Self.price(phone.outbox.record(Self.key("p-1"))) == 12.5)
        #expect(try phone.outbox.record(Self.key("p-1"))?.server?.revision == 1)

        // The phone edits p-2 with no signal: the edit waits.
        phone.network.setOnline(false)
        let (edit, change) = RecordsEndToEndTests.priceEdit("p-2", price: 8.5)
        let unsent = try await phone.outbox.enqueue(edit, changing: [change])
        await phone.outbox.drain()
        #expect(try phone.outbox.operation(unsent)?.status == .queued)
        // Meanwhile the counter changes p-1 and p-2 and deletes p-3.
        for (id, price) in [("p-1", 13.5), ("p-2", 9.5)] {
            let (counterEdit, counterChange) = RecordsEndToEndTests.priceEdit(id, price: price)
            guard case .synced = try await rig.outbox.save(counterEdit, changing: [counterChange]) else { Issue.record("\(id) edit did not sync"); return }
        }
        var delete = OutboxRequest(businessID: Self.business, operationType: "product.delete", method: "DELETE", endpoint: "/products/p-3",
                                   payload: Data("{}".utf8), category: "Products", entityLabel: "Antiseptic 500 ml", summary: "Deleted")
        delete.revisionFrom = Self.key("p-3")
        guard case .synced = try await rig.outbox.save(delete, changing: [.delete(Self.key("p-3"))]) else { Issue.record("delete did not sync"); return }

        // The signal returns for the pull (the edit's retry is not due yet).
        phone.network.setOnline(true)
        report = try #require(try await phone.outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == nil && report.changesApplied == 3, "\(report)")
        let p1 = try #require(try phone.outbox.record(Self.key("p-1")))
        #expect(Self.price(p1) == 13.5 && p1.server?.revision == 2, "the counter's price reached the phone")
        let p2 = try #require(try phone.outbox.record(Self.key("p-2")))
        #expect(Self.price(p2) == 8.5, "the member's unsent edit stays on screen")
        #expect(Self.serverPrice(p2) == 9.5 && p2.server?.revision == 2, "the counter's beneath it")
        #expect(try phone.outbox.record(Self.key("p-3"))?.server?.isDeleted == true)
        #expect(try phone.outbox.records(RecordQuery(business: Self.business, type: "product")).records.map(\.key.id) == ["p-1", "p-2"])
        #expect(try phone.outbox.ledger().entries.count == 1, "pulling enqueued nothing")
        #expect(try phone.outbox.verify().isClean)

        // Pulled again at the end: nothing new, nothing written.
        report = try #require(try await phone.outbox.pull().feed(Self.business))
        #expect(report.reachedEnd && report.pagesApplied == 0)
    }

    @Test func aPullWithNoSignalAppliesNothingAndTheNextOneAsksFromTheSameCursor() async throws {
        let rig = try Rig()
        let phone = try Phone(rig)
        let (create, change) = RecordsEndToEndTests.create("p-1", price: 12.5)
        guard case .synced = try await rig.outbox.save(create, changing: [change]) else { Issue.record("did not sync"); return }
        phone.network.setOnline(false)
        #expect(try await phone.outbox.pull().feed(Self.business)?.stoppedBy == .offline)
        #expect(try phone.outbox.feedCursor(business: Self.business) == nil)
        phone.network.setOnline(true)
        let report = try #require(try await phone.outbox.pull().feed(Self.business))
        #expect(report.reachedEnd && report.changesApplied == 1)
        #expect(try phone.outbox.record(Self.key("p-1"))?.server?.revision == 1)
    }
}
