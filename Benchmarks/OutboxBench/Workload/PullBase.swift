import Foundation
import Outbox
import OutboxAudit
import OutboxWire
import Synchronization

/// Scenario 14.2's stores, each holding the feed of ``PullFeedServer`` already pulled: the
/// engine's journal, the SQLite client's database and the raw floor. Every page 14.2 applies
/// follows the one before in all three, so they stay at one cursor; a model of the live ids
/// says what each must hold.
final class PullBase: Sendable {
    let journal: URL
    let sqlite: URL
    let floor: URL
    /// The catalogue's size when the pages of changes began.
    let records: Int

    private struct State {
        var nextPage = 0
        var cursor: FeedPosition
        var live: Set<String>
    }

    private let state: Mutex<State>

    init(feed: PullFeedServer, directory: URL) async throws {
        journal = directory.appendingPathComponent("journal")
        sqlite = directory.appendingPathComponent("sqlite")
        floor = directory.appendingPathComponent("floor")
        records = feed.records
        let pages = try feed.pageBodies().map { try FeedPage.decoded(from: $0) }
        // Built without a flush per commit; measured with one. The journal is the same.
        let outbox = try Workload.openOutbox(journal, durability: .processCrash)
        let client = try SQLitePull(directory: sqlite)
        let raw = try PullFloor(directory: floor)
        var cursor: FeedPosition?
        for page in pages {
            guard case .applied = try await outbox.apply(page, requested: cursor, limit: PullFeed.pageSize) else {
                throw BenchmarkFailure(description: "the base's journal did not apply the page from \(page.from)")
            }
            try client.apply(page, requested: cursor)
            try raw.apply(page)
            cursor = page.cursor
        }
        try outbox.flush()
        outbox.close()
        state = Mutex(State(cursor: feed.cursor, live: Set((0..<feed.records).map { Workload.stableID($0) })))
    }

    /// The next page of changes (``PullFeed/changePage(index:records:from:)``) and the cursor it
    /// is asked from.
    func nextPage() -> (body: Data, from: FeedPosition) {
        state.withLock { state in
            defer { state.nextPage += 1 }
            return (PullFeed.changePage(index: state.nextPage, records: records, from: state.cursor), state.cursor)
        }
    }

    /// Records that every store applied `page`.
    func applied(_ page: FeedPage) {
        state.withLock { state in
            state.cursor = page.cursor
            for change in page.changes {
                if change.record == nil { state.live.remove(change.id) } else { state.live.insert(change.id) }
            }
        }
    }

    /// The live records every store must hold now.
    var liveRecords: Int { state.withLock { $0.live.count } }
}
