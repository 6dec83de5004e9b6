import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// Scenario 14.6: 14.5's initial sync of a whole business while the member keeps working: a
/// producer saves a write with its record change ten times a second, and a screen reads one
/// record and the first page of 100 products through one observation. Each save and each read is
/// timed during the sync and then, as many saves again (at most a minute of them), on the same
/// engine once the sync is over; beside it the SQLite client doing the same work during its own pull.
extension Scenario {
    static let pullWhileWorking = Scenario(
        id: "14.6",
        name: "pull-million-working",
        title: "Pull: the member saves 10 writes a second and a screen reads while 1,000,000 records arrive over loopback",
        metrics: [
            .time("sync", "the sync while the member works", .seconds),
            .count("saves", "saves during the sync", higherIsBetter: true),
            .time("save-p50", "save during the sync, p50"),
            .time("save-p99", "save during the sync, p99"),
            .time("save-idle-p50", "save once the sync is over, p50"),
            .time("save-idle-p99", "save once the sync is over, p99"),
            .count("save-x-p50", "save: during / over, p50 (x)", higherIsBetter: false),
            .count("save-x-p99", "save: during / over, p99 (x)", higherIsBetter: false),
            .count("reads", "screen reads during the sync", higherIsBetter: true),
            .time("read-p50", "screen read during the sync, p50"),
            .time("read-p99", "screen read during the sync, p99"),
            .time("read-idle-p50", "screen read once the sync is over, p50"),
            .time("read-idle-p99", "screen read once the sync is over, p99"),
            .count("read-x-p50", "read: during / over, p50 (x)", higherIsBetter: false),
            .count("read-x-p99", "read: during / over, p99 (x)", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "ours", sqlite: "SQLite client", floor: "-", versusSQLite: "vs SQLite", versusFloor: "-"),
        limit: { result in
            "the same saves and reads on the same journal once the sync is over (ours: save p50 "
                + "\(TextReport.format(result.ours("save-idle-p50"))) µs, read p50 \(TextReport.format(result.ours("read-idle-p50"))) µs): "
                + "a save can wait behind the one page commit in hand, a read behind nothing (an LMDB read transaction). The save is the durable enqueue of a product's price edit with its "
                + "record change (as 13.1), replacing the record's edit not yet sent (coalescing); its send meets no signal, so every contender pulls the same feed; the engine's pull gives way "
                + "after the page in hand to each write that becomes due and goes on in the next pass. The screen is one "
                + "`OutboxObservation` reading the record and the page, timed inside its read, run again by each commit that "
                + "meets it. The SQLite client saves the write's row and the member's value in one transaction and reads the row "
                + "and the page (each with the member's value) on connections of their own, after each save"
        },
        targets: [
            .oursAtMost(2, "save-x-p50", "a save during the sync at most 2x the same save once it is over (p50)"),
            .oursAtMost(2, "save-x-p99", "the same, p99"),
            .oursAtMost(2, "read-x-p50", "a screen read during the sync at most 2x the same read once it is over (p50)"),
            .oursAtMost(2, "read-x-p99", "the same, p99"),
        ],
        // A repeat pulls a million records twice, with a minute of saves after each: none is thrown away.
        warmUp: false,
        run: { context in
            let feed = try context.fixtures.pullFeed(records: context.sizes.businessRecords, catalogue: .business, context: context)
            func child(_ kind: Probe.Kind) throws -> WorkingProbe.Measurement {
                context.progress("\(kind.rawValue): \(feed.records) records")
                let measured = try Probe.measure(kind, path: feed.directory, as: WorkingProbe.Measurement.self)
                context.progress("\(kind.rawValue): \(TextReport.format(measured.seconds)) s, \(measured.pages) pages in \(measured.pulls) "
                                 + "pull(s), \(measured.saves.count) saves and \(measured.reads.count) reads during the sync, "
                                 + "\(measured.idleSaves.count) and \(measured.idleReads.count) after")
                return measured
            }
            let ours = try child(.pullEngineWorking)
            let sqlite = Scenario.oursOnly ? nil : try child(.pullSQLiteWorking)
            func figure(_ pick: (WorkingProbe.Measurement) -> Double?) -> Trio {
                Trio(ours: pick(ours), sqlite: sqlite.flatMap(pick))
            }
            return [
                "sync": figure { $0.seconds },
                "saves": figure { Double($0.saves.count) },
                "save-p50": figure { Latencies(nanoseconds: $0.saves).p50 },
                "save-p99": figure { Latencies(nanoseconds: $0.saves).p99 },
                "save-idle-p50": figure { Latencies(nanoseconds: $0.idleSaves).p50 },
                "save-idle-p99": figure { Latencies(nanoseconds: $0.idleSaves).p99 },
                "save-x-p50": figure { Latencies(nanoseconds: $0.saves).p50 / Latencies(nanoseconds: $0.idleSaves).p50 },
                "save-x-p99": figure { Latencies(nanoseconds: $0.saves).p99 / Latencies(nanoseconds: $0.idleSaves).p99 },
                "reads": figure { Double($0.reads.count) },
                "read-p50": figure { Latencies(nanoseconds: $0.reads).p50 },
                "read-p99": figure { Latencies(nanoseconds: $0.reads).p99 },
                "read-idle-p50": figure { Latencies(nanoseconds: $0.idleReads).p50 },
                "read-idle-p99": figure { Latencies(nanoseconds: $0.idleReads).p99 },
                "read-x-p50": figure { Latencies(nanoseconds: $0.reads).p50 / Latencies(nanoseconds: $0.idleReads).p50 },
                "read-x-p99": figure { Latencies(nanoseconds: $0.reads).p99 / Latencies(nanoseconds: $0.idleReads).p99 },
            ]
        }
    )
}

extension Target {
    /// Ours at `key` (its median) at most `bound` (a ratio).
    static func oursAtMost(_ bound: Double, _ key: String, _ text: String) -> Target {
        Target(text: text) { result in result.ours(key).map { (TextReport.ratioText($0), $0 <= bound) } }
    }
}

/// Scenario 14.6's child (`outbox-bench --probe pull-engine-working <dir>`, `pull-sqlite-working`):
/// the feed of ``PullFeedServer`` pulled over loopback from a fresh store while the member works,
/// then the same work on the same store with no pull running.
///
/// The member edits the products a screen shows: during the sync, the first page of 100 products
/// (by id), each edit the next of them in turn; then, on the idle store, 100 products from the
/// middle of the feed (the page after the id before them), as many edits again (at most
/// ``idleSaves``), so that each phase's screen shows the edits of its own phase. Each edit is
/// ``Workload/markedValue(_:edit:)``: a page shows which edit it holds. An edit of a record
/// whose last edit was never sent replaces it (``editType``), as the SQLite client keeps one
/// edit row a record.
enum WorkingProbe {
    struct Measurement: Codable, Sendable {
        /// The sync, from the first page asked until the feed's end is reached.
        var seconds: Double
        /// The pages the pull applied (the engine's: those of its `pull()` calls; the worker's own
        /// passes between them apply the others).
        var pages: Int
        /// The engine's `pull()` calls until the end (each pass gives way to the writes due).
        var pulls: Int
        /// Each save's and each screen read's nanoseconds, during the sync and after it.
        var saves: [Double]
        var reads: [Double]
        var idleSaves: [Double]
        var idleReads: [Double]
    }

