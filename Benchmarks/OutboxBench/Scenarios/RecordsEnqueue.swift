import Foundation
import Outbox
import OutboxAudit

/// Scenarios 13.1 and 13.2: an enqueue that commits the member's record change with it, beside the
/// same enqueue alone, in the durable and the `.processCrash` tier.
extension Scenario {
    static func recordsEnqueue(_ durability: OutboxConfiguration.Durability) -> Scenario {
        let full = durability == .full
        let bound = full ? 1.10 : 1.25
        return Scenario(
            id: full ? "13.1" : "13.2",
            name: full ? "records-enqueue" : "records-enqueue-process-crash",
            title: full ? "Records: durable enqueue with its record change beside the enqueue alone, one producer"
                : "Records: enqueue with its record change beside the enqueue alone, one producer, .processCrash tier (no flush)",
            metrics: [
                .time("alone-p50", "enqueue alone, p50"),
                .time("with-p50", "enqueue with its record change, p50"),
                .count("ratio-p50", "with the change / alone, p50 (x)", higherIsBetter: false),
                .time("with-p99", "enqueue with its record change, p99"),
                .rate("with-rate", "enqueues with their record change/s"),
            ],
            limit: { result in
                "the change rides in the enqueue's own commit: its value in the `enqueued` record (about "
                    + "\(Workload.enqueuedRecordWithChangeBytes - Workload.enqueuedRecordBytes) bytes more: a value that is the payload refers to it) and one more row, its "
                    + "`record-writes` entry (its `record-ops` entry comes with the outcome that retires it). Raw \(full ? "durable " : "")commits: "
                    + "\(TextReport.format(result.floor("alone-p50"))) µs for the record alone, "
                    + "\(TextReport.format(result.floor("with-p50"))) µs for the larger record and a row in one more database "
                    + "(\(TextReport.ratioText(result.floor("ratio-p50") ?? 0))). The SQLite outbox writes the app's `products` row "
                    + "and the outbox row in one transaction (WAL, synchronous=\(full ? "FULL" : "NORMAL"))"
            },
            targets: [Target(text: "enqueue with its record change at most \(TextReport.ratioText(bound)) the enqueue alone (p50)") { result in
                result.ours("ratio-p50").map { (TextReport.ratioText($0), $0 <= bound) }
            }],
            run: { context in
                let count = context.sizes.sequentialEnqueues
                let directory = try context.freshDirectory(full ? "records-enqueue" : "records-enqueue-nosync")
                defer { context.remove(directory) }
                let creates = (0..<count).map(Workload.productCreate)
                let changes = (0..<count).map { [RecordChange.put(Workload.productKey($0), Workload.productValue($0))] }

                if let half = recordsProfiledHalf {
                    // A profile of one half: the engine alone, the other half and the other contenders left out.
                    let outbox = try Workload.openOutbox(directory.appendingPathComponent("ours"), durability: durability)
                    defer { outbox.close() }
                    var times: [Double] = []
                    for index in 0..<count {
                        times.append(try await Stopwatch.time {
                            _ = try await outbox.enqueue(creates[index], changing: half == "with" ? changes[index] : [])
                        })
                    }
                    return [half == "with" ? "with-p50" : "alone-p50": Trio(ours: Latencies(nanoseconds: times).p50)]
                }

                let floorAlone = try LMDBFloor(directory: directory.appendingPathComponent("floor-alone"), durable: full,
                                               recordBytes: Workload.enqueuedRecordBytes)
                let floorWith = try LMDBFloor(directory: directory.appendingPathComponent("floor-with"), durable: full,
                                              recordBytes: Workload.enqueuedRecordWithChangeBytes, databases: 2)
                let floor = try await interleaved(count, alone: { _ in try floorAlone.commit() }, with: { _ in try floorWith.commit() })

                let alone = try Workload.openOutbox(directory.appendingPathComponent("ours-alone"), durability: durability)
                let with = try Workload.openOutbox(directory.appendingPathComponent("ours-with"), durability: durability)
                let ours = try await interleaved(count, alone: { index in
                    try await Stopwatch.time { _ = try await alone.enqueue(creates[index]) }
                }, with: { index in
                    try await Stopwatch.time { _ = try await with.enqueue(creates[index], changing: changes[index]) }
                })
                guard try with.record(Workload.productKey(count - 1))?.value == Workload.productValue(count - 1) else {
                    throw BenchmarkFailure(description: "records: the last enqueue's record change is not in the member's view")
                }
                alone.close()
                with.close()

                let sqliteAlone = try SQLiteOutbox(directory: directory.appendingPathComponent("sqlite-alone"), durability: durability, appTable: true)
                let sqliteWith = try SQLiteOutbox(directory: directory.appendingPathComponent("sqlite-with"), durability: durability, appTable: true)
                let sqlite = try await interleaved(count, alone: { index in
                    try await Stopwatch.time { try await sqliteAlone.enqueue(creates[index]) }
                }, with: { index in
                    try await Stopwatch.time { try await sqliteWith.enqueue(creates[index], changing: changes[index]) }
                })

                func rate(_ times: [Double]) -> Double { Double(times.count) / (times.reduce(0, +) / 1e9) }
                let (o, s, f) = (ours.summary, sqlite.summary, floor.summary)
                return [
                    "alone-p50": Trio(ours: o.alone.p50, sqlite: s.alone.p50, floor: f.alone.p50),
                    "with-p50": Trio(ours: o.with.p50, sqlite: s.with.p50, floor: f.with.p50),
                    "ratio-p50": Trio(ours: o.with.p50 / o.alone.p50, sqlite: s.with.p50 / s.alone.p50, floor: f.with.p50 / f.alone.p50),
                    "with-p99": Trio(ours: o.with.p99, sqlite: s.with.p99, floor: f.with.p99),
                    "with-rate": Trio(ours: rate(ours.with), sqlite: rate(sqlite.with), floor: rate(floor.with)),
                ]
            }
        )
    }

    /// For profiles only: `OUTBOX_BENCH_OURS_ONLY=alone` (or `=with`) runs only the engine's
    /// enqueues alone (or with their record change) in scenarios 13.1 and 13.2, so that two
    /// profiles of the process differ by the change's work alone.
    static var recordsProfiledHalf: String? {
        ProcessInfo.processInfo.environment["OUTBOX_BENCH_OURS_ONLY"].flatMap { ["alone", "with"].contains($0) ? $0 : nil }
    }

    /// Each call's nanoseconds of two ways of doing the same work, called in turn (`alone` first
    /// at even indexes, `with` first at odd ones), so that whatever else the machine does falls
    /// on both alike.
    struct Paired {
        var alone: [Double] = []
        var with: [Double] = []

        var summary: (alone: Latencies, with: Latencies) {
            (Latencies(nanoseconds: alone), Latencies(nanoseconds: with))
        }
    }

    static func interleaved(_ count: Int, alone: (Int) async throws -> Double, with: (Int) async throws -> Double) async throws -> Paired {
        var paired = Paired()
        for index in 0..<count {
            if index.isMultiple(of: 2) {
                paired.alone.append(try await alone(index))
                paired.with.append(try await with(index))
            } else {
                paired.with.append(try await with(index))
                paired.alone.append(try await alone(index))
            }
        }
        return paired
    }
}
