import Foundation
import Outbox
import OutboxAudit
import OutboxWire

/// Scenarios 14.1 and 14.2: the pull's initial sync of a catalogue of 100,000 products, and one
/// page of 500 changes applied over it, beside a SQLite client applying the same pages and the
/// raw LMDB commits of the same rows.
extension Scenario {
    static let pullInitialSync = Scenario(
        id: "14.1",
        name: "pull-initial-sync",
        title: "Pull: initial sync of 100,000 records in pages of 500, one commit each: the apply path alone, then over loopback",
        metrics: [
            .time("apply", "apply path: decode and apply every page", .seconds),
            .size("apply-anon", "apply path: RssAnon growth, peak", .mebibytes),
            .time("decode", "apply path: of which decoding the pages", .seconds),
            .time("slowest-page", "apply path: slowest page", .milliseconds),
            .time("sync", "over loopback: the whole sync", .seconds),
            .size("sync-anon", "over loopback: RssAnon growth, peak", .mebibytes),
        ],
        contenders: .pull,
        limit: { result in
            "every page is decoded from the server's bytes (`FeedPage.decoded`, the same for all three) and committed durably: "
                + "\(TextReport.format(result.floor("decode"))) s of decoding, and \(TextReport.format(result.floor("apply"))) s "
                + "for the floor's decode and raw puts of the same rows (one database, one flushed commit a page, nothing read or checked). "
                + "The SQLite client checks each page's digest, upserts each change `WHERE excluded.revision > revision` and its cursor row in "
                + "one transaction (WAL, synchronous=FULL). Each contender runs in a fresh child process; over loopback the pages come "
                + "from the in-process test server (memory store) of the parent, in pages of 500"
        },
        targets: [
            .oursBelow(5, "s", "sync", "initial sync of 100,000 records over loopback in under 5 s"),
            .oursBelow(64, "MiB", "sync-anon", "the same, RssAnon growth under 64 MiB"),
            .oursBelow(5, "s", "apply", "the apply path alone in under 5 s"),
            .oursBelow(64, "MiB", "apply-anon", "the apply path alone, RssAnon growth under 64 MiB"),
            .notSlowerThanSQLite("apply", "at least 1x a SQLite client applying the same pages, one transaction each (apply path)"),
            .notSlowerThanSQLite("sync", "at least 1x the SQLite client over loopback"),
        ],
        run: { context in
            let feed = try context.fixtures.pullFeed(records: context.sizes.pullRecords, context: context)
            func child(_ kind: Probe.Kind) throws -> PullProbe.Measurement { try feed.measure(kind) }
            // For profiles (`OUTBOX_BENCH_OURS_ONLY`), the engine's two children alone.
            let others = !Scenario.oursOnly
            let floor = others ? try child(.pullFloor) : nil
            let ours = try child(.pullEngine)
            let sqlite = others ? try child(.pullSQLite) : nil
            let oursSync = try child(.pullEngineHTTP)
            let sqliteSync = others ? try child(.pullSQLiteHTTP) : nil
            let mebibytes = PullProbe.mebibytes
            return [
                "apply": Trio(ours: ours.seconds, sqlite: sqlite?.seconds, floor: floor?.seconds),
                "apply-anon": Trio(ours: mebibytes(ours.anonymousPeakKiB), sqlite: mebibytes(sqlite?.anonymousPeakKiB),
                                   floor: mebibytes(floor?.anonymousPeakKiB)),
                "decode": Trio(ours: ours.decodeSeconds, sqlite: sqlite?.decodeSeconds, floor: floor?.decodeSeconds),
                "slowest-page": Trio(ours: ours.slowestPageMilliseconds, sqlite: sqlite?.slowestPageMilliseconds,
                                     floor: floor?.slowestPageMilliseconds),
                "sync": Trio(ours: oursSync.seconds, sqlite: sqliteSync?.seconds),
                "sync-anon": Trio(ours: mebibytes(oursSync.anonymousPeakKiB), sqlite: mebibytes(sqliteSync?.anonymousPeakKiB)),
            ]
        }
    )

