import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness
import OutboxWire
import ThrowawayPostgres
import Testing

/// Two phones of one account against the `outbox-test-server` binary on PostgreSQL (a cluster
/// of the test's own): edits and deletes on both, the counter's own changes, both offline with
/// unsent edits, then both send and pull. They converge on the server's records with nothing
/// lost; a feed purged past one phone's cursor makes its next pull fetch the base again whole,
/// its pending edits kept, and they converge again.
@Suite("Pull end to end over PostgreSQL", .timeLimit(.minutes(5)))
struct PullPostgresEndToEndTests {
    static let business = "folakes-pharmacy"

    /// One `outbox-test-server --postgres` process on a throwaway cluster, both stopped when dropped.
    final class Server: Sendable {
        let cluster: TemporaryPostgresCluster
        let process: SpawnedProcess
        let baseURL: URL
        /// The counter's and the test's own requests: the control API and the feed read raw.
        private let control: URLSessionTransport

        /// A record as the server holds it (`GET /_control/records`).
        struct Record {
            var id: String
            var revision: Int
            var fields: NSDictionary
        }

        init() throws {
            cluster = try TemporaryPostgresCluster.start()
            do {
                process = try SpawnedProcess(
                    try builtExecutable(named: "outbox-test-server").path,
                    ["--postgres", "env:OUTBOX_TEST_SERVER_POSTGRES", "--pool-size", "4", "--read-timeout", "30"],
                    environment: ProcessInfo.processInfo.environment.merging(["OUTBOX_TEST_SERVER_POSTGRES": cluster.settings.conninfo]) { $1 },
                    output: .pipe, errors: .pipe)
            } catch {
                cluster.stop()
                throw error
            }
            // Its errors are read as they come, so that the pipe never fills; its first line names its port.
            let errors = process.errors!.collect()
            var lines = LineReader(process.output!)
            let line = lines.next() ?? lines.rest
            let prefix = "listening on 127.0.0.1:"
            guard line.hasPrefix(prefix), let port = UInt16(line.dropFirst(prefix.count).prefix { $0.isNumber }) else {
                if process.signal(SIGTERM) { _ = process.wait() }
                cluster.stop()
                throw ServerFailure(description: "outbox-test-server did not say its port: \(line) \(errors.text.suffix(2000))")
            }
            baseURL = URL(string: "http://127.0.0.1:\(port)")!
            control = URLSessionTransport(baseURL: baseURL, timeoutSeconds: EndToEndTests.patience)
        }

        deinit {
            if process.signal(SIGTERM) { _ = process.wait() }
            cluster.stop()
        }

        struct ServerFailure: Error, CustomStringConvertible {
            var description: String
        }

        /// Sends a request for the business and answers the JSON object it got.
        func send(_ method: String, _ endpoint: String, _ body: String = "", expecting status: Int = 200) async throws -> [String: Any] {
            let response = try await control.send(TransportRequest(
                method: method, endpoint: endpoint,
                headers: ["X-Business-ID": PullPostgresEndToEndTests.business, "Content-Type": "application/json"], body: Data(body.utf8)))
            guard response.statusCode == status, let json = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] else {
                throw ServerFailure(description: "\(method) \(endpoint) answered \(response.statusCode): \(String(decoding: response.body, as: UTF8.self))")
            }
            return json
        }

        /// The counter changes a product as another device would: its next revision, outside any claim.
        @discardableResult
        func counterChanges(_ id: String, _ patch: String) async throws -> Int {
            try await send("POST", "/_control/records/product/\(id)", patch)["revision"] as? Int ?? 0
        }

        /// The business's live products, by id.
        func products() async throws -> [String: Record] {
            let records = try await send("GET", "/_control/records")["records"] as? [[String: Any]] ?? []
            var live: [String: Record] = [:]
            for record in records where record["type"] as? String == "product" && record["business_id"] as? String == PullPostgresEndToEndTests.business
                && record["deleted"] as? Bool != true {
                let id = record["id"] as? String ?? ""
                let body = Data((record["body"] as? String ?? "").utf8)
                live[id] = Record(id: id, revision: record["revision"] as? Int ?? 0, fields: PullPostgresEndToEndTests.fields(body))
            }
            return live
        }

