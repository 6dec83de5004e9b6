import Foundation
import Outbox
import OutboxAudit
import OutboxStorage
import OutboxWire
import Synchronization

/// Scenario 14.1's initial sync, measured in a fresh child process (`outbox-bench --probe
/// pull-engine <dir>`, ...), so that its anonymous memory (`RssAnon`: heap and stacks, not the
/// pages of a mapped file) is the sync's alone: nothing an earlier scenario freed is there to be
/// used again.
///
/// The directory holds `feed.json` (``Feed``: what the feed holds, and the server's address) and
/// `pages.bin` (the feed's pages as the server answered them, ``PullFeed/framed(_:)``); the
/// child writes its journal or database under it. It measures from a store already open to the
/// feed's end, samples `RssAnon` every 5 ms meanwhile, checks what it stored, and prints one
/// ``Measurement`` as a JSON line.
enum PullProbe {
    enum Mode {
        /// Each page of `pages.bin` decoded (`FeedPage.decoded(from:)`) and applied, one commit each.
        case engine, sqlite, floor
        /// The feed pulled from the server over loopback: the engine's `pullFeed`, or the SQLite
        /// client's loop of the same requests.
        case engineHTTP, sqliteHTTP
        /// Scenario 14.3: the journal of ``PullResnapshot`` copied, then pulled over loopback
        /// while its writes meet no signal: the base is fetched again whole beside its pending edits.
        case resnapshot
        /// Scenario 14.6: pulled over loopback while the member saves and a screen reads
        /// (``WorkingProbe``), by the engine and by the SQLite client.
        case engineWorking, sqliteWorking

        init?(_ kind: Probe.Kind) {
            switch kind {
            case .pullEngine: self = .engine
            case .pullSQLite: self = .sqlite
            case .pullFloor: self = .floor
            case .pullEngineHTTP: self = .engineHTTP
            case .pullSQLiteHTTP: self = .sqliteHTTP
            case .pullResnapshot: self = .resnapshot
            case .pullEngineWorking: self = .engineWorking
            case .pullSQLiteWorking: self = .sqliteWorking
            case .engine, .sqlite, .floor, .attachmentUpload, .pullResnapshotLive: return nil
            }
        }
    }

    /// What the parent tells the child of the feed.
    struct Feed: Codable, Sendable {
        /// Live records at the feed's end, and its last page's cursor.
        var records: Int
        var cursor: String
        /// The loopback server's base URL.
        var url: String
        /// Live records of each type, when the feed holds more types than products (scenario 14.5).
        var types: [String: Int]?
    }

    struct Measurement: Codable, Sendable {
        var seconds: Double
        /// Of which decoding the pages' bodies (apply modes only; 0 over HTTP, where the pull
        /// decodes inside its own loop).
        var decodeSeconds: Double
        var pages: Int
        /// How far `RssAnon` rose above its value before the first page, at its highest and at
        /// the end, in KiB.
        var anonymousPeakKiB: Double
        var anonymousEndKiB: Double
        /// The slowest page's decode and apply, in ms (apply modes only).
        var slowestPageMilliseconds: Double
        /// The store's bytes on disk once every page is in, the store still open: the engine's
        /// and the floor's `data.mdb`, the SQLite client's database and write-ahead log.
        var storeBytes: Int?
        /// Of the engine's: its events' records, and the pages in use (the rest of the file is
        /// pages LMDB freed and keeps for reuse), in bytes.
        var eventBytes: Int?
        var liveBytes: Int?
    }

    /// A measurement's KiB in MiB.
    static func mebibytes(_ kibibytes: Double?) -> Double? { kibibytes.map { $0 / 1024 } }

    static func run(_ mode: Mode, directory: URL) -> Int32 {
        switch mode {
        case .engineWorking, .sqliteWorking: child("pull probe \(mode)") { try await WorkingProbe.measure(mode, directory: directory) }
        default: child("pull probe \(mode)") { try await measure(mode, directory: directory) }
        }
    }

