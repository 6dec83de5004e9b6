import Foundation
import OutboxTestServer
import OutboxWire
import Synchronization

/// Scenario 14.4: the PostgreSQL feed read while 4 writers create and update records. A reader
/// pages `GET /sync/changes` (500 a page) from the feed's start to its end, then again from its
/// cursor, round after round, as phones pull: how fast it reads, and how far behind the newest
/// committed write its fence stays. Beside it, the same reader through the same backlog with no
/// writer running.
extension Scenario {
    static let pullFeedRead = Scenario(
        id: "14.4",
        name: "pull-feed-read",
        title: "Pull: the PostgreSQL feed read to its end again and again while 4 writers create and update records",
        metrics: [
            .rate("catch-up", "reading the backlog: changes read/s"),
            .time("page", "reading the backlog: one page of 500, median", .milliseconds),
            .rate("writes", "writes committed/s (4 writers)"),
            .count("backlog", "reading the backlog: changes in it", higherIsBetter: true),
            .time("visible-p50", "caught up: a write until a fence passes it, median", .milliseconds),
            .time("visible-p99", "the same, p99", .milliseconds),
            .count("behind-p50", "caught up: writes committed but behind each fence, median", higherIsBetter: false),
            .count("behind-max", "the same, the most", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "4 writers", sqlite: "no writer", floor: "-", versusSQLite: "vs no writer", versusFloor: "-"),
        limit: { result in
            "a read is one REPEATABLE READ transaction returning the rows below the snapshot's xmin after the cursor, in "
                + "(xid, seq) order; its fence is (epoch, xmin, 0). A write's change is served once no transaction older than "
                + "it is still open anywhere on the cluster: each writer's transaction open at a read holds that read's fence "
                + "below it. Writers: \(TextReport.format(result.ours("writes"))) writes/s, each its own claim and durable "
                + "commit (fsync and synchronous_commit on). Answered in process (`TestServer.respond(to:)`): the server's work and "
                + "PostgreSQL's over a Unix socket, no HTTP socket"
        },
        run: { context in
            let cluster = try context.postgres()
            let feed = try context.fixtures.postgresFeed(cluster: cluster, backlog: context.sizes.feedBacklog, context: context)
            return try FeedReadBench.measure(feed, seconds: context.sizes.feedReadSeconds)
        }
    )
}

enum FeedReadBench {
    /// A write the writers saw committed: its change's position and when its answer came.
    struct Committed {
        var position: FeedPosition
        var answeredAt: UInt64
        var change: String
    }

    /// One round of the reader: pages from its cursor until one reaches the fence.
    struct Round {
        var startedAt: UInt64
        var endedAt: UInt64
        var fence: FeedPosition
        var changes: Int
        var pages: [Double]
    }

    /// Follows the feed from its start, keeping every change it reads.
    final class Reader: @unchecked Sendable {
        // Why unchecked: one thread at a time uses a reader (its own thread, then the one that
        // waited for it).
        let server: TestServer
        var cursor: FeedPosition?
        var read: [String] = []

        init(server: TestServer) {
            self.server = server
        }

        func round() throws -> Round {
            let startedAt = Stopwatch.now()
            var changes = 0
            var pages: [Double] = []
            while true {
                let query = "limit=\(PullFeed.pageSize)" + (cursor.map { "&cursor=\($0.text)" } ?? "")
                var answer: HTTPResponse?
                let nanoseconds = Stopwatch.time {
                    answer = server.respond(to: HTTPRequest(method: "GET", path: FeedPage.path, query: query,
                                                            headers: [(WireHeader.businessID, Workload.businessID)]))
                }
                guard let answer, answer.status == 200 else {
                    throw BenchmarkFailure(description: "PostgreSQL feed: a page was answered \(answer.map { "\($0.status)" } ?? "nothing")")
                }
                let page = try FeedPage.decoded(from: answer.body)
                guard page.digest == page.computedDigest, page.count == page.changes.count, cursor.map({ page.cursor >= $0 }) ?? true else {
                    throw BenchmarkFailure(description: "PostgreSQL feed: the page from \(page.from) fails its check")
                }
                read += page.changes.map { "\($0.id)#\($0.revision)" }
                changes += page.changes.count
                if page.changes.count == PullFeed.pageSize { pages.append(nanoseconds / 1e6) }
                cursor = page.cursor
                if !page.hasMore {
                    return Round(startedAt: startedAt, endedAt: Stopwatch.now(), fence: page.cursor, changes: changes, pages: pages)
                }
            }
        }
    }

