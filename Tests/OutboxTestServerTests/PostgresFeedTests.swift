import Foundation
import IdempotencyClaims
import OutboxTestServer
import OutboxTestServerPostgres
import OutboxWire
import PostgresClaimStore
import ThrowawayPostgres
import Testing

/// Follows a feed's cursors on `port`: every change read, in the order read, and the cursor now.
private struct FeedFollower {
    let port: UInt16
    var cursor: FeedPosition?
    var read: [(position: FeedPosition?, change: FeedChange)] = []
    var ids: [String] { read.map(\.change.id) }

    /// Reads pages until one reaches the fence; each page's changes come after its `from`.
    mutating func pull() async throws {
        while true {
            let response = try await exchange(port, request("GET", FeedPage.path + "?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")))
            #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
            let page = try FeedPage.decoded(from: response.body)
            #expect(page.digest == page.computedDigest)
            #expect(cursor.map { page.cursor >= $0 } ?? true, "a cursor never goes back")
            read += page.changes.map { (nil, $0) }
            cursor = page.cursor
            if !page.hasMore { return }
        }
    }

    /// Pulls until every id of `ids` has been read, as long as open transactions elsewhere on the
    /// cluster hold the fence back (each ends on its own). No count of pulls bounds it: how many
    /// pulls pass before the cluster's own transactions end depends on the machine's load; the
    /// suite's time limit ends a feed that never serves them.
    mutating func pull(until ids: Set<String>) async throws {
        while !ids.isSubset(of: Set(self.ids)) {
            try await pull()
            await Task.yield()
        }
    }
}