    /// The saves a second, on the real clock.
    static let savesPerSecond = 10
    /// The most saves once the sync is over (a minute of them).
    static let idleSaves = 600
    /// The member's edit of a product's price: an edit made again before the last was sent
    /// replaces it (coalescing), so a record's view holds one or two pending edits however often
    /// it is edited.
    static let editType = "product.price"
    static let pageSize = 100

    /// The numbers of the first 100 products at or after record `first`.
    static func products(from first: Int) -> [Int] {
        var numbers: [Int] = []
        var number = first
        while numbers.count < pageSize {
            if BusinessFeed.type(of: number) == Workload.productType { numbers.append(number) }
            number += 1
        }
        return numbers
    }

    /// The screen's query of the page of `products`.
    static func query(_ products: [Int]) -> RecordQuery {
        RecordQuery(business: Workload.businessID, type: Workload.productType,
                    after: products[0] == 0 ? nil : Workload.stableID(products[0] - 1), limit: pageSize)
    }

    /// Where the idle phase's products start: the middle of the feed.
    static func idleStart(records: Int) -> Int { records / 20 * 10 }

    static func measure(_ mode: PullProbe.Mode, directory: URL) async throws -> Measurement {
        let feed = try JSONDecoder().decode(PullProbe.Feed.self, from: Data(contentsOf: directory.appendingPathComponent("feed.json")))
        guard feed.types != nil, idleStart(records: feed.records) >= 250, products(from: idleStart(records: feed.records)).last! < feed.records else {
            throw BenchmarkFailure(description: "the working pull needs a business feed of at least 500 records, not \(feed.records)")
        }
        let store = directory.appendingPathComponent("store-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: store) }
        switch mode {
        case .engineWorking: return try await engine(feed: feed, store: store)
        case .sqliteWorking: return try await sqlite(feed: feed, store: store)
        default: preconditionFailure("\(mode) is not a working pull")
        }
    }

    /// A flag raised once, read from any thread.
    final class Flag: Sendable {
        private let raised = Atomic<Bool>(false)
        var isRaised: Bool { raised.load(ordering: .acquiring) }
        func raise() { raised.store(true, ordering: .releasing) }
    }

    // MARK: - The engine

    /// The engine's screen: one observation reading the record and the page, each read timed
    /// while `recording`; every view it yields checked, the newest kept.
    final class Screen: Sendable {
        struct View: Sendable, Equatable {
            var record: LocalRecord?
            var page: RecordQuery.Page
        }

        let key: RecordKey
        let query: RecordQuery
        private let recording = Atomic<Bool>(true)
        private let times = Mutex<[Double]>([])
        private let latest = Mutex<View?>(nil)
        private let wrong = Mutex<String?>(nil)
        private let watching = Mutex<Task<Void, Never>?>(nil)

        init(products: [Int]) {
            key = Workload.productKey(products[0])
            query = WorkingProbe.query(products)
        }

        /// Starts watching `outbox`: its first read runs now, on the caller.
        func watch(_ outbox: Outbox) {
            let stream = outbox.observe(OutboxObservation<View> { [self] outbox in
                let began = Stopwatch.now()
                let view = View(record: try outbox.record(key), page: try outbox.records(query))
                let took = Stopwatch.now() - began
                if recording.load(ordering: .relaxed) { times.withLock { $0.append(Double(took)) } }
                return view
            })
            let task = Task { [self] in
                for await view in stream {
                    if let problem = check(view) { wrong.withLock { $0 = $0 ?? problem } }
                    latest.withLock { $0 = view }
                }
            }
            watching.withLock { $0 = task }
        }

        /// What is wrong with a view: a page out of order, of another type or before its start, too
        /// long; a record of another key.
        private func check(_ view: View) -> String? {
            let ids = view.page.records.map(\.key.id)
            guard ids.count <= pageSize, zip(ids, ids.dropFirst()).allSatisfy({ $0 < $1 }),
                  ids.first.map({ $0 > (query.after ?? "") }) ?? true,
                  view.page.records.allSatisfy({ $0.key.type == Workload.productType && $0.key.business == Workload.businessID })
            else { return "the screen's page is wrong: \(ids.count) records, \(ids.prefix(3))..." }
            if let record = view.record, record.key != key { return "the screen's record is \(record.key), not \(key)" }
            return nil
        }

        /// Stops timing reads (the observation goes on).
        func stopTiming() -> [Double] {
            recording.store(false, ordering: .relaxed)
            return times.withLock { $0 }
        }

        /// Waits (up to 30 s) until the screen shows edit `edit` of product `number` and the whole
        /// page; then stops watching. Throws when it never does, or a view was wrong.
        func finish(showing number: Int, edit: Int) async throws {
            let expected = Workload.markedValue(number, edit: edit)
            let deadline = Stopwatch.now() + 30_000_000_000
            func shown() -> Bool {
                latest.withLock { view in
                    guard let view, view.page.records.count == pageSize else { return false }
                    return view.page.records.contains { $0.key == Workload.productKey(number) && $0.value == expected }
                }
            }
            while !shown(), Stopwatch.now() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            watching.withLock { $0?.cancel() }
            if let problem = wrong.withLock({ $0 }) { throw BenchmarkFailure(description: problem) }
            guard shown() else {
                throw BenchmarkFailure(description: "the screen never showed edit \(edit) of product \(number) on a page of \(pageSize)")
            }
        }
    }

    /// Saves ten a second on the real clock, each the next of `products` in turn with edit
    /// `firstEdit + index`, until `count` saves (or, with no count, until `stop` is raised);
    /// answers each save's nanoseconds.
    static func produce(_ products: [Int], firstEdit: Int, count: Int?, stop: Flag,
                        save: (_ number: Int, _ edit: Int) async throws -> Void) async throws -> [Double] {
        let clock = ContinuousClock()
        let start = clock.now
        var times: [Double] = []
        var index = 0
        while count.map({ index < $0 }) ?? true {
            try await clock.sleep(until: start + .milliseconds(1000 / savesPerSecond * index))
            if count == nil, stop.isRaised { break }
            let began = Stopwatch.now()
            try await save(products[index % products.count], firstEdit + index)
            times.append(Double(Stopwatch.now() - began))
            index += 1
        }
        return times
    }

    /// The edits `saves` saves made to `products` from `firstEdit`: each product's count and last edit.
    static func edits(_ products: [Int], firstEdit: Int, saves: Int) -> [(number: Int, count: Int, last: Int)] {
        products.indices.compactMap { offset in
            let count = saves > offset ? (saves - offset + products.count - 1) / products.count : 0
            guard count > 0 else { return nil }
            return (products[offset], count, firstEdit + offset + (count - 1) * products.count)
        }
    }

    private static func engine(feed: PullProbe.Feed, store: URL) async throws -> Measurement {
        // The writes' sends meet no signal: the server's feed stays the one every contender pulls.
        let outbox = try PullProbe.pulling(store, transport: WritesMeetNoSignal(inner: URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 30)),
                                           policies: [editType: .idempotent.coalescing()])
        defer { outbox.close() }
        let saved = Mutex<[OperationID]>([])
        @Sendable func save(_ number: Int, _ edit: Int) async throws {
            let id = try await outbox.enqueue(
                Workload.productUpdate(number, edit: edit, operationType: editType, payload: Workload.markedValue(number, edit: edit)),
                changing: [.put(Workload.productKey(number), Workload.markedValue(number, edit: edit))])
            saved.withLock { $0.append(id) }
        }

        // During the sync.
        let shown = products(from: 0)
        let screen = Screen(products: shown)
        let stop = Flag()
        screen.watch(outbox)
        let producer = Task.detached { try await produce(shown, firstEdit: 1, count: nil, stop: stop, save: save) }
        let start = Stopwatch.now()
        var pulls = 0
        var pages = 0
        var reachedEnd = false
        do {
            while !reachedEnd {
                guard let report = try await outbox.pull().feed(Workload.businessID) else {
                    throw BenchmarkFailure(description: "the pull did not pull \(Workload.businessID)")
                }
                pulls += 1
                pages += report.pagesApplied
                switch report.stoppedBy {
                case nil, .writesWaiting?: break
                case let other?: throw BenchmarkFailure(description: "the engine's pull while the member works stopped: \(other)")
                }
                reachedEnd = report.reachedEnd
            }
        } catch {
            stop.raise()
            _ = try? await producer.value
            throw error
        }
        let seconds = Double(Stopwatch.now() - start) / 1e9
        stop.raise()
        let saves = try await producer.value
        let reads = screen.stopTiming()
        guard !saves.isEmpty else { throw BenchmarkFailure(description: "no save during the sync") }
        try await screen.finish(showing: shown[(saves.count - 1) % shown.count], edit: saves.count)
        try PullProbe.checkEngine(outbox, feed: feed)
        try checkEngine(outbox, products: shown, firstEdit: 1, saves: saves.count)

        // The same work once the sync is over, as many saves (at most a minute of them).
        let idleShown = products(from: idleStart(records: feed.records))
        let idleScreen = Screen(products: idleShown)
        idleScreen.watch(outbox)
        let firstIdleEdit = saves.count + 1
        let idleCount = min(saves.count, Self.idleSaves)
        let idleSaves = try await produce(idleShown, firstEdit: firstIdleEdit, count: idleCount, stop: Flag(), save: save)
        let idleReads = idleScreen.stopTiming()
        try await idleScreen.finish(showing: idleShown[(idleCount - 1) % idleShown.count], edit: firstIdleEdit + idleCount - 1)
        try checkEngine(outbox, products: idleShown, firstEdit: firstIdleEdit, saves: idleCount)
        // Every save is in the journal: queued, or replaced by the next edit of its record.
        let ids = saved.withLock { $0 }
        guard ids.count == saves.count + idleCount, Set(ids).count == ids.count else {
            throw BenchmarkFailure(description: "\(ids.count) saves answered \(Set(ids).count) operations, not \(saves.count + idleCount)")
        }
        for id in ids where try outbox.operation(id) == nil {
            throw BenchmarkFailure(description: "the saved write \(id) is not in the journal")
        }
        return Measurement(seconds: seconds, pages: pages, pulls: pulls, saves: saves, reads: reads, idleSaves: idleSaves, idleReads: idleReads)
    }

