import Foundation
import IdempotencyClaims
import OutboxWire
import Testing

/// A feed as a PostgreSQL backend would hold it: positions `(epoch, xid, seq)` with gaps, and a
/// fence (the snapshot's xmin) past its last row, so the rules are seen to hold for any backend.
private struct ListedLog: ChangeLog {
    var epoch: UInt64 = 3
    var floor = FeedPosition(epoch: 3, major: 0)
    var fence = FeedPosition(epoch: 3, major: 900)
    var rows: [ChangeRow] = [
        row(740, 1, "p1", record: #"{"id":"p1"}"#), row(740, 2, "p2", record: nil), row(812, 7, "p3", record: #"{"id":"p3","x":1}"#),
        row(850, 9, "p1", record: #"{"id":"p1","v":2}"#),
    ]
    var fails = false

    static func row(_ xid: UInt64, _ seq: UInt64, _ id: String, record: String?) -> ChangeRow {
        ChangeRow(position: FeedPosition(epoch: 3, major: xid, minor: seq),
                  change: FeedChange(type: "product", id: id, revision: xid, record: record.map { Data($0.utf8) }))
    }

    struct Broken: Error {}

    func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) throws -> SnapshotRead {
        if fails { throw Broken() }
        let live = rows.map(\.change).filter { !$0.isDelete && (type == nil || $0.type == type) }
            .filter { after?.precedes(type: $0.type, id: $0.id) ?? true }.sorted { $0.id < $1.id }
        return SnapshotRead(epoch: epoch, position: fence, records: Array(live.prefix(limit)))
    }

    func summary(business: String, type: String) throws -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
        if fails { throw Broken() }
        return (fence, rows.map(\.change).filter { !$0.isDelete && $0.type == type }.map { (id: $0.id, revision: $0.revision) })
    }

    func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) throws -> ChangeLogRead {
        if fails { throw Broken() }
        let start = after ?? .start(of: epoch)
        let picked = rows.filter { $0.position > start && $0.position <= (until ?? fence) }.prefix(limit)
        return ChangeLogRead(epoch: epoch, floor: floor, fence: fence, rows: Array(picked))
    }
}

private let limits = FeedLimits(maxLimit: 3, maxPageBytes: 1 << 20, tombstoneRetentionSeconds: 3_600)

private func page(_ query: String, _ log: ListedLog = ListedLog(), limits: FeedLimits = limits) throws -> FeedPage {
    try FeedHandling.page(business: "pharmacy-7", query: query, log: log, limits: limits)
}

@Suite("The change feed's rules over any backend's log")
struct FeedHandlingTests {
    @Test func aPageThatTakesEveryRowEndsAtTheFenceNotAtItsLastRow() throws {
        let served = try page("cursor=3-740-2&limit=10")
        #expect(served.changes.map(\.id) == ["p3", "p1"])
        #expect(served.cursor == FeedPosition(epoch: 3, major: 900), "past rows no later commit can come before")
        #expect(!served.hasMore)
        #expect(served.from == FeedPosition(epoch: 3, major: 740, minor: 2))
        #expect(served.business == "pharmacy-7" && served.limits == limits)
    }

    @Test func aPageCutByItsLimitEndsAtItsLastChange() throws {
        let served = try page("limit=2")
        #expect(served.changes.map(\.id) == ["p1", "p2"])
        #expect(served.cursor == FeedPosition(epoch: 3, major: 740, minor: 2) && served.hasMore)
        #expect(try page("").changes.count == 3, "no limit: max_limit")
        #expect(try page("limit=99").changes.count == 3, "clamped to max_limit")
    }

    @Test func aPageCutByItsBytesHoldsAtLeastOneChange() throws {
        let tight = FeedLimits(maxLimit: 10, maxPageBytes: 1_100, tombstoneRetentionSeconds: 1)
        let served = try page("", limits: tight)
        #expect(served.changes.count == 1 && served.hasMore && served.cursor == FeedPosition(epoch: 3, major: 740, minor: 1))
    }

    @Test func theCountAndDigestAreThoseOfTheChangesSent() throws {
        let served = try page("")
        #expect(served.count == 3)
        #expect(served.digest == FeedDigest.page(served.changes.map(\.digestInput)))
        let response = FeedHandling.respond(business: "pharmacy-7", query: "", log: ListedLog(), limits: limits)
        #expect(response.status == 200)
        #expect(try FeedPage.decoded(from: response.body) == served)
    }

    @Test func untilStopsAPageAtItAndPastTheFenceAtTheFence() throws {
        let bounded = try page("until=3-812-7&limit=10")
        #expect(bounded.changes.map(\.id) == ["p1", "p2", "p3"] && bounded.cursor == FeedPosition(epoch: 3, major: 812, minor: 7))
        #expect(!bounded.hasMore, "it reached what it was asked for")
        #expect(try page("cursor=3-812-7&until=3-812-7").hasMore == false, "an empty page never says more follow")
        let beyond = try page("cursor=3-812-7&until=3-5000-0&limit=10")
        #expect(beyond.cursor == FeedPosition(epoch: 3, major: 900) && !beyond.hasMore)
    }

    @Test(arguments: [
        ("cursor=2-900-0", FeedResnapshot.Reason.foreignEpoch), ("cursor=4-0-0", .foreignEpoch), ("cursor=3-900-1", .ahead),
        ("cursor=3-100-0", .expired), ("", .expired), ("cursor=3-100", .unknown), ("cursor=%33-1-0x", .unknown),
    ])
    func aCursorOutsideTheFeedIsRefusedWithItsReason(_ query: String, _ reason: FeedResnapshot.Reason) throws {
        var log = ListedLog()
        log.floor = FeedPosition(epoch: 3, major: 700)
        #expect(throws: FeedHandling.Refusal.self) { try page(query, log) }
        let response = FeedHandling.respond(business: "b", query: query, log: log, limits: limits)
        #expect(response.status == 409)
        let refusal = try FeedResnapshot.decoded(from: response.body)
        #expect(refusal.reason == reason && refusal.epoch == 3)
        #expect(try page("cursor=3-700-0", log).changes.count == 3, "a cursor at the floor is served")
    }

    @Test func aFailingLogIs500AndNoPage() {
        var log = ListedLog()
        log.fails = true
        let response = FeedHandling.respond(business: "b", query: "", log: log, limits: limits)
        #expect(response.status == 500)
    }
}
