import Foundation
import Outbox
import OutboxAudit

/// Scenarios 1 and 2 (and 9.1, 9.2 for the `.processCrash` tier): enqueues that return once durable.
extension Scenario {
    static func enqueueOneProducer(_ durability: OutboxConfiguration.Durability) -> Scenario {
        let full = durability == .full
        return Scenario(
            id: full ? "1" : "9.1",
            name: full ? "enqueue-1-producer" : "enqueue-1-producer-process-crash",
            title: full ? "Durable enqueue, one producer" : "Enqueue, one producer, .processCrash tier (no flush)",
            metrics: [
                .time("p50", "latency p50"), .time("p99", "latency p99"), .rate("rate", "enqueues/s"),
                .time("p50-wide", "latency p50, floor: a raw commit into \(Workload.engineDatabases) databases"),
            ],
            limit: { result in
                let what = full ? "one durable LMDB commit (two trips to the disk)" : "one LMDB commit to the page cache, no flush"
                return "\(what) per enqueue: raw \(TextReport.format(result.floor("p50"))) µs p50, "
                    + "so at most \(TextReport.format(result.floor("rate"))) enqueues/s from one producer"
            },
            targets: full ? [Target(text: "p50 at most 1.15x the raw LMDB durable commit") { result in
                result["p50"]?.versusFloor.map { (TextReport.ratioText($0.median), $0.median <= 1.15) }
            }] : [],
            run: { context in
                let count = context.sizes.sequentialEnqueues
                let requests = (0..<count).map(Workload.request)
                let directory = try context.freshDirectory("enqueue-1")
                defer { context.remove(directory) }

                let floor = try LMDBFloor(directory: directory.appendingPathComponent("floor"), durable: full,
                                          recordBytes: Workload.enqueuedRecordBytes)
                var floorTimes: [Double] = []
                let floorTotal = try Stopwatch.time { floorTimes = try floor.commits(count) }
                let wide = try LMDBFloor(directory: directory.appendingPathComponent("wide"), durable: full,
                                         recordBytes: Workload.enqueuedRecordBytes, databases: Workload.engineDatabases)
                let wideTimes = try wide.commits(count)

                let outbox = try Workload.openOutbox(directory.appendingPathComponent("ours"), durability: durability)
                var ourTimes: [Double] = []
                let ourTotal = try await Stopwatch.time {
                    for request in requests {
                        ourTimes.append(try await Stopwatch.time { _ = try await outbox.enqueue(request) })
                    }
                }
                outbox.close()

                let sqlite = try SQLiteOutbox(directory: directory.appendingPathComponent("sqlite"), durability: durability)
                var sqliteTimes: [Double] = []
                let sqliteTotal = try await Stopwatch.time {
                    for request in requests {
                        sqliteTimes.append(try await Stopwatch.time { try await sqlite.enqueue(request) })
                    }
                }

                let ours = Latencies(nanoseconds: ourTimes)
                let baseline = Latencies(nanoseconds: sqliteTimes)
                let raw = Latencies(nanoseconds: floorTimes)
                func rate(_ total: Double) -> Double { Double(count) / (total / 1e9) }
                return [
                    "p50": Trio(ours: ours.p50, sqlite: baseline.p50, floor: raw.p50),
                    "p99": Trio(ours: ours.p99, sqlite: baseline.p99, floor: raw.p99),
                    "rate": Trio(ours: rate(ourTotal), sqlite: rate(sqliteTotal), floor: rate(floorTotal)),
                    "p50-wide": Trio(ours: ours.p50, floor: Latencies(nanoseconds: wideTimes).p50),
                ]
            }
        )
    }