    /// Each edited product shows its last edit over its server base, pending (one edit, or the
    /// one sent and the one that replaced those after it).
    private static func checkEngine(_ outbox: Outbox, products: [Int], firstEdit: Int, saves: Int) throws {
        for (number, count, last) in edits(products, firstEdit: firstEdit, saves: saves) {
            let record = try outbox.record(Workload.productKey(number))
            guard let record, record.value == Workload.markedValue(number, edit: last), (1...min(2, count)).contains(record.sync.pending.count),
                  record.server != nil
            else {
                throw BenchmarkFailure(description: "product \(number) does not show its \(count) saves (the last edit \(last)): "
                                       + "\(record.map { "\($0.sync.pending.count) pending, edit \(Workload.edit(of: $0.value) ?? -1)" } ?? "no record")")
            }
        }
    }

    // MARK: - The SQLite client

    /// The SQLite client's member on two threads of their own, each with its own connection: a
    /// producer saving ten a second, and a reader reading the record and the page after each save.
    private final class SQLiteWork: Sendable {
        let store: URL
        let products: [Int]
        let firstEdit: Int
        let count: Int?
        let stop: Flag
        let saves = Mutex<[Double]>([])
        let reads = Mutex<[Double]>([])
        let failure = Mutex<String?>(nil)
        private let saved = DispatchSemaphore(value: 0)
        private let producerDone = DispatchSemaphore(value: 0)
        private let readerDone = DispatchSemaphore(value: 0)
        private let produced = Flag()

