import Foundation
import Outbox
import OutboxStorage

/// Scenario 7: what the member sees, with ten thousand rows waiting.
extension Scenario {
    static let syncTab = Scenario(
        id: "7",
        name: "sync-tab",
        title: "The Sync tab and the badge with 10,000 rows waiting",
        metrics: [
            .time("tab", "Sync tab (5 cards, up to 50 rows each), median"),
            .time("tab-p99", "Sync tab, p99"),
            .time("badge", "badge count, median"),
        ],
        limit: { result in
            "one read transaction looking up the rows shown (up to 250) by key: \(TextReport.format(result.floor("tab"))) µs; "
                + "the badge: the one value holding the counters, \(TextReport.format(result.floor("badge"))) µs. The SQLite outbox counts and "
                + "sorts the waiting rows through its status index"
        },
        targets: [
            Target(text: "Sync tab at 10,000 waiting under 1 ms") { result in
                result.ours("tab").map { ("\(TextReport.format($0 / 1000)) ms", $0 < 1000) }
            },
        ],
        run: { context in
            let waiting = try await context.fixtures.waiting(rows: context.sizes.waitingRows, context: context)
            let iterations = context.sizes.readIterations

            let outbox = try Workload.openOutbox(waiting.directory)
            let shown = try outbox.syncTab(isOnline: true).cards.reduce(0) { $0 + $1.rows.count }
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

            let (floor, floorBadge) = try rawReads(waiting.directory, rows: shown, iterations: iterations)
            let (o, s, f) = (Latencies(nanoseconds: ours), Latencies(nanoseconds: theirs), Latencies(nanoseconds: floor))
            return [
                "tab": Trio(ours: o.p50, sqlite: s.p50, floor: f.p50),
                "tab-p99": Trio(ours: o.p99, sqlite: s.p99, floor: f.p99),
                "badge": Trio(ours: Latencies(nanoseconds: ourBadge).p50, sqlite: Latencies(nanoseconds: theirBadge).p50,
                              floor: Latencies(nanoseconds: floorBadge).p50),
            ]
        }
    )

    /// The least the tab and the badge must read: `rows` operation states by key in one read
    /// transaction, and the value holding the counters in another (projection layout 5: both in
    /// the `state` database, the states under the prefix 1, the counters under 0 and their name).
    private static func rawReads(_ directory: URL, rows: Int, iterations: Int) throws -> (tab: [Double], badge: [Double]) {
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        defer { environment.close() }
        let state = try environment.openDatabase("state")
        var keys: [[UInt8]] = []
        try environment.read { txn in
            try txn.scan(state, from: [1]) { key, _ in
                guard key.first == 1 else { return .stop }
                keys.append(Array(key))
                return keys.count < rows ? .next : .stop
            }
        }
        precondition(keys.count == rows, "the journal holds fewer states than the tab shows")
        let countersKey = [0] + Array("counters".utf8)
        let tab = try (0..<iterations).map { _ in
            try Stopwatch.time {
                let found = try environment.read { txn in try keys.allSatisfy { try txn.contains(state, key: $0) } }
                precondition(found, "a state is missing")
            }
        }
        let badge = try (0..<iterations).map { _ in
            try Stopwatch.time {
                let found = try environment.read { txn in try txn.withValue(state, key: countersKey) { $0?.count } }
                precondition(found != nil, "the counters are missing")
            }
        }
        return (tab, badge)
    }
}
