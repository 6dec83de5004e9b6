import Foundation
import Outbox
import OutboxAudit

/// Scenarios 13.3 and 13.4: the member's records read, one by key and a page of them, from the
/// journal of ``RecordJournal`` (1,000 products, 400 with pending writes).
extension Scenario {
    static let recordsRead = Scenario(
        id: "13.3",
        name: "records-read",
        title: "Records: one record's read (its base, its overlays and the pending writes' states)",
        metrics: [
            .time("layered", "a record with its base and 2 pending edits, median"),
            .time("layered-p99", "the same, p99"),
            .time("synced", "a synced record (its base only), median"),
        ],
        limit: { result in
            "one read transaction touching the same entries, nothing decoded: the base row in `records`, the record's "
                + "`record-writes` entries in `state` (a cursor), each pending write's state and its `enqueued` event by key: "
                + "\(TextReport.format(result.floor("layered"))) µs with 2 pending edits, "
                + "\(TextReport.format(result.floor("synced"))) µs for the base alone. Ours also decodes the base, each state and "
                + "each `enqueued` record (checked, the change found in it) and folds the view. The SQLite outbox reads the app's "
                + "row joined with its pending outbox rows: the member's value and the rows' statuses, no base"
        },
        targets: [Target(text: "a record with its base and pending edits within 3x of the raw LMDB reads of the same entries") { result in
            result["layered"]?.versusFloor.map { (TextReport.ratioText($0.median), $0.median <= 3) }
        }],
        run: { context in
            let journal = try await context.fixtures.records(context.sizes.records, context: context)
            let iterations = context.sizes.readIterations
            let layered = journal.layered.map { Workload.productKey($0) }
            let synced = journal.synced.map { Workload.productKey($0) }
            func cycling(_ keys: [RecordKey], _ read: (RecordKey) throws -> Void) throws -> Latencies {
                Latencies(nanoseconds: try (0..<iterations).map { index in try Stopwatch.time { try read(keys[index % keys.count]) } })
            }

            let outbox = try Workload.openOutbox(journal.directory)
            let ours = try cycling(layered) { key in
                guard let record = try outbox.record(key), record.server != nil, record.sync.pending.count == 2 else {
                    throw BenchmarkFailure(description: "records: \(key) does not show its base and 2 pending edits")
                }
            }
            let oursSynced = try cycling(synced) { key in
                guard let record = try outbox.record(key), record.server != nil, record.sync.isSynced else {
                    throw BenchmarkFailure(description: "records: \(key) does not show as synced")
                }
            }
            outbox.close()

            let sqlite = try SQLiteOutbox(directory: journal.sqliteDirectory, durability: .full, appTable: true)
            let theirs = try cycling(layered) { key in
                guard let record = try sqlite.record(key.id), record.pending.count == 2 else {
                    throw BenchmarkFailure(description: "SQLite outbox: \(key) has not its 2 pending rows")
                }
            }
            let theirsSynced = try cycling(synced) { key in
                guard let record = try sqlite.record(key.id), record.pending.isEmpty else {
                    throw BenchmarkFailure(description: "SQLite outbox: \(key) has pending rows")
                }
            }

            let raw = try RecordFloor(directory: journal.directory)
            let floor = try cycling(layered) { key in
                guard try raw.record(key).writes == 2 else { throw BenchmarkFailure(description: "floor: \(key) has not its 2 pending writes") }
            }
            let floorSynced = try cycling(synced) { key in
                guard try raw.record(key).bases == 1 else { throw BenchmarkFailure(description: "floor: \(key) has no base") }
            }
            return [
                "layered": Trio(ours: ours.p50, sqlite: theirs.p50, floor: floor.p50),
                "layered-p99": Trio(ours: ours.p99, sqlite: theirs.p99, floor: floor.p99),
                "synced": Trio(ours: oursSynced.p50, sqlite: theirsSynced.p50, floor: floorSynced.p50),
            ]
        }
    )