        init(store: URL, products: [Int], firstEdit: Int, count: Int?, stop: Flag) {
            self.store = store
            self.products = products
            self.firstEdit = firstEdit
            self.count = count
            self.stop = stop
        }

        func start() {
            Thread { [self] in
                defer { produced.raise(); saved.signal(); producerDone.signal() }
                do {
                    let member = try SQLiteMember(directory: store)
                    let start = Stopwatch.now()
                    var index = 0
                    while count.map({ index < $0 }) ?? true {
                        let due = start + UInt64(index) * UInt64(1_000_000_000 / savesPerSecond)
                        let now = Stopwatch.now()
                        if due > now { usleep(UInt32((due - now) / 1000)) }
                        if count == nil, stop.isRaised { break }
                        let number = products[index % products.count]
                        let key = Workload.productKey(number)
                        let began = Stopwatch.now()
                        try member.save(key, endpoint: "/products/\(key.id)", value: Workload.markedValue(number, edit: firstEdit + index))
                        let took = Double(Stopwatch.now() - began)
                        saves.withLock { $0.append(took) }
                        saved.signal()
                        index += 1
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? "SQLite producer: \(error)" }
                }
            }.start()
            Thread { [self] in
                defer { readerDone.signal() }
                do {
                    let member = try SQLiteMember(directory: store)
                    let key = Workload.productKey(products[0])
                    let after = WorkingProbe.query(products).after ?? ""
                    while true {
                        saved.wait()
                        if produced.isRaised { break }
                        let began = Stopwatch.now()
                        _ = try member.record(key)
                        let page = try member.page(business: Workload.businessID, type: Workload.productType, after: after, limit: pageSize)
                        let took = Double(Stopwatch.now() - began)
                        reads.withLock { $0.append(took) }
                        let ids = page.map(\.id)
                        guard ids.count <= pageSize, zip(ids, ids.dropFirst()).allSatisfy({ $0 < $1 }), ids.first.map({ $0 > after }) ?? true else {
                            throw BenchmarkFailure(description: "the SQLite screen's page is wrong: \(ids.count) rows, \(ids.prefix(3))...")
                        }
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? "SQLite reader: \(error)" }
                }
            }.start()
        }