/// Each test on a cluster of its own: a feed's fence is the cluster's oldest open transaction, so
/// another test's transaction held open on a shared cluster would hold these feeds back.
@Suite("The PostgreSQL storage's change feed", .timeLimit(.minutes(10)))
struct PostgresFeedTests {
    @Test func aChangeCommittedAfterAnOpenTransactionsIsServedOnlyOnceThatOneCommitsAndBothComeInXidOrder() async throws {
        let cluster = try await onThread { try TemporaryPostgresCluster.start() }
        defer { cluster.stop() }
        let server = try await onThread { try TestServer(.init(storage: .postgres(cluster.settings, poolSize: 4))) }
        defer { server.stop() }
        let port = server.port
        _ = try await exchange(port, request("POST", "/_control/faults", body: #"[{"fault":"hold_in_transaction","key":"op-held"}]"#))
        let held = Task { try await exchange(port, request(key: "op-held", body: #"{"id":"p-held"}"#)) }
        #expect(try await exchange(port, request("POST", "/_control/await-held", body: #"{"key":"op-held"}"#)).json?["held"] as? Bool == true)
        let later = try await exchange(port, request(key: "op-later", body: #"{"id":"p-later"}"#))
        #expect(later.status == 201)
        let laterAt = try FeedPosition(text: try #require(later.header(WireHeader.visibleAt)))

        var follower = FeedFollower(port: port)
        try await follower.pull()
        try await follower.pull()
        #expect(follower.ids.isEmpty, "the later commit waits behind the open transaction's xid")
        #expect(try #require(follower.cursor) < laterAt, "no cursor is served past the later change")

        #expect(try await exchange(port, request("POST", "/_control/release", body: #"{"key":"op-held"}"#)).json?["released"] as? Int == 1)
        let heldAnswer = try await held.value
        #expect(heldAnswer.status == 201)
        let heldAt = try FeedPosition(text: try #require(heldAnswer.header(WireHeader.visibleAt)))
        #expect(heldAt < laterAt, "the held transaction's xid is the earlier")
        try await follower.pull(until: ["p-held", "p-later"])
        #expect(follower.ids == ["p-held", "p-later"], "both, in xid order, each once")
        #expect(try #require(follower.cursor) >= laterAt)
    }

    @Test func pagesReadWhileWritesOnTwoServersCommitOutOfOrderHoldEveryChangeOnce() async throws {
        let cluster = try await onThread { try TemporaryPostgresCluster.start() }
        defer { cluster.stop() }
        let servers = try await onThread { try ServerProcess.onPostgres(2, conninfo: cluster.settings.conninfo) }
        let ports = servers.map(\.port)
        let heldKeys = (1...4).map { "op-held-\($0)" }
        // Four writes held open on alternating servers, taken in order: their xids ascend.
        var held: [Task<RawResponse, any Error>] = []
        for (index, key) in heldKeys.enumerated() {
            let port = ports[index % 2]
            _ = try await exchange(port, request("POST", "/_control/faults", body: #"[{"fault":"hold_in_transaction","key":"\#(key)"}]"#))
            held.append(Task { try await exchange(port, request(key: key, body: #"{"id":"p-\#(key)"}"#)) })
            #expect(try await exchange(port, request("POST", "/_control/await-held", body: #"{"key":"\#(key)"}"#)).json?["held"] as? Bool == true)
        }
        var positions: [FeedPosition] = []
        var follower = FeedFollower(port: ports[0])
        // Each held write is let go last first, with a free write committing and a page read between.
        for (index, key) in heldKeys.enumerated().reversed() {
            let free = try await exchange(ports[(index + 1) % 2], request(key: "op-free-\(index)", body: #"{"id":"p-free-\#(index)"}"#))
            #expect(free.status == 201)
            positions.append(try FeedPosition(text: try #require(free.header(WireHeader.visibleAt))))
            try await follower.pull()
            let port = ports[index % 2]
            #expect(try await exchange(port, request("POST", "/_control/release", body: #"{"key":"\#(key)"}"#)).json?["released"] as? Int == 1)
            let answer = try await held[index].value
            #expect(answer.status == 201)
            positions.append(try FeedPosition(text: try #require(answer.header(WireHeader.visibleAt))))
            try await follower.pull()
        }
        let expected = Set(heldKeys.map { "p-\($0)" } + (0..<4).map { "p-free-\($0)" })
        try await follower.pull(until: expected)
        #expect(follower.ids.count == expected.count, "each change once: \(follower.ids)")
        #expect(Set(follower.ids) == expected, "every change")
        #expect(Set(positions).count == positions.count)
        #expect(try #require(follower.cursor) >= positions.max()!)
        let connection = try PostgresConnection(cluster.settings)
        defer { connection.close() }
        let rows = try connection.execute("SELECT count(*) FROM test_server_changes")[0].int64(0)
        #expect(rows == Int64(expected.count), "one row per write, every one read")
    }

    @Test func changesWhoseXidsCrossIntoMoreDigitsComeInXidOrderAndNoneIsSkipped() async throws {
        let cluster = try await onThread { try TemporaryPostgresCluster.start() }
        defer { cluster.stop() }
        let server = try await onThread { try TestServer(.init(storage: .postgres(cluster.settings, poolSize: 4))) }
        defer { server.stop() }
        let port = server.port
        // Move the cluster's transaction ids to just below 10,000, so the writes' xids go from four
        // digits to five: ordered as text, "10001" would sort before "9998".
        let connection = try PostgresConnection(cluster.settings)
        defer { connection.close() }
        let start = try Int(connection.execute("SELECT pg_current_xact_id()::text")[0].text(0))!
        for _ in start..<9_995 { _ = try connection.execute("SELECT pg_current_xact_id()") }
        var written: [String] = []
        for number in 0..<10 {
            let created = try await exchange(port, request(key: "digits-\(number)", body: #"{"id":"d-\#(number)"}"#))
            #expect(created.status == 201 || created.status == 200)
            written.append("d-\(number)")
        }
        let xids = try connection.execute("SELECT xid::text FROM test_server_changes ORDER BY seq").map { try $0.text(0) }
        #expect(xids.contains { $0.count == 4 } && xids.contains { $0.count == 5 }, "the writes span four and five digits: \(xids)")
        var follower = FeedFollower(port: port)
        try await follower.pull(until: Set(written))
        #expect(follower.ids == written, "each change once, in xid order, none skipped by a page cut at a text-ordered cursor")
    }

    @Test func aPurgeRaisesTheFloorAResetTheEpochAndSnapshotAndSummaryStandAtTheFence() async throws {
        let cluster = try await onThread { try TemporaryPostgresCluster.start() }
        defer { cluster.stop() }
        let server = try await onThread { try TestServer(.init(storage: .postgres(cluster.settings, poolSize: 4))) }
        defer { server.stop() }
        let port = server.port
        var positions: [FeedPosition] = []
        for number in 1...3 {
            let created = try await exchange(port, request(key: "create-\(number)", body: #"{"id":"p-\#(number)"}"#))
            positions.append(try FeedPosition(text: try #require(created.header(WireHeader.visibleAt))))
        }
        #expect(try await exchange(port, request("DELETE", "/products/p-2", key: "delete-2")).status == 200)
        #expect(positions == positions.sorted() && positions.allSatisfy { $0.epoch == 1 })
        var follower = FeedFollower(port: port)
        try await follower.pull(until: ["p-1", "p-2", "p-3"])
        #expect(follower.ids == ["p-1", "p-2", "p-3", "p-2"])

        let snapshot = try SnapshotPage.decoded(from: try await exchange(port, request("GET", SnapshotPage.path)).body)
        #expect(snapshot.records.map(\.id) == ["p-1", "p-3"] && snapshot.position >= positions[2])
        let summary = try FeedSummary.decoded(from: try await exchange(port, request("GET", FeedSummary.path + "?type=product")).body)
        #expect(summary.count == 2 && summary.digest == FeedDigest.summary([(id: "p-1", revision: 1), (id: "p-3", revision: 1)]))

        let purged = try await exchange(port, request("POST", "/_control/feed/purge", body: #"{"through":"\#(positions[1])"}"#))
        #expect(purged.json?["floor"] as? String == positions[1].description && purged.json?["purged"] as? Int == 2)
        let expired = try await exchange(port, request("GET", FeedPage.path + "?cursor=\(positions[0])"))
        #expect(expired.status == 409)
        #expect(try FeedResnapshot.decoded(from: expired.body).reason == .expired)
        let served = try FeedPage.decoded(from: try await exchange(port, request("GET", FeedPage.path + "?cursor=\(positions[1])")).body)
        #expect(served.changes.map(\.id) == ["p-3", "p-2"], "a cursor at the floor is served")

        #expect(try await exchange(port, request("POST", "/_control/reset")).status == 200)
        let foreign = try await exchange(port, request("GET", FeedPage.path + "?cursor=\(positions[2])"))
        #expect(foreign.status == 409)
        #expect(try FeedResnapshot.decoded(from: foreign.body).reason == .foreignEpoch)
        let again = try await exchange(port, request(key: "create-1", body: #"{"id":"p-1"}"#))
        #expect(try FeedPosition(text: try #require(again.header(WireHeader.visibleAt))).epoch == 2)
    }
}