        /// How many times each key's write was applied.
        func applied() async throws -> [String: Int] {
            let entries = try await send("GET", "/_control/applied")["applied"] as? [[String: Any]] ?? []
            return Dictionary(entries.map { ($0["key"] as? String ?? "", $0["count"] as? Int ?? 0) }) { $0 + $1 }
        }

        /// The feed's end now: the position a snapshot read at this moment stands at.
        func fence() async throws -> FeedPosition {
            try FeedPosition(text: try await send("GET", "/sync/snapshot?limit=1")["position"] as? String ?? "")
        }

        /// Forgets the business's changes through `position`, as tombstones past their retention.
        func purge(through position: FeedPosition) async throws -> FeedPosition {
            try FeedPosition(text: try await send("POST", "/_control/feed/purge", #"{"through":"\#(position)"}"#)["floor"] as? String ?? "")
        }
    }

    /// One phone of the account: its own journal, clock and network, pulling the business.
    final class Phone: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-pull-pg-\(UUID().uuidString)")
        let clock = ManualClock()
        let network: EndToEndTests.SwitchableNetwork
        let outbox: Outbox

        init(_ server: Server) throws {
            network = EndToEndTests.SwitchableNetwork(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: EndToEndTests.patience) {
                ["Authorization": "Bearer fresh-token"]
            })
            var configuration = OutboxConfiguration(account: "folake", clock: clock, defaultPolicy: .idempotent)
            // Two changes a page: every pull of more is several pages, each in its own commit.
            configuration.pull = PullConfiguration(pageSize: 2, businesses: [PullPostgresEndToEndTests.business])
            outbox = try Outbox(directory: directory, transport: network, configuration: configuration)
        }

        deinit {
            outbox.close()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Saves a write with its record change with the signal up: whether it synced at once.
        func saveOnline(_ write: (OutboxRequest, RecordChange)) async throws -> Bool {
            guard case .synced = try await outbox.save(write.0, changing: [write.1]) else { return false }
            return true
        }

        /// Saves a write with its record change while offline: it waits, queued.
        func saveOffline(_ write: (OutboxRequest, RecordChange)) async throws -> OperationID {
            let id = try await outbox.enqueue(write.0, changing: [write.1])
            await outbox.drain()
            #expect(try outbox.operation(id)?.status == .queued, "with no signal the write waits")
            return id
        }

        /// Sends what is queued: drains, then lets this phone's clock reach each retry, until
        /// nothing is queued (bounded by the number of retries, not by time).
        func sendEverything() async throws {
            if !(try await EndToEndTests.drainUntilSettled(outbox, clock: clock)) { Issue.record("writes still queued after twenty passes") }
        }

        /// Pulls until the feed's cursor is at or past `fence`, every pull reaching the end. A
        /// fence is the cluster's oldest open transaction, so a page may stop short of it while
        /// one (autovacuum's) is open: pulled again, a bounded number of times.
        @discardableResult
        func pull(through fence: FeedPosition) async throws -> [Outbox.FeedReport] {
            var reports: [Outbox.FeedReport] = []
            for _ in 0..<50 {
                let report = try #require(try await outbox.pull().feed(PullPostgresEndToEndTests.business))
                reports.append(report)
                #expect(report.stoppedBy == nil && report.reachedEnd, "\(report)")
                if let cursor = try outbox.feedCursor(business: PullPostgresEndToEndTests.business), cursor >= fence { return reports }
            }
            Issue.record("the feed's cursor never reached \(fence)")
            return reports
        }

        /// The products the phone lists, by id.
        func products() throws -> [String: LocalRecord] {
            let records = try outbox.records(RecordQuery(business: PullPostgresEndToEndTests.business, type: "product")).records
            return Dictionary(uniqueKeysWithValues: records.map { ($0.key.id, $0) })
        }

        func product(_ id: String) throws -> LocalRecord? {
            try outbox.record(PullPostgresEndToEndTests.key(id))
        }
    }

    static func key(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }

    static func value(_ id: String, _ name: String, price: Double) -> Data {
        Data(#"{"id":"\#(id)","name":"\#(name)","price":\#(price)}"#.utf8)
    }

    static func create(_ id: String, _ name: String, price: Double) -> (OutboxRequest, RecordChange) {
        let request = OutboxRequest(businessID: business, operationType: "product.create", endpoint: "/products",
                                    payload: value(id, name, price: price), category: "Products", entityLabel: name, summary: "New product")
        return (request, .put(key(id), request.payload))
    }

    static func priceEdit(_ id: String, _ name: String, price: Double) -> (OutboxRequest, RecordChange) {
        var request = OutboxRequest(businessID: business, operationType: "product.update", method: "PUT", endpoint: "/products/\(id)",
                                    payload: value(id, name, price: price), category: "Products", entityLabel: name, summary: "New price")
        request.revisionFrom = key(id)
        return (request, .put(key(id), request.payload))
    }

    static func delete(_ id: String, _ name: String) -> (OutboxRequest, RecordChange) {
        var request = OutboxRequest(businessID: business, operationType: "product.delete", method: "DELETE", endpoint: "/products/\(id)",
                                    payload: Data("{}".utf8), category: "Products", entityLabel: name, summary: "Deleted")
        request.revisionFrom = key(id)
        return (request, .delete(key(id)))
    }

    /// A record's JSON members without its `revision` (the server adds it to what it serves).
    static func fields(_ value: Data?) -> NSDictionary {
        var object = (value.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]) ?? [:]
        object["revision"] = nil
        return object as NSDictionary
    }

    static func price(_ value: Data?) -> Double? {
        (fields(value)["price"] as? NSNumber)?.doubleValue
    }

    /// Every product the phone lists is the server's, at the server's revision, with nothing
    /// pending over it, and the phone lists every one the server has.
    static func expectEqual(_ phone: Phone, _ server: [String: Server.Record], _ who: String,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let shown = try phone.products()
        #expect(shown.keys.sorted() == server.keys.sorted(), "\(who) lists the server's products", sourceLocation: sourceLocation)
        for (id, record) in shown {
            guard let theirs = server[id] else { continue }
            #expect(record.sync.isSynced, "\(who)'s \(id) has nothing pending: \(record.sync)", sourceLocation: sourceLocation)
            #expect(record.server?.revision == UInt64(theirs.revision), "\(who)'s \(id) at the server's revision", sourceLocation: sourceLocation)
            #expect(fields(record.value) == theirs.fields, "\(who)'s \(id) shows the server's value", sourceLocation: sourceLocation)
        }
    }

    @Test func twoPhonesEditingAndDeletingOfflineConvergeOnTheServersRecordsAndAgainAfterAFeedPurgedPastOnesCursor() async throws {
        let server = try await Self.onThread { try Server() }
        let folake = try Phone(server)
        let ade = try Phone(server)

        // Folake stocks the shelf; Ade's phone pulls it, and adds a thermometer of its own.
        for (id, name, price) in [("p-1", "Gauze", 2.0), ("p-2", "Antiseptic", 5.0), ("p-3", "Plasters", 1.5),
                                  ("p-4", "Ibuprofen", 3.0), ("p-5", "Cotton wool", 1.0)] {
            #expect(try await folake.saveOnline(Self.create(id, name, price: price)), "\(id) synced")
        }
        #expect(try await ade.saveOnline(Self.create("p-6", "Thermometer", price: 9.0)), "p-6 synced")
        var fence = try await server.fence()
        let first = try await ade.pull(through: fence)
        // Ade's own answer built a base before his first pull: that pull fetches the base whole.
        #expect(first.map { $0.pagesApplied + $0.pagesStaged }.reduce(0, +) >= 3 && first.map(\.resnapshots).reduce(0, +) == 1,
                "six records, two a page: \(first)")
        try await folake.pull(through: fence)
        var shelf = try await server.products()
        try Self.expectEqual(folake, shelf, "Folake")
        try Self.expectEqual(ade, shelf, "Ade")