    static func enqueueConcurrent(_ durability: OutboxConfiguration.Durability) -> Scenario {
        let full = durability == .full
        return Scenario(
            id: full ? "2" : "9.2",
            name: full ? "enqueue-concurrent" : "enqueue-concurrent-process-crash",
            title: full ? "Durable enqueue, 16 and 64 concurrent producers (group commit)"
                : "Enqueue, 16 and 64 concurrent producers, .processCrash tier (no flush)",
            metrics: [
                .rate("rate-16", "16 producers: enqueues/s"), .time("p99-16", "16 producers: latency p99"),
                .rate("rate-64", "64 producers: enqueues/s"), .time("p99-64", "64 producers: latency p99"),
                .count("batch-16", "16 producers: enqueues per commit", higherIsBetter: true),
                .count("batch-64", "64 producers: enqueues per commit", higherIsBetter: true),
            ],
            limit: { result in
                "every producer's record in one \(full ? "durable " : "")LMDB commit: raw commits of 16 records allow "
                    + "\(TextReport.format(result.floor("rate-16"))) enqueues/s, of 64 records "
                    + "\(TextReport.format(result.floor("rate-64")))/s; a caller arriving mid-commit waits up to two commits "
                    + "(floor p99 is one commit's). The SQLite outbox commits (and \(full ? "flushes" : "writes")) once per enqueue"
            },
            targets: full ? [
                Target(text: "16 producers: at least 2.5x the SQLite outbox's enqueues/s") { result in
                    result["rate-16"]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 2.5) }
                },
                Target(text: "16 producers: at least 40% of the raw group commit's enqueues/s") { result in
                    result["rate-16"]?.versusFloor.map { ("\(TextReport.format(100 / $0.median))%", $0.median <= 2.5) }
                },
                Target(text: "16 producers: at least 14 enqueues per commit") { result in
                    result.ours("batch-16").map { (TextReport.format($0), $0 >= 14) }
                },
                Target(text: "16 producers: p99 under 2 ms") { result in
                    result.ours("p99-16").map { ("\(TextReport.format($0 / 1000)) ms", $0 < 2000) }
                },
                Target(text: "64 producers: at least 5x the SQLite outbox's enqueues/s") { result in
                    result["rate-64"]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 5) }
                },
            ] : [],
            run: { context in
                var sample = Sample()
                for (producers, each) in [(16, context.sizes.enqueuesPer16Producer), (64, context.sizes.enqueuesPer64Producer)] {
                    let measured = try await concurrentEnqueues(producers: producers, each: each, durability: durability, context: context)
                    sample["rate-\(producers)"] = measured.rate
                    sample["p99-\(producers)"] = measured.p99
                    sample["batch-\(producers)"] = measured.perCommit
                }
                return sample
            }
        )
    }

    /// For profiles only: `OUTBOX_BENCH_OURS_ONLY=1` leaves the floor and the SQLite contender out
    /// of the scenarios that ask it (the enqueues, the lifecycles and the pulls), so that a
    /// profile of the process counts the engine's work (and the harness's) alone. The figures
    /// printed then have no ratios.
    static var oursOnly: Bool { ProcessInfo.processInfo.environment["OUTBOX_BENCH_OURS_ONLY"] != nil }

    /// `producers` tasks each enqueueing `each` writes one after another, for each contender.
    private static func concurrentEnqueues(
        producers: Int,
        each: Int,
        durability: OutboxConfiguration.Durability,
        context: Context
    ) async throws -> (rate: Trio, p99: Trio, perCommit: Trio) {
        let directory = try context.freshDirectory("enqueue-\(producers)")
        defer { context.remove(directory) }
        let total = Double(producers * each)
        func rate(_ nanoseconds: Double) -> Double { total / (nanoseconds / 1e9) }

        var floorTimes: [Double] = []
        var floorTotal = 0.0
        if !oursOnly {
            let floor = try LMDBFloor(directory: directory.appendingPathComponent("floor"), durable: durability == .full,
                                      recordBytes: Workload.enqueuedRecordBytes)
            floorTotal = try Stopwatch.time { floorTimes = try floor.commits(each, records: producers) }
        }

        let ourDirectory = directory.appendingPathComponent("ours")
        let outbox = try Workload.openOutbox(ourDirectory, durability: durability)
        let (ourTimes, ourTotal) = try await timedProducers(producers, each) { number in
            _ = try await outbox.enqueue(Workload.request(number))
        }
        outbox.close()
        let ourCommits = try CommitCount.of(ourDirectory)
        if oursOnly {
            return (Trio(ours: rate(ourTotal)), Trio(ours: Latencies(nanoseconds: ourTimes).p99), Trio(ours: total / Double(ourCommits)))
        }

        let sqlite = try SQLiteOutbox(directory: directory.appendingPathComponent("sqlite"), durability: durability)
        let (sqliteTimes, sqliteTotal) = try await timedProducers(producers, each) { number in
            try await sqlite.enqueue(Workload.request(number))
        }

        return (
            Trio(ours: rate(ourTotal), sqlite: rate(sqliteTotal), floor: rate(floorTotal)),
            Trio(ours: Latencies(nanoseconds: ourTimes).p99, sqlite: Latencies(nanoseconds: sqliteTimes).p99,
                 floor: Latencies(nanoseconds: floorTimes).p99),
            Trio(ours: total / Double(ourCommits), sqlite: total / Double(sqlite.commits), floor: Double(producers))
        )
    }

    /// Runs `producers` tasks, each calling `body` `each` times in turn; answers every call's
    /// nanoseconds and the whole run's.
    static func timedProducers(
        _ producers: Int,
        _ each: Int,
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> (calls: [Double], total: Double) {
        var calls: [Double] = []
        let total = try await Stopwatch.time {
            calls = try await withThrowingTaskGroup(of: [Double].self) { group in
                for producer in 0..<producers {
                    group.addTask {
                        var times: [Double] = []
                        times.reserveCapacity(each)
                        for index in 0..<each {
                            let number = producer * each + index
                            times.append(try await Stopwatch.time { try await body(number) })
                        }
                        return times
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        return (calls, total)
    }
}