        /// Waits for both threads (raise `stop` first when there is no count).
        func wait() throws -> (saves: [Double], reads: [Double]) {
            producerDone.wait()
            readerDone.wait()
            if let failure = failure.withLock({ $0 }) { throw BenchmarkFailure(description: failure) }
            return (saves.withLock { $0 }, reads.withLock { $0 })
        }
    }

    private static func sqlite(feed: PullProbe.Feed, store: URL) async throws -> Measurement {
        let transport = URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 30)
        let sqlite = try SQLitePull(directory: store)
        // The member's tables, before either thread opens its connection.
        _ = try SQLiteMember(directory: store)

        let shown = products(from: 0)
        let stop = Flag()
        let work = SQLiteWork(store: store, products: shown, firstEdit: 1, count: nil, stop: stop)
        work.start()
        let start = Stopwatch.now()
        let pages: Int
        do {
            pages = try await PullProbe.pullSQLite(sqlite, over: transport)
        } catch {
            stop.raise()
            _ = try? work.wait()
            throw error
        }
        let seconds = Double(Stopwatch.now() - start) / 1e9
        stop.raise()
        let (saves, reads) = try work.wait()
        guard !saves.isEmpty else { throw BenchmarkFailure(description: "no SQLite save during the sync") }
        try PullProbe.checkSQLite(sqlite, feed: feed)