        // Both phones lose the signal, each with changes of its own.
        folake.network.setOnline(false)
        ade.network.setOnline(false)
        let gauzeEdit = try await folake.saveOffline(Self.priceEdit("p-1", "Gauze", price: 2.5))
        let ibuprofenEdit = try await folake.saveOffline(Self.priceEdit("p-4", "Ibuprofen", price: 3.5))
        let plastersDelete = try await folake.saveOffline(Self.delete("p-3", "Plasters"))
        let plastersEdit = try await ade.saveOffline(Self.priceEdit("p-3", "Plasters", price: 1.75))
        let antisepticEdit = try await ade.saveOffline(Self.priceEdit("p-2", "Antiseptic", price: 5.5))
        let cottonDelete = try await ade.saveOffline(Self.delete("p-5", "Cotton wool"))
        // Meanwhile the counter changes the gauze and the antiseptic.
        #expect(try await server.counterChanges("p-1", #"{"price":2.2}"#) == 2)
        #expect(try await server.counterChanges("p-2", #"{"price":5.2}"#) == 2)
        #expect(try Self.price(folake.product("p-1")?.value) == 2.5 && Self.price(ade.product("p-2")?.value) == 5.5,
                "each phone shows its member's unsent price")
        #expect(try folake.products()["p-3"] == nil && ade.products()["p-5"] == nil, "a pending delete takes the product off the list")

        // Folake's signal returns: her writes go. The gauze was changed at the counter since her
        // edit began: 412, conflicted with the counter's price; she keeps hers.
        folake.network.setOnline(true)
        try await folake.sendEverything()
        #expect(try folake.outbox.operation(ibuprofenEdit)?.status == .synced)
        #expect(try folake.outbox.operation(plastersDelete)?.status == .synced)
        let gauzeConflict = try #require(try folake.outbox.operation(gauzeEdit))
        #expect(gauzeConflict.status == .conflicted && gauzeConflict.conflict?.serverRevision == "2", "\(gauzeConflict.state)")
        let gauzeKept = try #require(try await folake.outbox.resolveConflict(gauzeEdit, keeping: .mine(
            payload: Self.value("p-1", "Gauze", price: 2.5), baseRevision: "2")))
        try await folake.sendEverything()
        #expect(try folake.outbox.operation(gauzeKept)?.status == .synced)

        // Ade's signal returns; his retries are not due yet, so the pull comes first: the counter's
        // antiseptic goes beneath his unsent price, and the plasters Folake deleted turn his
        // pending edit of them conflicted, deleted on the server, his price kept.
        ade.network.setOnline(true)
        fence = try await server.fence()
        let caughtUp = try await ade.pull(through: fence)
        #expect(caughtUp.map(\.changesApplied).reduce(0, +) >= 5, "\(caughtUp)")
        let antiseptic = try #require(try ade.product("p-2"))
        #expect(Self.price(antiseptic.value) == 5.5 && Self.price(antiseptic.server?.value) == 5.2 && antiseptic.server?.revision == 2,
                "Ade's unsent price stays on screen over the counter's")
        #expect(antiseptic.sync.pending.map(\.operation) == [antisepticEdit])
        let plasters = try #require(try ade.outbox.operation(plastersEdit))
        #expect(plasters.status == .conflicted && plasters.lastErrorCode == "deleted_on_server", "\(plasters.state)")
        #expect(try Self.price(ade.product("p-3")?.value) == 1.75, "the member's value is kept on screen")
        #expect(try ade.product("p-3")?.server?.isDeleted == true)
        #expect(try ade.outbox.operation(cottonDelete)?.status == .queued, "the pull sent nothing and enqueued nothing")
        #expect(try ade.outbox.ledger().entries.count == 4)
        // He sends. His antiseptic edit was made on revision 1 and the counter's is revision 2, as
        // with Folake's gauze: answered 412, it never overwrites the counter's price unseen (the
        // pull brought that price beneath his edit, but he never saw it); he keeps his.
        try await ade.sendEverything()
        #expect(try ade.outbox.operation(cottonDelete)?.status == .synced)
        let antisepticConflict = try #require(try ade.outbox.operation(antisepticEdit))
        #expect(antisepticConflict.status == .conflicted && antisepticConflict.conflict?.serverRevision == "2",
                "an edit made on revision 1 overwrote the counter's revision 2, pulled beneath it and never shown: \(antisepticConflict.state)")
        var antisepticKept = antisepticEdit
        if antisepticConflict.status == .conflicted {
            antisepticKept = try #require(try await ade.outbox.resolveConflict(antisepticEdit, keeping: .mine(
                payload: Self.value("p-2", "Antiseptic", price: 5.5), baseRevision: "2")))
            try await ade.sendEverything()
        }
        #expect(try ade.outbox.operation(antisepticKept)?.status == .synced)
        // He lets the deleted plasters go.
        #expect(try await ade.outbox.resolveConflict(plastersEdit, keeping: .theirs) == nil)
        #expect(try ade.outbox.operation(plastersEdit)?.status == .discarded)

        // Both pull to the end with nothing pending: each phone holds the server's records.
        fence = try await server.fence()
        try await folake.pull(through: fence)
        try await ade.pull(through: fence)
        shelf = try await server.products()
        #expect(shelf.keys.sorted() == ["p-1", "p-2", "p-4", "p-6"])
        #expect(Self.price(try Self.json(shelf["p-1"])) == 2.5 && shelf["p-1"]?.revision == 3, "Folake's kept gauze, over the counter's")
        #expect(Self.price(try Self.json(shelf["p-2"])) == 5.5 && shelf["p-2"]?.revision == 3, "Ade's kept antiseptic, over the counter's")
        #expect(Self.price(try Self.json(shelf["p-4"])) == 3.5 && shelf["p-4"]?.revision == 2)
        try Self.expectEqual(folake, shelf, "Folake")
        try Self.expectEqual(ade, shelf, "Ade")
        // Nothing lost: every write synced and applied once, or conflicted with its reason and
        // decided by the member.
        let applied = try await server.applied()
        let synced = [gauzeKept, ibuprofenEdit, plastersDelete, antisepticKept, cottonDelete]
        for id in synced {
            #expect(applied[id.idempotencyKey] == 1, "\(id) applied once")
        }
        #expect(applied[gauzeEdit.idempotencyKey] == nil && applied[plastersEdit.idempotencyKey] == nil, "conflicted writes never applied")
        #expect(try folake.outbox.operation(gauzeEdit)?.status == .superseded)
        try Self.expectClean(folake, "folake")
        try Self.expectClean(ade, "ade")

        // Ade's phone goes offline again with an edit of the thermometer and one of the ibuprofen.
        ade.network.setOnline(false)
        let adesCursor = try #require(try ade.outbox.feedCursor(business: Self.business))
        let thermometerEdit = try await ade.saveOffline(Self.priceEdit("p-6", "Thermometer", price: 9.5))
        let ibuprofenOffline = try await ade.saveOffline(Self.priceEdit("p-4", "Ibuprofen", price: 3.75))
        // Meanwhile Folake deletes the ibuprofen and edits the antiseptic, the counter changes the
        // gauze, and the server forgets its feed up to where Folake's phone has read it.
        #expect(try await folake.saveOnline(Self.delete("p-4", "Ibuprofen")), "the delete synced")
        #expect(try await folake.saveOnline(Self.priceEdit("p-2", "Antiseptic", price: 6.0)), "the edit synced")
        #expect(try await server.counterChanges("p-1", #"{"price":2.4}"#) == 4)
        fence = try await server.fence()
        try await folake.pull(through: fence)
        let folakesCursor = try #require(try folake.outbox.feedCursor(business: Self.business))
        let floor = try await server.purge(through: folakesCursor)
        #expect(floor == folakesCursor && adesCursor < floor, "Ade's cursor is below what the feed still serves")

        // Ade's signal returns: his pull is answered 409 expired, fetches the base again whole in
        // the same pull and goes on from the snapshot; his pending edits survive, and the one of
        // the ibuprofen, deleted meanwhile, turns conflicted.
        ade.network.setOnline(true)
        fence = try await server.fence()
        let resnapshot = try await ade.pull(through: fence)
        #expect(resnapshot.map(\.resnapshots).reduce(0, +) == 1 && resnapshot.map(\.pagesStaged).reduce(0, +) >= 2, "\(resnapshot)")
        #expect(try ade.outbox.feedCursor(business: Self.business).map { $0 >= floor } == true)
        let started = try ade.outbox.events(limit: 10_000).compactMap { event -> ResnapshotStarted? in
            guard case .resnapshotStarted(let started) = event.body else { return nil }
            return started
        }
        #expect(started.map(\.reason) == ["first_pull", "expired"] && started.last?.from == adesCursor && started.last?.type == nil,
                "the 409 for the purged cursor started it: \(started)")
        let thermometer = try #require(try ade.product("p-6"))
        #expect(Self.price(thermometer.value) == 9.5 && thermometer.sync.pending.map(\.operation) == [thermometerEdit],
                "the unsent edit survived the resnapshot, on screen")
        let ibuprofen = try #require(try ade.outbox.operation(ibuprofenOffline))
        #expect(ibuprofen.status == .conflicted && ibuprofen.lastErrorCode == "deleted_on_server", "\(ibuprofen.state)")
        #expect(try Self.price(ade.product("p-1")?.value) == 2.4 && Self.price(ade.product("p-2")?.value) == 6.0, "the snapshot's values")
        try await ade.sendEverything()
        #expect(try ade.outbox.operation(thermometerEdit)?.status == .synced)
        #expect(try await ade.outbox.resolveConflict(ibuprofenOffline, keeping: .theirs) == nil)

        fence = try await server.fence()
        try await folake.pull(through: fence)
        try await ade.pull(through: fence)
        shelf = try await server.products()
        #expect(shelf.keys.sorted() == ["p-1", "p-2", "p-6"])
        #expect(Self.price(try Self.json(shelf["p-6"])) == 9.5)
        try Self.expectEqual(folake, shelf, "Folake")
        try Self.expectEqual(ade, shelf, "Ade")
        let appliedAfter = try await server.applied()
        #expect(appliedAfter[thermometerEdit.idempotencyKey] == 1 && appliedAfter[ibuprofenOffline.idempotencyKey] == nil)
        try Self.expectClean(ade, "ade")
        try Self.expectClean(folake, "folake")
    }

    /// A tie in the base's trail: the phone's own create is answered with its record, which the
    /// engine stores re-encoded (`"price":9.0` becomes `"price":9`), and the feed then brings the
    /// same revision with the server's bytes verbatim (`"price":9.0`). The base keeps the answer's
    /// bytes (only a newer revision replaces a base), and `verify` takes the first confirmation of
    /// the highest revision as the trail's latest, as the store does: the record is synced at
    /// revision 1 and the journal verifies clean (no `record_trail_mismatch`).
    @Test func aPhonesOwnCreatePulledBackAtItsRevisionLeavesItsJournalClean() async throws {
        let server = try await Self.onThread { try Server() }
        let phone = try Phone(server)
        #expect(try await phone.saveOnline(Self.create("p-1", "Thermometer", price: 9.0)))
        try await phone.pull(through: try await server.fence())
        let record = try #require(try phone.product("p-1"))
        #expect(record.server?.revision == 1 && record.sync.isSynced)
        try Self.expectClean(phone, "the phone")
    }

    /// An edit is sent against the revision it was made on, not one pulled beneath it: made
    /// offline on revision 1 (`revisionFrom`), with the counter's revision 2 pulled before it is
    /// sent, it carries `If-Match: "1"` and is answered 412, as it is when sent without a pull
    /// first (Folake's gauze above). The row is conflicted with the server at revision 2, and the
    /// counter's price stands on the server until the member decides: sent against the base as of
    /// the send (`If-Match: "2"`), it would have overwritten a price the member never saw.
    @Test func anOfflineEditIsNotSentAgainstARevisionPulledBeneathIt() async throws {
        let server = try await Self.onThread { try Server() }
        let phone = try Phone(server)
        #expect(try await phone.saveOnline(Self.create("p-1", "Gauze", price: 2.5)))
        try await phone.pull(through: try await server.fence())
        phone.network.setOnline(false)
        let edit = try await phone.saveOffline(Self.priceEdit("p-1", "Gauze", price: 2.75))
        #expect(try await server.counterChanges("p-1", #"{"price":2.25}"#) == 2)
        phone.network.setOnline(true)
        try await phone.pull(through: try await server.fence())
        let pulled = try #require(try phone.product("p-1"))
        #expect(pulled.server?.revision == 2 && Self.price(pulled.value) == 2.75, "the counter's price beneath the member's")
        try await phone.sendEverything()
        let row = try #require(try phone.outbox.operation(edit))
        #expect(row.status == .conflicted && row.conflict?.serverRevision == "2", "\(row.state)")
        #expect(Self.price(try Self.json(try await server.products()["p-1"])) == 2.25, "the counter's price stands until the member decides")
    }

    /// `verify` finds nothing in the phone's journal.
    static func expectClean(_ phone: Phone, _ who: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let report = try phone.outbox.verify()
        #expect(report.isClean, "\(who)'s journal: \(report.findings)", sourceLocation: sourceLocation)
    }

    /// The server record's members as JSON bytes, for `price(_:)`.
    static func json(_ record: Server.Record?) throws -> Data? {
        guard let record else { return nil }
        return try JSONSerialization.data(withJSONObject: record.fields)
    }

    /// Runs blocking work (starting a cluster, a process) on a thread of its own.
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}
