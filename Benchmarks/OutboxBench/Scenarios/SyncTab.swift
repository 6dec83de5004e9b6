import Foundation
import Outbox
import OutboxAudit
import OutboxCore
import OutboxStorage

/// Scenario 7: what the member sees, with ten thousand rows waiting.
extension Scenario {
    static let syncTab = Scenario(
        id: "7",
        name: "sync-tab",
        title: "The Sync tab and the badge with 10,000 rows waiting",
        metrics: [
            .time("tab", "Sync tab (5 cards, up to 50 rows each), median"),
            .time("tab-decoded", "the same against its reads with each row decoded"),
            .time("tab-p99", "Sync tab, p99"),
            .time("badge", "badge count, median"),
        ],
        limit: { result in
            "one read transaction reading what the tab shows and nothing else: the counters, the engine state, each card's "
                + "index entries of the rows shown (up to 250), each holding its row: \(TextReport.format(result.floor("tab"))) µs; "
                + "the same with each row decoded by the engine's codec (the rows' only other cost that grows with them): "
                + "\(TextReport.format(result.floor("tab-decoded"))) µs; "
                + "the badge: the one value holding the counters, \(TextReport.format(result.floor("badge"))) µs. The SQLite outbox counts and "
                + "sorts the waiting rows through its status index"
        },
        targets: [
            Target(text: "Sync tab at 10,000 waiting under 1 ms") { result in
                result.ours("tab").map { ("\(TextReport.format($0 / 1000)) ms", $0 < 1000) }
            },
            Target(text: "Sync tab within 8x the reads of the rows it shows") { result in
                result["tab"]?.versusFloor.map { ("\(TextReport.ratioText($0.median))", $0.median <= 8) }
            },
        ],
        run: { context in
            let waiting = try await context.fixtures.waiting(rows: context.sizes.waitingRows, context: context)
            let iterations = context.sizes.readIterations

            let outbox = try Workload.openOutbox(waiting.directory)
            let shown = try outbox.syncTab(isOnline: true).cards.map { (category: $0.category, rows: $0.rows.count) }
            let ours = try (0..<iterations).map { _ in
                try Stopwatch.time {
                    let tab = try outbox.syncTab(isOnline: true)
                    precondition(tab.totalCount == waiting.rows, "rows missing from the tab")
                }
            }
            let ourBadge = try (0..<iterations).map { _ in
                try Stopwatch.time {
                    let badge = try outbox.badgeCount()
                    precondition(badge == waiting.rows, "the badge is wrong")
                }
            }
            outbox.close()

            let sqlite = try SQLiteOutbox(directory: waiting.sqliteDirectory, durability: .full)
            let theirs = try (0..<iterations).map { _ in try Stopwatch.time { _ = try sqlite.syncTab() } }
            let theirBadge = try (0..<iterations).map { _ in
                try Stopwatch.time {
                    let badge = try sqlite.badgeCount()
                    precondition(badge == waiting.rows, "the badge is wrong")
                }
            }

            let reads = try rawReads(waiting.directory, cards: shown, iterations: iterations)
            let (o, s, f) = (Latencies(nanoseconds: ours), Latencies(nanoseconds: theirs), Latencies(nanoseconds: reads.tab))
            return [
                "tab": Trio(ours: o.p50, sqlite: s.p50, floor: f.p50),
                "tab-decoded": Trio(ours: o.p50, sqlite: nil, floor: Latencies(nanoseconds: reads.decoded).p50),
                "tab-p99": Trio(ours: o.p99, sqlite: s.p99, floor: f.p99),
                "badge": Trio(ours: Latencies(nanoseconds: ourBadge).p50, sqlite: Latencies(nanoseconds: theirBadge).p50,
                              floor: Latencies(nanoseconds: reads.badge).p50),
            ]
        }
    )

    /// The least the tab and the badge must read (projection layout 12, all in the `state`
    /// database): in one read transaction the counters (prefix 0), the engine state, and for each
    /// card its index entries (prefix 4, the waiting group 0, the category, 0, the latest seq)
    /// newest first, as many as it shows, each holding its row (`StateCodec.encodeTabRow`); again
    /// with each row decoded; and the counters alone in another.
    private static func rawReads(_ directory: URL, cards: [(category: String, rows: Int)], iterations: Int)
        throws -> (tab: [Double], decoded: [Double], badge: [Double])
    {
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        defer { environment.close() }
        let state = try environment.openDatabase("state")
        let countersKey = [0] + Array("counters".utf8)
        let engineKey = [0] + Array("engine".utf8)
        // The last key a card's entries can have: its leading part, then the highest seq.
        let ends = cards.map { ([4, 0] + Array($0.category.utf8) + [0] + [UInt8](repeating: 0xFF, count: 8), $0.rows) }
        /// Reads what the tab shows; `decode` is handed each state's bytes. Answers the states read.
        func read(_ decode: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
            try environment.read { txn in
                var found = try txn.withValue(state, key: countersKey) { $0 == nil ? 0 : 1 }
                found += try txn.withValue(state, key: engineKey) { $0 == nil ? 0 : 1 }
                for (end, rows) in ends {
                    var left = rows
                    try txn.scan(state, from: end, reverse: true) { _, shown in
                        try decode(shown)
                        found += 1
                        left -= 1
                        return left > 0 ? .next : .stop
                    }
                }
                return found
            }
        }
        let expected = 2 + cards.reduce(0) { $0 + $1.rows }
        let tab = try (0..<iterations).map { _ in
            try Stopwatch.time {
                let found = try read { _ in }
                precondition(found == expected, "a row the tab shows is missing")
            }
        }
        let decoded = try (0..<iterations).map { _ in
            try Stopwatch.time {
                let found = try read { _ = try StateCodec.decodeTabRow(Array($0)) }
                precondition(found == expected, "a row the tab shows is missing")
            }
        }
        let badge = try (0..<iterations).map { _ in
            try Stopwatch.time {
                let found = try environment.read { txn in try txn.withValue(state, key: countersKey) { $0?.count } }
                precondition(found != nil, "the counters are missing")
            }
        }
        return (tab, decoded, badge)
    }
}
