import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import TestHarness
import OutboxWire
import Testing

/// Pulls through real processes killed at each step of a pull: a child (`outbox-test-child
/// pull-worker`) pulls a business's feed from the loopback server in small pages, and fetches its
/// base again whole when the server has forgotten the feed below its cursor (a purge: 409
/// `expired`), while this process changes and deletes records between children. Each child kills
/// itself with SIGKILL at the step it was told, the steps aimed at in turn: a feed page's answer
/// back before its commit, a feed page's request after the page before it committed, a snapshot
/// page's answer back before it is staged, a snapshot page's request after the page before it was
/// staged, and the first feed request after the staged snapshot was swapped in. A default run
/// kills at each step three times, the same way on every machine (`OUTBOX_SOAK=1`: twelve). After
/// every child the journal is reopened and checked: it verifies, no base is ahead of the server's
/// record, and within the epoch no base went back; at the end a pull converges on exactly the
/// server's records.
@Suite("Pulls killed inside pages and resnapshots", .timeLimit(.minutes(5)))
struct PullCrashTests {
    static let business = "crash-pull"

    /// The steps of a pull the child kills itself at, as it names them, aimed at in this order:
    /// each round's changes and purge (see ``round(_:)``) make the step's pass sure to come.
    enum Step: String, CaseIterable {
        case feedAnswer = "feed-answer"
        case feedRequest = "feed-request"
        case snapshotAnswer = "snapshot-answer"
        case snapshotRequest = "snapshot-request"
        case swapped
    }

    /// The rounds a run makes: three at each step, or the soak's twelve.
    static var rounds: Int { SoakSize.count("OUTBOX_PULL_CRASH_ROUNDS", quick: 3 * Step.allCases.count, soak: 12 * Step.allCases.count) }

    /// Round `number`'s step, at which pass of it the child stops, how many products the counter
    /// changes before it, and whether the feed is purged.
    /// - A feed step follows a swap (or the first child's empty journal): the counter changes
    ///   11 to 15 products (distinct: more than a page of 10), so that a second feed page
    ///   comes; the child stops at the first or second page's answer, or at the second page's
    ///   request, after the first page's commit.
    /// - The snapshot's answer: the feed is purged below the phone's cursor (behind by the last
    ///   round's pages), so the child resnapshots from scratch (110 products or more: eleven
    ///   pages or more), and stops at one of the first three pages' answers.
    /// - The snapshot's request and the swap: no purge, the child resumes the staging the last
    ///   one left (eight pages or more to go), stopping at its second or third page's request, or
    ///   at the feed's request after the swap; the snapshot's position is past the purge, so
    ///   that request is no 409.
    static func round(_ number: Int, using random: inout SeededRandom) -> (step: Step, occurrence: Int, changes: Int, purge: Bool) {
        let step = Step.allCases[number % Step.allCases.count]
        let (first, second, third) = (random.int(in: 1..<3), random.int(in: 1..<4), random.int(in: 2..<4))
        let (few, many) = (random.int(in: 1..<6), random.int(in: 11..<16))
        return switch step {
        case .feedAnswer: (step, first, many, false)
        case .feedRequest: (step, 2, many, false)
        case .snapshotAnswer: (step, second, few, true)
        case .snapshotRequest: (step, third, few, false)
        case .swapped: (step, 1, few, false)
        }
    }

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
        var killsAtStep: [Step: Int] = [:]
        var (failures, purges, resnapshots) = (0, 0, 0)
        for round in 0..<Self.rounds {
            let (step, occurrence, changes, purge) = Self.round(round, using: &random)
            // Between children: the counter changes some products (distinct ones, in turn from
            // a drawn place) and deletes one now and then; before a snapshot's first pages the
            // server forgets its feed (the phone's cursor expires: a resnapshot).
            let products = live.sorted()
            let from = random.int(in: 0..<products.count)
            for index in 0..<changes {
                let id = products[(from + index) % products.count]
                _ = try server.changeRecord(type: "product", id: id, businessID: Self.business, patch: Data(#"{"price":\#(round * 100 + index)}"#.utf8))
            }
            if random.chance(30), let id = live.sorted().last {
                var delete = OutboxRequest(businessID: Self.business, operationType: "product.delete", method: "DELETE", endpoint: "/products/\(id)",
                                           payload: Data("{}".utf8), category: "Products", entityLabel: id, summary: "Deleted")
                delete.revisionFrom = Self.key(id)
                _ = try await counter.save(delete, changing: [.delete(Self.key(id))])
                live.remove(id)
            }
            if purge {
                let fence = try await http.send(TransportRequest(method: "GET", endpoint: SnapshotPage.path + "?limit=1",
                                                                 headers: [WireHeader.businessID: Self.business], body: Data()))
                let position = try SnapshotPage.decoded(from: fence.body).position
                let purged = try await http.send(TransportRequest(method: "POST", endpoint: "/_control/feed/purge",
                                                                  headers: [WireHeader.businessID: Self.business, "Content-Type": "application/json"],
                                                                  body: Data(#"{"through":"\#(position.text)"}"#.utf8)))
                #expect(purged.statusCode == 200)
                purges += 1
            }
            let child = try ChildProcess("outbox-test-child", ["pull-worker", phone.path, server.baseURL.absoluteString, "10", "\(step.rawValue):\(occurrence)"])
            child.kill(after: SoakSize.hangGuardSeconds)
            let lines = child.readToEnd().map(\.text)
            let ending = child.waitForEnding()
            if ending == .signalled(SIGKILL) && lines.last == "stop \(step.rawValue) \(occurrence)" {
                killsAtStep[step, default: 0] += 1
            } else {
                failures += 1
                Issue.record("seed \(setting.seed), round \(round): to stop at \(step.rawValue) \(occurrence), the child ended \(ending): \(lines) \(child.errorOutput)")
            }
            if SoakSize.verbose { print("pull-crash: round \(round): \(changes) changes\(purge ? ", purged" : ""), \(lines.joined(separator: "; "))") }
            resnapshots += lines.filter { $0.hasPrefix("pulled ") }.compactMap { Int($0.split(separator: " ")[3]) }.reduce(0, +)

            // The journal as the child left it, read without pulling (every step comes after the open).
            let reader = try JournalReader(directory: phone)
            defer { reader.close() }
            let report = try reader.verify()
            #expect(report.isClean, "seed \(setting.seed), round \(round): \(report)")
            let held = Dictionary(try server.records().filter { $0.businessID == Self.business }.map { ($0.id, $0) }) { $1 }
            for id in held.keys.sorted() {
                guard let base = try reader.record(Self.key(id))?.server else { continue }
                #expect(base.revision <= UInt64(held[id]!.revision), "seed \(setting.seed), round \(round): \(id) ahead of the server")
                if let before = seen[id] { #expect(base.revision >= before, "seed \(setting.seed), round \(round): \(id) went back from \(before) to \(base.revision)") }
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
        #expect(failures == 0)
        let missed = Step.allCases.filter { killsAtStep[$0, default: 0] == 0 }
        #expect(Self.rounds < Step.allCases.count || missed.isEmpty, "seed \(setting.seed): no kill at \(missed.map(\.rawValue))")
        let kills = Step.allCases.map { "\($0.rawValue) \(killsAtStep[$0, default: 0])" }.joined(separator: ", ")
        print("pull-crash-tests: seed \(setting.seed), \(Self.rounds) rounds, kills at \(kills), \(failures) failed, \(purges) purges, \(resnapshots) resnapshots reported")
    }
}
