import Foundation
import Outbox
import OutboxAudit
import OutboxTesting

/// How long one full lifecycle took: enqueue every operation, then drain them all.
struct LifecycleTimes {
    var enqueueNanoseconds: Double
    var drainNanoseconds: Double
    var operations: Int

    var operationsPerSecond: Double { Double(operations) / ((enqueueNanoseconds + drainNanoseconds) / 1e9) }
    var drainedPerSecond: Double { Double(operations) / (drainNanoseconds / 1e9) }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
}

/// Scenario 3 (and 9.3): the full lifecycle of many operations, against an instant in-memory server.
extension Scenario {
    static func lifecycle(_ durability: OutboxConfiguration.Durability) -> Scenario {
        let full = durability == .full
        return Scenario(
            id: full ? "3" : "9.3",
            name: full ? "lifecycle" : "lifecycle-process-crash",
            title: full ? "Full lifecycle (enqueue, then drain against an instant in-memory server), 1 and 8 lanes"
                : "Full lifecycle, 1 and 8 lanes, .processCrash tier (no flush)",
            metrics: [
                .rate("rate-1", "1 lane: operations/s"), .rate("drain-1", "1 lane: drain only, operations/s"),
                .rate("rate-8", "8 lanes: operations/s"), .rate("drain-8", "8 lanes: drain only, operations/s"),
                .count("commits-1", "1 lane: commits per operation", higherIsBetter: false),
                .count("commits-8", "8 lanes: commits per operation", higherIsBetter: false),
            ],
            limit: { result in
                "two \(full ? "durable " : "")commits per operation: the enqueue, durable before it returns; the attempt's start, "
                    + "durable before the request leaves, which the previous attempt's outcome can share (the last outcome of a "
                    + "drain commits alone). With N producers and N lanes each commit can carry N operations: "
                    + "raw commits allow \(TextReport.format(result.floor("rate-1"))) operations/s with 1, "
                    + "\(TextReport.format(result.floor("rate-8")))/s with 8. The SQLite outbox commits three times per operation"
            },
            targets: full ? [
                Target(text: "1 lane: at least the SQLite outbox's operations/s") { result in
                    result["rate-1"]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 1) }
                },
                Target(text: "8 lanes: at least 2x the SQLite outbox's operations/s") { result in
                    result["rate-8"]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 2) }
                },
            ] : [],
            run: { context in
                var sample = Sample()
                for lanes in [1, 8] {
                    let directory = try context.freshDirectory("lifecycle-\(lanes)")
                    defer { context.remove(directory) }
                    let operations = context.sizes.lifecycleOperations / lanes * lanes

                    let floor = try LMDBFloor(directory: directory.appendingPathComponent("floor"), durable: full,
                                              recordBytes: Workload.enqueuedRecordBytes)
                    let commits = Statistics(try floor.commits(min(context.sizes.floorCommits, 2 * operations / lanes), records: lanes))
                    let floorRate = Double(lanes) / (2 * commits.mean / 1e9)
                    let floorDrain = Double(lanes) / (commits.mean / 1e9)

                    let ourDirectory = directory.appendingPathComponent("ours")
                    let (ours, outbox, _) = try await ourLifecycle(ourDirectory, operations: operations, lanes: lanes, durability: durability)
                    outbox.close()
                    let ourCommits = try CommitCount.of(ourDirectory)
                    let (theirs, sqlite) = try await sqliteLifecycle(directory.appendingPathComponent("sqlite"), operations: operations,
                                                                lanes: lanes, durability: durability)
                    sample["rate-\(lanes)"] = Trio(ours: ours.operationsPerSecond, sqlite: theirs.operationsPerSecond, floor: floorRate)
                    sample["drain-\(lanes)"] = Trio(ours: ours.drainedPerSecond, sqlite: theirs.drainedPerSecond, floor: floorDrain)
                    sample["commits-\(lanes)"] = Trio(ours: Double(ourCommits) / Double(operations),
                                                      sqlite: Double(sqlite.commits) / Double(operations), floor: 2 / Double(lanes))
                }
                return sample
            }
        )
    }

    /// Enqueues `operations` writes from `lanes` producers, then drains them with `lanes` lanes.
    /// Checks every one was applied exactly once and is synced. The caller closes the outbox.
    static func ourLifecycle(
        _ directory: URL,
        operations: Int,
        lanes: Int,
        durability: OutboxConfiguration.Durability
    ) async throws -> (LifecycleTimes, Outbox, [OutboxRequest]) {
        let server = InMemoryServer()
        let outbox = try Workload.openOutbox(directory, durability: durability, lanes: lanes, transport: server)
        let requests = (0..<operations).map(Workload.request)
        let (_, enqueued) = try await timedProducers(lanes, operations / lanes) { number in
            _ = try await outbox.enqueue(requests[number])
        }
        try keepStore(directory, suffix: "-enqueued")
        let drained = await Stopwatch.time { await outbox.drain() }
        let synced = try outbox.metrics().queueDepth[.synced] ?? 0
        guard synced == operations, server.records.count == operations, server.maxAppliedCount == 1 else {
            throw BenchmarkFailure(description: "ours: \(synced) of \(operations) synced, \(server.records.count) applied")
        }
        return (LifecycleTimes(enqueueNanoseconds: enqueued, drainNanoseconds: drained, operations: operations), outbox, requests)
    }

    /// The same lifecycle through the SQLite outbox.
    static func sqliteLifecycle(
        _ directory: URL,
        operations: Int,
        lanes: Int,
        durability: OutboxConfiguration.Durability
    ) async throws -> (LifecycleTimes, SQLiteOutbox) {
        let server = InMemoryServer()
        let sqlite = try SQLiteOutbox(directory: directory, durability: durability)
        let requests = (0..<operations).map(Workload.request)
        let (_, enqueued) = try await timedProducers(lanes, operations / lanes) { number in
            try await sqlite.enqueue(requests[number])
        }
        var sent = 0
        let drained = try await Stopwatch.time { sent = try await sqlite.drain(lanes: lanes, transport: server) }
        let synced = try sqlite.count(.synced)
        guard sent == operations, synced == operations, server.maxAppliedCount == 1 else {
            throw BenchmarkFailure(description: "SQLite outbox: \(synced) of \(operations) synced, \(sent) sent")
        }
        return (LifecycleTimes(enqueueNanoseconds: enqueued, drainNanoseconds: drained, operations: operations), sqlite)
    }
}