    static let recordsQuery = Scenario(
        id: "13.4",
        name: "records-query",
        title: "Records: a query of 1,000 records (a page of one business's products, pending creates included)",
        metrics: [
            .time("query", "a page of 1,000 records, median", .milliseconds),
            .time("query-p99", "the same, p99", .milliseconds),
            .time("per-record", "per record, median"),
        ],
        limit: { result in
            "one read transaction touching the same entries, nothing decoded: a cursor over the type's bases in `records`, "
                + "one over its `record-writes` entries in `state`, and each pending write's state and `enqueued` event by key: "
                + "\(TextReport.format(result.floor("query"))) ms. Ours merges the same two cursors, reads each pending write "
                + "the same way, and also checks each `enqueued` record's checksum, decodes every entry and folds each view. The SQLite outbox reads a page of the app's table "
                + "joined with the pending outbox rows"
        },
        targets: [Target(text: "a query of 1,000 records within 3x of a raw LMDB cursor scan of the same entries") { result in
            result["query"]?.versusFloor.map { (TextReport.ratioText($0.median), $0.median <= 3) }
        }],
        run: { context in
            let journal = try await context.fixtures.records(context.sizes.records, context: context)
            let iterations = context.sizes.recordQueryIterations
            let count = journal.records
            func timed(_ read: () throws -> Void) throws -> Latencies {
                Latencies(nanoseconds: try (0..<iterations).map { _ in try Stopwatch.time(read) })
            }

            let outbox = try Workload.openOutbox(journal.directory)
            let query = RecordQuery(business: Workload.businessID, type: Workload.productType, limit: count)
            let ours = try timed {
                let page = try outbox.records(query)
                guard page.records.count == count, page.nextAfter == nil else {
                    throw BenchmarkFailure(description: "records: the query found \(page.records.count) of \(count) records")
                }
            }
            outbox.close()

            let sqlite = try SQLiteOutbox(directory: journal.sqliteDirectory, durability: .full, appTable: true)
            let theirs = try timed {
                let page = try sqlite.records(limit: count)
                guard page.count == count else { throw BenchmarkFailure(description: "SQLite outbox: the join found \(page.count) of \(count) records") }
            }

            let raw = try RecordFloor(directory: journal.directory)
            let floor = try timed {
                let touched = try raw.page(business: Workload.businessID, type: Workload.productType)
                guard touched.bases == journal.bases, touched.writes == journal.pendingWrites else {
                    throw BenchmarkFailure(description: "floor: the scan found \(touched.bases) bases and \(touched.writes) writes")
                }
            }
            // Latencies are in µs: the page's figures in ms, and per record in µs.
            return [
                "query": Trio(ours: ours.p50 / 1000, sqlite: theirs.p50 / 1000, floor: floor.p50 / 1000),
                "query-p99": Trio(ours: ours.p99 / 1000, sqlite: theirs.p99 / 1000, floor: floor.p99 / 1000),
                "per-record": Trio(ours: ours.p50 / Double(count), sqlite: theirs.p50 / Double(count), floor: floor.p50 / Double(count)),
            ]
        }
    )