    static func measure(_ feed: PostgresFeedServer, seconds: Double) throws -> Sample {
        let server = feed.server
        // The reader alone, from the start through the backlog.
        let alone = Reader(server: server)
        let aloneRound = try alone.round()
        let backlog = aloneRound.changes

        let committed = Mutex<[Committed]>([])
        let stop = Atomic<Bool>(false)
        let run = UUID().uuidString.prefix(8).lowercased()
        let reader = Reader(server: server)
        let rounds = Mutex<[Round]>([])
        let start = Stopwatch.now()
        let deadline = start + UInt64(seconds * 1e9)
        try Threads.run(5) { thread in
            if thread == 4 {
                // The writers stop with the reader, however it ends.
                defer { stop.store(true, ordering: .relaxed) }
                while Stopwatch.now() < deadline {
                    let round = try reader.round()
                    rounds.withLock { $0.append(round) }
                }
                return
            }
            var mine: [Committed] = []
            var number = 0
            while !stop.load(ordering: .relaxed) {
                // Every other write updates one of the writer's own products created before.
                let update = number % 2 == 1
                let id = "w\(thread)-\(run)-\(update ? number - 1 : number)"
                let key = "\(id)-\(number)"
                let request = update
                    ? HTTPRequest(method: "PATCH", path: "/products/\(id)", headers: headers(key),
                                  body: Data(#"{"price":{"amount":"\#(number % 90 + 1).20","currency":"EUR"}}"#.utf8))
                    : HTTPRequest(method: "POST", path: "/products", headers: headers(key),
                                  body: Data(#"{"id":"\#(id)","name":"Plasters 20 pack","price":{"amount":"3.10","currency":"EUR"},"stock":40}"#.utf8))
                let answer = server.respond(to: request)
                let answeredAt = Stopwatch.now()
                guard let answer, answer.status == (update ? 200 : 201),
                      let visible = answer.headers.first(where: { $0.name.lowercased() == WireHeader.visibleAt.lowercased() }),
                      let etag = answer.headers.first(where: { $0.name.lowercased() == WireHeader.eTag.lowercased() })
                else {
                    throw BenchmarkFailure(description: "PostgreSQL feed: writer \(thread)'s \(request.method) was answered \(answer.map { "\($0.status)" } ?? "nothing")")
                }
                let revision = etag.value.trimmingCharacters(in: CharacterSet(charactersIn: "\"W/"))
                mine.append(Committed(position: try FeedPosition(text: visible.value), answeredAt: answeredAt, change: "\(id)#\(revision)"))
                number += 1
            }
            let finished = mine
            committed.withLock { $0 += finished }
        }
        let writing = Double(Stopwatch.now() - start) / 1e9
        let writes = committed.withLock { $0 }
        // Rounds until the fence passes every write, as the last phone to pull would.
        let newest = writes.map(\.position).max()
        var settling = 0
        while let newest, reader.cursor.map({ $0 <= newest }) ?? true, settling < 1000 {
            let round = try reader.round()
            rounds.withLock { $0.append(round) }
            settling += 1
        }
        let allRounds = rounds.withLock { $0 }
        try check(reader: reader, writes: writes, feed: feed)

        // The first round read the backlog while the writers wrote.
        let first = allRounds[0]
        let catchUp = Double(first.changes) / (Double(first.endedAt - first.startedAt) / 1e9)
        let aloneRate = Double(backlog) / (Double(aloneRound.endedAt - aloneRound.startedAt) / 1e9)
        // Once the reader has caught up: when each write was first passed by a fence (the end of
        // the round that read past it), and how many committed writes each fence left behind. A
        // write answered while the backlog was read waits for the whole backlog, so it is left
        // out: the first figures say how fast the backlog goes, these how far behind a reader
        // at the end stays.
        let caughtUp = writes.filter { $0.answeredAt > first.endedAt }
        var delays: [Double] = []
        for write in caughtUp {
            guard let round = allRounds.first(where: { $0.fence > write.position }) else { continue }
            delays.append(Double(round.endedAt > write.answeredAt ? round.endedAt - write.answeredAt : 0) / 1e6)
        }
        let behind = allRounds.dropFirst().filter { $0.startedAt < deadline }.map { round in
            Double(caughtUp.filter { $0.answeredAt < round.startedAt && $0.position >= round.fence }.count)
        }
        guard delays.count == caughtUp.count, !delays.isEmpty, !behind.isEmpty else {
            throw BenchmarkFailure(description: "PostgreSQL feed: \(delays.count) of \(caughtUp.count) writes after the backlog passed by a fence, \(behind.count) rounds")
        }
        let delay = Statistics(delays)
        let behindStats = Statistics(behind)
        return [
            "catch-up": Trio(ours: catchUp, sqlite: aloneRate),
            "page": Trio(ours: first.pages.isEmpty ? nil : Statistics(first.pages).median,
                         sqlite: aloneRound.pages.isEmpty ? nil : Statistics(aloneRound.pages).median),
            "writes": Trio(ours: Double(writes.count) / writing),
            "backlog": Trio(ours: Double(first.changes), sqlite: Double(backlog)),
            "visible-p50": Trio(ours: delay.median),
            "visible-p99": Trio(ours: delay.percentile(99)),
            "behind-p50": Trio(ours: behindStats.median),
            "behind-max": Trio(ours: behindStats.max),
        ]
    }

    static func headers(_ key: String) -> [(name: String, value: String)] {
        [(WireHeader.idempotencyKey, key), (WireHeader.contentType, "application/json"), (WireHeader.businessID, Workload.businessID)]
    }

    /// The reader read every change row of the feed once, each write's among them.
    static func check(reader: Reader, writes: [Committed], feed: PostgresFeedServer) throws {
        let rows = try feed.changeRows()
        let read = Set(reader.read)
        guard reader.read.count == rows, read.count == rows else {
            throw BenchmarkFailure(description: "PostgreSQL feed: the reader read \(reader.read.count) changes (\(read.count) distinct); the feed holds \(rows)")
        }
        guard let missing = writes.first(where: { !read.contains($0.change) }) else { return }
        throw BenchmarkFailure(description: "PostgreSQL feed: the change \(missing.change), answered at \(missing.position), was never read")
    }
}