        let idleShown = products(from: idleStart(records: feed.records))
        let firstIdleEdit = saves.count + 1
        let idleCount = min(saves.count, Self.idleSaves)
        let idle = SQLiteWork(store: store, products: idleShown, firstEdit: firstIdleEdit, count: idleCount, stop: Flag())
        idle.start()
        let (idleSaves, idleReads) = try idle.wait()

        // Every save landed: a write row each, and each edited product shows its last edit.
        let member = try SQLiteMember(directory: store)
        guard try member.writes(business: Workload.businessID) == saves.count + idleCount else {
            throw BenchmarkFailure(description: "the SQLite client holds \(try member.writes(business: Workload.businessID)) writes, not \(saves.count + idleCount)")
        }
        for (products, firstEdit, count) in [(shown, 1, saves.count), (idleShown, firstIdleEdit, idleCount)] {
            for (number, _, last) in edits(products, firstEdit: firstEdit, saves: count) {
                guard try member.record(Workload.productKey(number)) == Workload.markedValue(number, edit: last) else {
                    throw BenchmarkFailure(description: "the SQLite client's product \(number) does not show its last edit \(last)")
                }
            }
        }
        return Measurement(seconds: seconds, pages: pages, pulls: 1, saves: saves, reads: reads, idleSaves: idleSaves, idleReads: idleReads)
    }
}
