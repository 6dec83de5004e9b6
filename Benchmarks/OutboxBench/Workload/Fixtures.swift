import Foundation
import Outbox
import OutboxAudit
import ThrowawayPostgres
import ThrowawaySwiftStore
import Synchronization

/// Journals too expensive to build per repeat, built once per run on first use and shared by the
/// scenarios that read them.
final class Fixtures: Sendable {
    /// Rows waiting on the Sync tab, in a journal and in a SQLite outbox.
    struct Waiting: Sendable {
        var directory: URL
        var sqliteDirectory: URL
        var rows: Int
    }

    private let journals = Mutex<[Int: JournalBuilder.Built]>([:])
    private let waiting = Mutex<[Int: Waiting]>([:])
    private let recordJournals = Mutex<[Int: RecordJournal]>([:])
    private let pullFeeds = Mutex<[String: PullFeedServer]>([:])
    private let pullBases = Mutex<[Int: PullBase]>([:])
    private let pullResnapshots = Mutex<[Int: PullResnapshot]>([:])
    private let postgresFeeds = Mutex<PostgresFeedServer?>(nil)
    private let swiftStore = Mutex<AttachmentUploads.Store?>(nil)

    /// A journal of `events` events (see ``JournalBuilder``).
    func journal(events: Int, context: Context) async throws -> JournalBuilder.Built {
        if let built = journals.withLock({ $0[events] }) { return built }
        context.progress("building a journal of \(events) events (records written raw, projections rebuilt by the engine)")
        let directory = try context.freshDirectory("journal-\(events)")
        var built: JournalBuilder.Built?
        let nanoseconds = try await Stopwatch.time { built = try await JournalBuilder.build(in: directory, events: events) }
        guard let built else { throw BenchmarkFailure(description: "the journal of \(events) events was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s: \(built.operations) operations, "
            + "\(built.waitingRows) waiting, \(TextReport.format(Double(Scenario.directoryBytes(built.directory)) / 1_048_576)) MiB")
        journals.withLock { $0[events] = built }
        return built
    }

    /// `rows` writes enqueued through the engine (64 producers at once, flushed at the end) and the
    /// same rows queued in a SQLite outbox: all waiting to sync.
    func waiting(rows: Int, context: Context) async throws -> Waiting {
        if let built = waiting.withLock({ $0[rows] }) { return built }
        context.progress("enqueueing \(rows) waiting rows")
        let directory = try context.freshDirectory("waiting-\(rows)")
        let journal = directory.appendingPathComponent("journal")
        let outbox = try Workload.openOutbox(journal, durability: .processCrash)
        let producers = 64
        _ = try await Scenario.timedProducers(producers, (rows + producers - 1) / producers) { number in
            if number < rows { _ = try await outbox.enqueue(Workload.request(number)) }
        }
        try outbox.flush()
        outbox.close()
        let sqliteDirectory = directory.appendingPathComponent("sqlite")
        let sqlite = try SQLiteOutbox(directory: sqliteDirectory, durability: .full)
        try sqlite.bulkInsert((0..<rows).lazy.map { (OperationID(), Workload.request($0), OutboxStatus.queued) })
        let built = Waiting(directory: journal, sqliteDirectory: sqliteDirectory, rows: rows)
        waiting.withLock { $0[rows] = built }
        return built
    }

    /// `records` products with their bases and pending edits, in a journal and in a SQLite outbox
    /// with its app table (see ``RecordJournal``).
    func records(_ records: Int, context: Context) async throws -> RecordJournal {
        if let built = recordJournals.withLock({ $0[records] }) { return built }
        context.progress("building \(records) records (created and synced, then edited offline)")
        let directory = try context.freshDirectory("records-\(records)")
        var built: RecordJournal?
        let nanoseconds = try await Stopwatch.time { built = try await RecordJournal.build(in: directory, records: records) }
        guard let built else { throw BenchmarkFailure(description: "the journal of \(records) records was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s: \(built.pendingWrites) pending writes")
        recordJournals.withLock { $0[records] = built }
        return built
    }

    /// A loopback test server whose feed holds `records` products, or records of the several
    /// types of ``BusinessFeed``, and its pages in a file (see ``PullFeedServer``).
    func pullFeed(records: Int, catalogue: PullFeedServer.Catalogue = .products, context: Context) throws -> PullFeedServer {
        let key = "\(catalogue)-\(records)"
        if let built = pullFeeds.withLock({ $0[key] }) { return built }
        let what = catalogue == .products ? "products" : "records of \(BusinessFeed.types.count) types"
        context.progress("creating \(records) \(what) on the loopback test server (memory store) and reading its feed")
        var built: PullFeedServer?
        let nanoseconds = try Stopwatch.time {
            built = try PullFeedServer(records: records, catalogue: catalogue, directory: try context.freshDirectory("pull-feed-\(key)"))
        }
        guard let built else { throw BenchmarkFailure(description: "the feed of \(records) records was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s: \(built.pages) pages, "
            + "\(TextReport.format(Double(built.pageBytes) / 1_048_576)) MiB of them")
        pullFeeds.withLock { $0[key] = built }
        return built
    }

    /// A journal, a SQLite client and a raw floor that each pulled the feed of `records`
    /// products (see ``PullBase``).
    func pullBase(records: Int, context: Context) async throws -> PullBase {
        if let built = pullBases.withLock({ $0[records] }) { return built }
        let feed = try pullFeed(records: records, context: context)
        context.progress("pulling the feed of \(records) products into a journal, a SQLite database and the floor")
        var built: PullBase?
        let nanoseconds = try await Stopwatch.time { built = try await PullBase(feed: feed, directory: try context.freshDirectory("pull-base-\(records)")) }
        guard let built else { throw BenchmarkFailure(description: "the base of \(records) records was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s")
        pullBases.withLock { $0[records] = built }
        return built
    }

    /// Scenario 14.3's server and pulled journal with pending edits (see ``PullResnapshot``).
    func pullResnapshot(records: Int, context: Context) async throws -> PullResnapshot {
        if let built = pullResnapshots.withLock({ $0[records] }) { return built }
        context.progress("creating \(records) products on a loopback test server of 14.3's own, pulling them into a journal, "
            + "\(PullResnapshot.pendingEdits) edits left pending, the feed forgotten past the journal's cursor")
        var built: PullResnapshot?
        let nanoseconds = try await Stopwatch.time {
            built = try await PullResnapshot(records: records, pending: PullResnapshot.pendingEdits,
                                             directory: try context.freshDirectory("pull-resnapshot-\(records)"))
        }
        guard let built else { throw BenchmarkFailure(description: "the resnapshot's fixture of \(records) records was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s")
        pullResnapshots.withLock { $0[records] = built }
        return built
    }

    /// The PostgreSQL test server of scenario 14.4, its feed holding `backlog` creates before
    /// the first repeat (see ``PostgresFeedServer``).
    func postgresFeed(cluster: TemporaryPostgresCluster, backlog: Int, context: Context) throws -> PostgresFeedServer {
        if let built = postgresFeeds.withLock({ $0 }) { return built }
        context.progress("creating \(backlog) products on the test server on PostgreSQL")
        var built: PostgresFeedServer?
        let nanoseconds = try Stopwatch.time { built = try PostgresFeedServer(cluster: cluster, backlog: backlog) }
        guard let built else { throw BenchmarkFailure(description: "the PostgreSQL feed was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s")
        postgresFeeds.withLock { $0 = built }
        return built
    }

    /// Stops the servers the fixtures started.
    func stopServers() {
        for feed in pullFeeds.withLock({ Array($0.values) }) { feed.server.stop() }
        for fixture in pullResnapshots.withLock({ Array($0.values) }) { fixture.feed.server.stop() }
        postgresFeeds.withLock { $0?.stop() }
        swiftStore.withLock { $0?.store.stop() }
    }

    /// The run's throwaway OpenStack Swift store (one replica, on the run's disk) with its
    /// TempURL key set and one container for the attachment scenarios' objects.
    func swiftStore(context: Context) throws -> AttachmentUploads.Store {
        try swiftStore.withLock { held in
            if let held { return held }
            context.progress("starting a throwaway OpenStack Swift store (one replica)")
            let store = try TemporarySwiftStore.start()
            let key = "outbox-bench-temp-url-key"
            try store.setTempURLKey(key)
            let container = "attachments-bench"
            try store.createContainer(container)
            context.progress("started in \(store.startDuration)")
            let started = AttachmentUploads.Store(store: store, container: container, tempURLKey: key)
            held = started
            return started
        }
    }
}