    /// Runs `body` on a task of its own, prints what it measured as one JSON line, answers the
    /// exit status; a failure is written to standard error after `label`. Each pull child's body.
    static func child<M: Encodable & Sendable>(_ label: String, _ body: @escaping @Sendable () async throws -> M) -> Int32 {
        let outcome = Mutex<Result<M, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            let result: Result<M, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        finished.wait()
        do {
            let measurement = try outcome.withLock { $0! }.get()
            print(String(decoding: try JSONEncoder().encode(measurement), as: UTF8.self))
            return 0
        } catch {
            FileHandle.standardError.write(Data("\(label): \(error)\n".utf8))
            return 1
        }
    }

    private static func measure(_ mode: Mode, directory: URL) async throws -> Measurement {
        let feed = try JSONDecoder().decode(Feed.self, from: Data(contentsOf: directory.appendingPathComponent("feed.json")))
        let store = directory.appendingPathComponent("store-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: store) }
        switch mode {
        case .engineWorking, .sqliteWorking:
            preconditionFailure("a working pull is measured by WorkingProbe")
        case .engine:
            let outbox = try Workload.openOutbox(store)
            defer { outbox.close() }
            var cursor: FeedPosition?
            var measurement = try await applying(directory: directory) { page in
                switch try await outbox.apply(page, requested: cursor, limit: PullFeed.pageSize) {
                case .applied, .unchanged: cursor = page.cursor
                case let other: throw BenchmarkFailure(description: "the engine did not apply the page from \(page.from): \(other)")
                }
            }
            measurement.storeBytes = FileSize.of(store.appendingPathComponent("data.mdb"))
            try checkEngine(outbox, feed: feed)
            return measurement
        case .sqlite:
            let sqlite = try SQLitePull(directory: store)
            var cursor: FeedPosition?
            var measurement = try await applying(directory: directory) { page in cursor = try sqlite.apply(page, requested: cursor) }
            measurement.storeBytes = SQLitePull.fileBytes(store)
            try checkSQLite(sqlite, feed: feed)
            return measurement
        case .floor:
            let floor = try PullFloor(directory: store)
            var measurement = try await applying(directory: directory) { page in try floor.apply(page) }
            measurement.storeBytes = FileSize.of(store.appendingPathComponent("data.mdb"))
            guard try floor.rows() == feed.records + 1 else {
                throw BenchmarkFailure(description: "the floor holds \(try floor.rows()) rows, not \(feed.records) and the cursor")
            }
            return measurement
        case .engineHTTP:
            let outbox = try pulling(store, transport: URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 30))
            defer { outbox.close() }
            var (report, measurement) = try await pulled(outbox)
            guard report.stoppedBy == nil, report.reachedEnd, report.changesApplied == feed.records else {
                throw BenchmarkFailure(description: "the engine's pull over loopback: \(report)")
            }
            measurement.storeBytes = FileSize.of(store.appendingPathComponent("data.mdb"))
            let metrics = try outbox.metrics()
            measurement.eventBytes = metrics.journalEventBytes
            measurement.liveBytes = metrics.journalLiveBytes
            try checkEngine(outbox, feed: feed)
            return measurement
        case .resnapshot:
            try FileManager.default.copyItem(at: directory.appendingPathComponent("journal"), to: store)
            let outbox = try pulling(store, transport: WritesMeetNoSignal(inner: URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 30)))
            defer { outbox.close() }
            var (report, measurement) = try await pulled(outbox)
            guard report.stoppedBy == nil, report.reachedEnd, report.resnapshots == 1, report.recordsStaged == feed.records + 1 else {
                throw BenchmarkFailure(description: "the engine's resnapshot over loopback: \(report)")
            }
            measurement.pages = report.pagesStaged
            try checkResnapshot(outbox, feed: feed)
            return measurement
        case .sqliteHTTP:
            let transport = URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 30)
            let sqlite = try SQLitePull(directory: store)
            var pages = 0
            var measurement = try await sampled(pages: 1) { _ in
                pages = try await pullSQLite(sqlite, over: transport)
                return nil
            }
            measurement.pages = pages
            measurement.storeBytes = SQLitePull.fileBytes(store)
            try checkSQLite(sqlite, feed: feed)
            return measurement
        }
    }

    /// The SQLite client's pull over `transport`: the feed's pages asked one after another from its
    /// start to its end, each applied in one transaction. Answers the pages applied.
    static func pullSQLite(_ sqlite: SQLitePull, over transport: any OutboxTransport) async throws -> Int {
        var cursor: FeedPosition?
        var pages = 0
        while true {
            let query = "?limit=\(PullFeed.pageSize)" + (cursor.map { "&cursor=\($0.text)" } ?? "")
            let response = try await transport.send(TransportRequest(
                method: "GET", endpoint: FeedPage.path + query, headers: [WireHeader.businessID: Workload.businessID], body: Data()))
            guard response.statusCode == 200 else { throw BenchmarkFailure(description: "the feed answered \(response.statusCode)") }
            let page = try FeedPage.decoded(from: response.body)
            if page.changes.isEmpty, page.cursor == cursor { break }
            cursor = try sqlite.apply(page, requested: cursor)
            pages += 1
            if !page.hasMore { break }
        }
        return pages
    }

    /// The engine opened on `store` to pull the feed's business over `transport`, in the feed's
    /// pages, to its end in one pass.
    static func pulling(_ store: URL, transport: any OutboxTransport, policies: [String: OperationTypePolicy] = [:]) throws -> Outbox {
        var configuration = Workload.configuration(durability: .full, lanes: 1)
        configuration.operationPolicies.merge(policies) { _, added in added }
        configuration.pull = PullConfiguration(pageSize: PullFeed.pageSize, businesses: [Workload.businessID], maxPagesPerPass: 100_000,
                                               summaryIntervalSeconds: nil)
        return try Outbox(directory: store, transport: transport, configuration: configuration)
    }

    /// One `pull()` timed, `RssAnon` sampled meanwhile: its report (pages applied in the
    /// measurement) and the measurement.
    private static func pulled(_ outbox: Outbox) async throws -> (Outbox.FeedReport, Measurement) {
        var report: Outbox.FeedReport?
        var measurement = try await sampled(pages: 1) { _ in
            report = try await outbox.pull().feed(Workload.businessID)
            return nil
        }
        guard let report else { throw BenchmarkFailure(description: "the pull did not pull \(Workload.businessID)") }
        measurement.pages = report.pagesApplied
        return (report, measurement)
    }

    /// Times each page of `directory/pages.bin` decoded and handed to `apply`, the decoding timed
    /// apart too.
    private static func applying(directory: URL, _ apply: (FeedPage) async throws -> Void) async throws -> Measurement {
        let pages = try PullFeed.pages(in: directory.appendingPathComponent("pages.bin"))
        return try await sampled(pages: pages.count) { index in
            let page = try FeedPage.decoded(from: pages[index])
            let decodedAt = Stopwatch.now()
            try await apply(page)
            return decodedAt
        }
    }

    /// Times `pages` calls of `page` (each answers when it finished decoding, when it decodes)
    /// while a thread samples `RssAnon`.
    private static func sampled(pages: Int, _ page: (Int) async throws -> UInt64?) async throws -> Measurement {
        let baseline = Double(Probe.status("RssAnon") ?? 0)
        let sampler = AnonymousMemorySampler()
        Thread { sampler.sample() }.start()
        var decoding: UInt64 = 0
        var slowest: UInt64 = 0
        let start = Stopwatch.now()
        for index in 0..<pages {
            let pageStart = Stopwatch.now()
            if let decodedAt = try await page(index) { decoding += decodedAt - pageStart }
            slowest = max(slowest, Stopwatch.now() - pageStart)
        }
        let elapsed = Stopwatch.now() - start
        let peak = sampler.stop()
        let end = Double(Probe.status("RssAnon") ?? 0)
        return Measurement(seconds: Double(elapsed) / 1e9, decodeSeconds: Double(decoding) / 1e9, pages: pages,
                           anonymousPeakKiB: max(0, max(peak, end) - baseline),
                           anonymousEndKiB: max(0, end - baseline), slowestPageMilliseconds: Double(slowest) / 1e6)
    }

    /// The engine's journal holds every record of the feed as its base and the last page's cursor.
    static func checkEngine(_ outbox: Outbox, feed: Feed) throws {
        let expected = feed.types ?? [Workload.productType: feed.records]
        var live: [String: Int] = [:]
        for type in expected.keys { live[type] = try PullCheck.liveRecords(outbox, type: type) }
        let cursor = try outbox.feedCursor(business: Workload.businessID)
        guard live == expected, cursor?.text == feed.cursor else {
            throw BenchmarkFailure(description: "the engine holds \(live) records at cursor \(cursor?.text ?? "none"); the feed \(expected) at \(feed.cursor)")
        }
    }

    /// After the resnapshot: every record of the snapshot in the base, the cursor past the old
    /// feed's end, and every pending edit still pending and shown over the new base.
    private static func checkResnapshot(_ outbox: Outbox, feed: Feed) throws {
        let live = try PullCheck.liveRecords(outbox)
        let cursor = try outbox.feedCursor(business: Workload.businessID)
        guard live == feed.records + 1, let cursor, cursor > (try FeedPosition(text: feed.cursor)) else {
            throw BenchmarkFailure(description: "after the resnapshot the engine holds \(live) records at cursor \(cursor?.text ?? "none")")
        }
        let edited = PullResnapshot.editedProducts(records: feed.records, pending: PullResnapshot.pendingEdits)
        for number in edited {
            let record = try outbox.record(Workload.productKey(number))
            guard let record, record.value == Workload.productValue(number, edit: 1), record.sync.pending.count == 1, record.server?.value != nil else {
                throw BenchmarkFailure(description: "product \(number)'s pending edit is not shown over the new base: \(String(describing: record))")
            }
        }
        guard try outbox.badgeCount() == edited.count else {
            throw BenchmarkFailure(description: "\(try outbox.badgeCount()) writes pending after the resnapshot, not \(edited.count)")
        }
    }

    static func checkSQLite(_ sqlite: SQLitePull, feed: Feed) throws {
        let live = try sqlite.liveRecords()
        let cursor = try sqlite.cursor()
        guard live == feed.records, cursor?.text == feed.cursor else {
            throw BenchmarkFailure(description: "the SQLite client holds \(live) records at cursor \(cursor?.text ?? "none"); the feed \(feed.records) at \(feed.cursor)")
        }
    }
}

/// The highest `RssAnon` seen, read every 5 ms on a thread of its own until stopped (reading
/// `/proc/self/status` that often costs the process about 1% of a core).
final class AnonymousMemorySampler: Sendable {
    private let peak = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    func sample() {
        while !stopped.load(ordering: .relaxed) {
            if let now = Probe.status("RssAnon") { _ = peak.max(now, ordering: .relaxed) }
            usleep(5_000)
        }
        done.signal()
    }

    /// Stops the sampling thread and answers the highest value it read, in KiB.
    func stop() -> Double {
        stopped.store(true, ordering: .relaxed)
        done.wait()
        return Double(peak.load(ordering: .relaxed))
    }
}

/// What the pull scenarios check of a journal through the engine's own reads.
enum PullCheck {
    /// The business's live records of `type`, read through `records(_:)` a page of 1,000 at a time.
    static func liveRecords(_ outbox: Outbox, type: String = Workload.productType) throws -> Int {
        var query = RecordQuery(business: Workload.businessID, type: type, limit: 1000)
        var count = 0
        repeat {
            let page = try outbox.records(query)
            count += page.records.filter { $0.server != nil && $0.value != nil }.count
            query.after = page.nextAfter
        } while query.after != nil
        return count
    }
}