    static let pullPageApplied = Scenario(
        id: "14.2",
        name: "pull-page-applied",
        title: "Pull: a page of 500 changes (300 edits, 150 new records, 50 deletes) applied over 100,000 pulled records",
        metrics: [
            .time("p50", "a page decoded and applied, median", .milliseconds),
            .time("p95", "the same, p95", .milliseconds),
            .time("per-change", "per change, median"),
        ],
        contenders: .pull,
        limit: { result in
            "one durable commit of 500 rows: the floor decodes the page and puts each change's row and the cursor's into one "
                + "database holding the 100,000 records, \(TextReport.format(result.floor("p50"))) ms. Ours also checks the page "
                + "(count, digest), reads each record's base to keep only newer revisions, writes the `pageApplied` event with each "
                + "change's revision and value hash, and the feed's row. The SQLite client checks the digest and upserts "
                + "`WHERE excluded.revision > revision`, one transaction (WAL, synchronous=FULL)"
        },
        targets: [
            .oursBelow(20, "ms", "p50", "a page of 500 changes applied in under 20 ms (median)"),
            .oursBelow(20, "ms", "p95", "the same at p95"),
        ],
        run: { context in
            let base = try await context.fixtures.pullBase(records: context.sizes.pullRecords, context: context)
            let outbox = try Workload.openOutbox(base.journal)
            defer { outbox.close() }
            let sqlite = try SQLitePull(directory: base.sqlite)
            let floor = try PullFloor(directory: base.floor)
            var ours: [Double] = []
            var theirs: [Double] = []
            var raw: [Double] = []
            for index in 0..<context.sizes.pullPagesTimed {
                let (body, from) = base.nextPage()
                // Each contender first in turn, so that what else the machine does falls on all three.
                // For profiles (`OUTBOX_BENCH_OURS_ONLY`), the engine alone.
                for turn in 0..<(Scenario.oursOnly ? 1 : 3) {
                    switch Scenario.oursOnly ? 0 : (index + turn) % 3 {
                    case 0:
                        var outcome: PageOutcome?
                        ours.append(try await Stopwatch.time {
                            outcome = try await outbox.apply(try FeedPage.decoded(from: body), requested: from, limit: PullFeed.pageSize)
                        })
                        guard case .applied(let applied) = outcome, applied.confirmations.count == PullFeed.pageSize else {
                            throw BenchmarkFailure(description: "the engine did not apply the page from \(from): \(String(describing: outcome))")
                        }
                    case 1:
                        theirs.append(try Stopwatch.time { try sqlite.apply(try FeedPage.decoded(from: body), requested: from) })
                    default:
                        raw.append(try Stopwatch.time { try floor.apply(try FeedPage.decoded(from: body)) })
                    }
                }
                base.applied(try FeedPage.decoded(from: body))
            }
            let live = base.liveRecords
            let oursLive = try PullCheck.liveRecords(outbox)
            let theirsLive = Scenario.oursOnly ? live : try sqlite.liveRecords()
            guard oursLive == live, theirsLive == live else {
                throw BenchmarkFailure(description: "after the pages the engine holds \(oursLive) live records, the SQLite client \(theirsLive); the feed \(live)")
            }
            func stats(_ samples: [Double]) -> Statistics? { samples.isEmpty ? nil : Statistics(samples) }
            let (o, s, f) = (Statistics(ours), stats(theirs), stats(raw))
            let changes = Double(PullFeed.pageSize)
            return [
                "p50": Trio(ours: o.median / 1e6, sqlite: s.map { $0.median / 1e6 }, floor: f.map { $0.median / 1e6 }),
                "p95": Trio(ours: o.percentile(95) / 1e6, sqlite: s.map { $0.percentile(95) / 1e6 }, floor: f.map { $0.percentile(95) / 1e6 }),
                "per-change": Trio(ours: o.median / 1e3 / changes, sqlite: s.map { $0.median / 1e3 / changes },
                                   floor: f.map { $0.median / 1e3 / changes }),
            ]
        }
    )
}

extension Contenders {
    /// The pull's: the engine, the SQLite client of ``SQLitePull`` and the raw LMDB floor.
    static let pull = Contenders(ours: "ours", sqlite: "SQLite client", floor: "floor", versusSQLite: "vs SQLite", versusFloor: "vs floor")
}

extension Target {
    /// Ours at `key` (its median) under `limit`, in `unit`.
    static func oursBelow(_ limit: Double, _ unit: String, _ key: String, _ text: String) -> Target {
        Target(text: text) { result in result.ours(key).map { ("\(TextReport.format($0)) \(unit)", $0 < limit) } }
    }

    /// Ours at least as good as the SQLite client at `key` (the median of the ratios).
    static func notSlowerThanSQLite(_ key: String, _ text: String) -> Target {
        Target(text: text) { result in result[key]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 1) } }
    }
}
