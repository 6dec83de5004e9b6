import Foundation

/// Latencies in nanoseconds, summarized in microseconds.
struct Latencies {
    let statistics: Statistics

    init(nanoseconds: [Double]) {
        statistics = Statistics(nanoseconds.map { $0 / 1000 })
    }

    var p50: Double { statistics.percentile(50) }
    var p99: Double { statistics.percentile(99) }
}

extension Scenario {
    /// Scenario 0: the disk's and LMDB's own limits, timed in every run before anything else.
    static let floors = Scenario(
        id: "0",
        name: "floors",
        title: "The floors of this run: raw fdatasync and raw LMDB commits on the journals' disk",
        metrics: [
            .time("fsync-p50", "fdatasync of 512 B, p50"),
            .time("fsync-p99", "fdatasync of 512 B, p99"),
            .time("lmdb-p50", "LMDB durable commit, p50"),
            .time("lmdb-p99", "LMDB durable commit, p99"),
            .time("lmdb-wide-p50", "LMDB durable commit into \(Workload.engineDatabases) databases, p50"),
            .time("pwrite-p50", "pwrite of 512 B, no flush, p50"),
            .time("lmdb-nosync-p50", "LMDB commit with MDB_NOSYNC, p50"),
            .time("sqlite-p50", "plain SQLite insert, WAL, synchronous=FULL, p50"),
        ],
        limit: { result in
            let trips = (result.floor("lmdb-p50") ?? 0) / max(result.floor("fsync-p50") ?? 1, 1e-9)
            return "a durable LMDB commit writes its pages, fdatasyncs them, then writes the meta page O_DSYNC: "
                + "two trips to the disk, here \(TextReport.format(result.floor("lmdb-p50"))) µs = "
                + "\(TextReport.ratioText(trips)) one fdatasync. Touching \(Workload.engineDatabases) databases writes a page path per database, about as many "
                + "pages as an enqueue writes: \(TextReport.format(result.floor("lmdb-wide-p50"))) µs. A plain SQLite insert of the same record, "
                + "one per transaction through the C API: \(TextReport.format(result.floor("sqlite-p50"))) µs"
        },
        run: { context in
            let directory = try context.freshDirectory("floors")
            defer { context.remove(directory) }
            let count = context.sizes.floorCommits
            let fsync = try FsyncFloor(directory: directory)
            let flushed = Latencies(nanoseconds: (0..<count).map { _ in fsync.write() })
            let unflushed = Latencies(nanoseconds: (0..<count).map { _ in fsync.write(flush: false) })
            let recordBytes = Workload.enqueuedRecordBytes
            let durable = try LMDBFloor(directory: directory.appendingPathComponent("durable"), durable: true, recordBytes: recordBytes)
            let commits = Latencies(nanoseconds: try durable.commits(count))
            let wide = try LMDBFloor(directory: directory.appendingPathComponent("wide"), durable: true,
                                     recordBytes: recordBytes, databases: Workload.engineDatabases)
            let wideCommits = Latencies(nanoseconds: try wide.commits(count))
            let nosync = try LMDBFloor(directory: directory.appendingPathComponent("nosync"), durable: false, recordBytes: recordBytes)
            let nosyncCommits = Latencies(nanoseconds: try nosync.commits(count))
            let sqlite = try SQLiteFloor(directory: directory.appendingPathComponent("sqlite"), recordBytes: recordBytes)
            let sqliteInserts = Latencies(nanoseconds: try sqlite.inserts(count))
            return [
                "fsync-p50": Trio(floor: flushed.p50),
                "fsync-p99": Trio(floor: flushed.p99),
                "lmdb-p50": Trio(floor: commits.p50),
                "lmdb-p99": Trio(floor: commits.p99),
                "lmdb-wide-p50": Trio(floor: wideCommits.p50),
                "pwrite-p50": Trio(floor: unflushed.p50),
                "lmdb-nosync-p50": Trio(floor: nosyncCommits.p50),
                "sqlite-p50": Trio(floor: sqliteInserts.p50),
            ]
        }
    )
}
