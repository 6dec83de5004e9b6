import Foundation
@testable import Outbox
import OutboxTestServer
import TestHarness
import OutboxWire
import Testing

/// Pulls through real processes killed at random moments: a child (`outbox-test-child
/// pull-worker`) pulls a business's feed from the loopback server in small pages, and fetches its
/// base again whole when the server has forgotten the feed below its cursor (a purge: 409
/// `expired`), while this process changes and deletes records between children and kills each
/// child by a timer, inside a page's commit, a staged snapshot page, the swap or a sweep as it
/// falls. After every child the journal is reopened and checked: it verifies, no base is ahead of
/// the server's record, and within the epoch no base went back; at the end a pull converges on
/// exactly the server's records.
@Suite("Pulls killed inside pages and resnapshots", .timeLimit(.minutes(5)))
struct PullCrashTests {
    static let business = "crash-pull"

    /// The counter: another device of the business, creating and deleting products.
    static func counter(_ server: TestServer, directory: URL) throws -> Outbox {
        try Outbox(directory: directory, transport: URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: 10),
                   configuration: OutboxConfiguration(account: "counter", defaultPolicy: .idempotent))
    }

    static func key(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }

    static func value(_ id: String, _ price: Int) -> Data { Data(#"{"id":"\#(id)","name":"Product \#(id)","price":\#(price)}"#.utf8) }

    @Test func killedInsideAPullThePhoneVerifiesNeverRunsAheadAndConvergesOnTheNextPull() async throws {
        let setting = try CrashSetting(named: "outbox-pull-crash")
        defer { setting.end() }
        var random = SeededRandom(seed: setting.seed)
        let server = setting.server
        let counter = try Self.counter(server, directory: setting.directory.appendingPathComponent("counter"))
        defer { counter.close() }
        var live = Set<String>()
        for number in 0..<120 {
            let id = "p-\(number)"
            let create = OutboxRequest(businessID: Self.business, operationType: "product.create", endpoint: "/products",
                                       payload: Self.value(id, number), category: "Products", entityLabel: id, summary: "New product")
            guard case .synced = try await counter.save(create, changing: [.put(Self.key(id), Self.value(id, number))]) else {
                Issue.record("the counter could not create \(id)")
                return
            }
            live.insert(id)
        }
        let http = URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: 10)
        let phone = setting.directory.appendingPathComponent("phone")
        var seen: [String: UInt64] = [:]
        var (kills, completed, purges, resnapshots, unopened) = (0, 0, 0, 0, 0)
        var opened = false
        // 14 rounds, and more (up to 48) until four children were killed: a child pulls for a
        // tenth of a second or so, and one left to finish tests nothing of a kill.
        var round = -1
        while round < 13 || (kills < 4 && round < 47) {
            round += 1
            // Between children: the counter changes some products and deletes one now and then;
            // sometimes the server forgets its feed (the phone's cursor expires: a resnapshot).
            for _ in 0..<random.int(in: 1..<6) {
                let id = live.sorted()[random.int(in: 0..<live.count)]
                _ = try server.changeRecord(type: "product", id: id, businessID: Self.business, patch: Data(#"{"price":\#(round * 100)}"#.utf8))
            }
            if random.chance(30), let id = live.sorted().last {
                var delete = OutboxRequest(businessID: Self.business, operationType: "product.delete", method: "DELETE", endpoint: "/products/\(id)",
                                           payload: Data("{}".utf8), category: "Products", entityLabel: id, summary: "Deleted")
                delete.revisionFrom = Self.key(id)
                _ = try await counter.save(delete, changing: [.delete(Self.key(id))])
                live.remove(id)
            }
            if random.chance(35) {
                let fence = try await http.send(TransportRequest(method: "GET", endpoint: SnapshotPage.path + "?limit=1",
                                                                 headers: [WireHeader.businessID: Self.business], body: Data()))
                let position = try SnapshotPage.decoded(from: fence.body).position
                let purged = try await http.send(TransportRequest(method: "POST", endpoint: "/_control/feed/purge",
                                                                  headers: [WireHeader.businessID: Self.business, "Content-Type": "application/json"],
                                                                  body: Data(#"{"through":"\#(position.text)"}"#.utf8)))
                #expect(purged.statusCode == 200)
                purges += 1
            }
            let child = try ChildProcess("outbox-test-child", ["pull-worker", phone.path, server.baseURL.absoluteString, "10"])
            // Half the children early, inside their first pages; the rest at any moment.
            child.kill(after: random.chance(50) ? random.double(in: 0.005...0.08) : random.double(in: 0.02...0.5))
            let lines = child.readToEnd().map(\.text)
            switch child.waitForEnding() {
            case .signalled(SIGKILL): kills += 1
            case .exited(0): completed += 1
            case let other: Issue.record("round \(round): the child ended \(other): \(lines)")
            }
            resnapshots += lines.filter { $0.hasPrefix("pulled ") }.compactMap { Int($0.split(separator: " ")[3]) }.reduce(0, +)

            // The journal as the child left it, read without pulling (a child killed before it
            // said the journal was open may have left none yet).
            guard lines.contains("opened") || opened else {
                unopened += 1
                continue
            }
            opened = true
            let reader = try JournalReader(directory: phone)
            defer { reader.close() }
            let report = try reader.verify()
            #expect(report.isClean, "round \(round): \(report)")
            let held = Dictionary(try server.records().filter { $0.businessID == Self.business }.map { ($0.id, $0) }) { $1 }
            for id in held.keys.sorted() {
                guard let base = try reader.record(Self.key(id))?.server else { continue }
                #expect(base.revision <= UInt64(held[id]!.revision), "round \(round): \(id) ahead of the server")
                if let before = seen[id] { #expect(base.revision >= before, "round \(round): \(id) went back from \(before) to \(base.revision)") }
                seen[id] = base.revision
            }
        }
        // A last pull, not killed, converges on the server's records.
        var configuration = OutboxConfiguration(account: "crash-member")
        configuration.pull = PullConfiguration(pageSize: 10, businesses: [Self.business], summaryIntervalSeconds: nil)
        let outbox = try Outbox(directory: phone, transport: http, configuration: configuration)
        defer { outbox.close() }
        var last = try await outbox.pull().feed(Self.business)
        for _ in 0..<20 where last?.reachedEnd != true { last = try await outbox.pull().feed(Self.business) }
        #expect(last?.reachedEnd == true)
        for record in try server.records() where record.businessID == Self.business {
            let mine = try outbox.record(Self.key(record.id))
            if record.isDeleted {
                // Its tombstone, or nothing: a snapshot holds live records only.
                #expect(mine?.value == nil && (mine?.server).map { $0.revision == UInt64(record.revision) } ?? true, "\(record.id)")
            } else {
                #expect(mine?.server?.revision == UInt64(record.revision) && mine?.value != nil, "\(record.id)")
            }
        }
        #expect(try outbox.verify().isClean)
        #expect(kills > 0, "at least one child was killed")
        print("pull-crash-tests: seed \(setting.seed), \(kills) kills, \(completed) pulls completed, \(purges) purges, \(resnapshots) resnapshots reported, \(unopened) checks before the journal was first opened")
    }
}
