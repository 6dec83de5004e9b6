import Foundation
import Outbox
import OutboxAudit

/// Scenario 14.5: 14.1's initial sync over loopback at the size of a whole business: 1,000,000
/// records of three types (``BusinessFeed``), beside the SQLite client pulling the same feed, the
/// floor's raw commits of the same pages, and what each leaves on disk.
extension Scenario {
    static let pullBusinessSync = Scenario(
        id: "14.5",
        name: "pull-million",
        title: "Pull: initial sync of 1,000,000 records of 3 types over loopback, in pages of 500, and the bytes it leaves on disk",
        metrics: [
            .time("sync", "over loopback: the whole sync", .seconds),
            .size("sync-anon", "over loopback: RssAnon growth, peak", .mebibytes),
            .time("apply", "apply path (no HTTP): every page decoded and applied", .seconds),
            .time("decode", "apply path: of which decoding the pages", .seconds),
            .size("disk", "bytes on disk per record after the sync"),
            .size("live", "of which pages in use (not freed), per record"),
            .size("events", "of which the journal's events, per record"),
            .size("served", "the record's own bytes as served, per record"),
        ],
        contenders: .pull,
        limit: { result in
            "the floor decodes the same pages from a file and puts each change's row and the cursor into one LMDB database, one "
                + "flushed commit a page, nothing read or checked: \(TextReport.format(result.floor("sync"))) s, "
                + "\(TextReport.format(result.floor("disk"))) B a record on disk. Over loopback the pages come from the "
                + "in-process test server (memory store) of the parent, on the same two cores; the SQLite client checks each page "
                + "and upserts its changes with its cursor in one transaction (WAL, synchronous=FULL); its bytes on disk are its "
                + "database and its write-ahead log, the engine's and the floor's their `data.mdb`. Each contender runs in a fresh "
                + "child process, `RssAnon` sampled every 5 ms"
        },
        targets: [
            .oursBelow(30, "s", "sync", "initial sync of 1,000,000 records over loopback in under 30 s"),
            .oursBelow(64, "MiB", "sync-anon", "the same, RssAnon growth under 64 MiB"),
            .notSlowerThanSQLite("sync", "at least 1x the SQLite client over loopback"),
        ],
        // A repeat is a million records pulled four times over: no repeat is thrown away.
        warmUp: false,
        run: { context in
            let feed = try context.fixtures.pullFeed(records: context.sizes.businessRecords, catalogue: .business, context: context)
            func child(_ kind: Probe.Kind) throws -> PullProbe.Measurement {
                context.progress("\(kind.rawValue): \(feed.records) records")
                return try feed.measure(kind)
            }
            // For profiles (`OUTBOX_BENCH_OURS_ONLY`), the engine's pull over loopback alone.
            let others = !Scenario.oursOnly
            let floor = others ? try child(.pullFloor) : nil
            let oursApply = others ? try child(.pullEngine) : nil
            let ours = try child(.pullEngineHTTP)
            let sqlite = others ? try child(.pullSQLiteHTTP) : nil
            let mebibytes = PullProbe.mebibytes
            func perRecord(_ bytes: Int?) -> Double? { bytes.map { Double($0) / Double(feed.records) } }
            return [
                "sync": Trio(ours: ours.seconds, sqlite: sqlite?.seconds, floor: floor?.seconds),
                "sync-anon": Trio(ours: mebibytes(ours.anonymousPeakKiB), sqlite: mebibytes(sqlite?.anonymousPeakKiB)),
                "apply": Trio(ours: oursApply?.seconds, floor: floor?.seconds),
                "decode": Trio(ours: oursApply?.decodeSeconds, floor: floor?.decodeSeconds),
                "disk": Trio(ours: perRecord(ours.storeBytes), sqlite: perRecord(sqlite?.storeBytes), floor: perRecord(floor?.storeBytes)),
                "live": Trio(ours: perRecord(ours.liveBytes)),
                "events": Trio(ours: perRecord(ours.eventBytes)),
                "served": Trio(floor: perRecord(feed.recordBytes)),
            ]
        }
    )
}