    static let recordsQueryMillion = Scenario(
        id: "13.6",
        name: "records-query-million",
        title: "Records: the first pages of a type holding 1,000,000 records (100 and 1,000 records, pending edits included)",
        metrics: [
            .time("first-100", "the first page of 100 records, median"),
            .time("first-100-p99", "the same, p99"),
            .time("page-1000", "the first page of 1,000 records, median", .milliseconds),
            .time("page-1000-p99", "the same, p99", .milliseconds),
            .time("page-1000-cpu", "the same, its thread's CPU time, median", .milliseconds),
        ],
        limit: { result in
            "one read transaction touching the same entries, nothing decoded: a cursor over the first bases of the type in `records` "
                + "(of a million), one over their `record-writes` entries in `state`, and each pending write's state and `enqueued` "
                + "event by key: \(TextReport.format(result.floor("first-100"))) µs for 100 records, "
                + "\(TextReport.format(result.floor("page-1000"))) ms for 1,000. Ours merges the same two cursors and also decodes "
                + "every entry, checks each `enqueued` record and folds each view. The SQLite outbox reads the page by the app "
                + "table's primary key (`ORDER BY id LIMIT`), joined with the pending outbox rows by their index"
        },
        targets: [
            Target(text: "the first page of 100 records of a type holding a million in at most 1 ms (median)") { result in
                result.ours("first-100").map { ("\(TextReport.format($0)) µs", $0 <= 1000) }
            },
            Target(text: "the first page of 1,000 records within 3x of a raw LMDB cursor scan of the same entries") { result in
                result["page-1000"]?.versusFloor.map { (TextReport.ratioText($0.median), $0.median <= 3) }
            },
        ],
        run: { context in
            let journal = try await MillionRecords.shared(context.sizes.millionRecords, context: context)
            let iterations = context.sizes.millionQueryIterations
            // Each read's wall time, and its thread's CPU time (the time it ran, whatever else
            // the shared cores ran meanwhile).
            func timed(_ read: () throws -> Void) throws -> (wall: Latencies, cpu: Latencies) {
                var wall: [Double] = [], cpu: [Double] = []
                for _ in 0..<iterations {
                    let start = threadCPU()
                    wall.append(try Stopwatch.time(read))
                    cpu.append(threadCPU() - start)
                }
                return (Latencies(nanoseconds: wall), Latencies(nanoseconds: cpu))
            }
            let pages = [100, min(1000, journal.firstIDs.count)]
            var ours: [(wall: Latencies, cpu: Latencies)] = [], theirs: [(wall: Latencies, cpu: Latencies)] = []
            var floors: [(wall: Latencies, cpu: Latencies)] = []

            let outbox = try Workload.openOutbox(journal.directory)
            for count in pages {
                let query = RecordQuery(business: Workload.businessID, type: Workload.productType, limit: count)
                let pending = MillionRecords.pendingWrites(first: count)
                ours.append(try timed {
                    let page = try outbox.records(query)
                    guard page.records.count == count, page.nextAfter == journal.firstIDs[count - 1],
                          page.records.reduce(0, { $0 + $1.sync.pending.count }) == pending else {
                        throw BenchmarkFailure(description: "records: the first page of \(count) holds \(page.records.count) records")
                    }
                })
            }
            outbox.close()

            let sqlite = try SQLiteOutbox(directory: journal.sqliteDirectory, durability: .full, appTable: true)
            for count in pages {
                let pending = MillionRecords.pendingWrites(first: count)
                theirs.append(try timed {
                    let page = try sqlite.records(limit: count)
                    guard page.count == count, page.last?.id == journal.firstIDs[count - 1],
                          page.reduce(0, { $0 + $1.pending.count }) == pending else {
                        throw BenchmarkFailure(description: "SQLite outbox: the first page of \(count) holds \(page.count) records")
                    }
                })
            }

            let raw = try MillionFloor(directory: journal.directory)
            for count in pages {
                let pending = MillionRecords.pendingWrites(first: count)
                floors.append(try timed {
                    let touched = try raw.firstPage(business: Workload.businessID, type: Workload.productType, count: count)
                    guard touched.bases == count, touched.writes == pending else {
                        throw BenchmarkFailure(description: "floor: the first \(count) bases hold \(touched.bases) bases and \(touched.writes) writes")
                    }
                })
            }
            // Latencies are in µs: the page of 100 in µs, the page of 1,000 in ms.
            return [
                "first-100": Trio(ours: ours[0].wall.p50, sqlite: theirs[0].wall.p50, floor: floors[0].wall.p50),
                "first-100-p99": Trio(ours: ours[0].wall.p99, sqlite: theirs[0].wall.p99, floor: floors[0].wall.p99),
                "page-1000": Trio(ours: ours[1].wall.p50 / 1000, sqlite: theirs[1].wall.p50 / 1000, floor: floors[1].wall.p50 / 1000),
                "page-1000-p99": Trio(ours: ours[1].wall.p99 / 1000, sqlite: theirs[1].wall.p99 / 1000, floor: floors[1].wall.p99 / 1000),
                "page-1000-cpu": Trio(ours: ours[1].cpu.p50 / 1000, sqlite: theirs[1].cpu.p50 / 1000, floor: floors[1].cpu.p50 / 1000),
            ]
        }
    )
}

/// The calling thread's CPU time, in nanoseconds.
private func threadCPU() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}
