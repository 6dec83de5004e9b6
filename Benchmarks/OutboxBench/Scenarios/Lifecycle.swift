import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// How long one full lifecycle took, and the process's CPU over it: enqueue every operation, then
/// drain them all.
struct LifecycleTimes {
    var enqueueNanoseconds: Double
    var drainNanoseconds: Double
    /// The process's CPU time, every thread's, over the enqueues and over the drain.
    var enqueueCPUNanoseconds: Double
    var drainCPUNanoseconds: Double
    var operations: Int

    var operationsPerSecond: Double { Double(operations) / ((enqueueNanoseconds + drainNanoseconds) / 1e9) }
    var drainedPerSecond: Double { Double(operations) / (drainNanoseconds / 1e9) }
    /// CPU microseconds per operation, over the whole lifecycle and over the drain alone.
    var cpuPerOperation: Double { (enqueueCPUNanoseconds + drainCPUNanoseconds) / Double(operations) / 1e3 }
    var drainCPUPerOperation: Double { drainCPUNanoseconds / Double(operations) / 1e3 }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
}

/// Scenario 3 (and 9.3): the full lifecycle of many operations, against a canned answerer.
extension Scenario {
    static func lifecycle(_ durability: OutboxConfiguration.Durability) -> Scenario {
        let full = durability == .full
        return Scenario(
            id: full ? "3" : "9.3",
            name: full ? "lifecycle" : "lifecycle-process-crash",
            title: full ? "Full lifecycle (enqueue, then drain against a canned answer per key), 1 and 8 lanes"
                : "Full lifecycle, 1 and 8 lanes, .processCrash tier (no flush)",
            metrics: [
                .rate("rate-1", "1 lane: operations/s"), .rate("drain-1", "1 lane: drain only, operations/s"),
                .rate("rate-8", "8 lanes: operations/s"), .rate("drain-8", "8 lanes: drain only, operations/s"),
                .count("commits-1", "1 lane: commits per operation", higherIsBetter: false),
                .count("commits-8", "8 lanes: commits per operation", higherIsBetter: false),
                .time("cpu-1", "1 lane: CPU per operation"), .time("cpu-drain-1", "1 lane: drain only, CPU per operation"),
                .time("cpu-8", "8 lanes: CPU per operation"), .time("cpu-drain-8", "8 lanes: drain only, CPU per operation"),
                .time("canned", "the canned answer's own CPU per request"),
            ],
            limit: { result in
                "two \(full ? "durable " : "")commits per operation: the enqueue, durable before it returns; the attempt's start, "
                    + "durable before the request leaves, which the previous attempt's outcome can share (the last outcome of a "
                    + "drain commits alone). With N producers and N lanes each commit can carry N operations: "
                    + "raw commits allow \(TextReport.format(result.floor("rate-1"))) operations/s with 1, "
                    + "\(TextReport.format(result.floor("rate-8")))/s with 8, and cost "
                    + "\(TextReport.format(result.floor("cpu-1"))) and \(TextReport.format(result.floor("cpu-8"))) µs of CPU "
                    + "per operation. The SQLite outbox commits three times per operation. Both send to a canned answer per key, "
                    + "\(TextReport.format(result.ours("canned"))) µs of CPU a request"
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

                    var floor: (rate: Double, drain: Double, cpu: Double, drainCPU: Double)?
                    if !oursOnly {
                        let raw = try LMDBFloor(directory: directory.appendingPathComponent("floor"), durable: full,
                                                recordBytes: Workload.enqueuedRecordBytes)
                        let count = min(context.sizes.floorCommits, 2 * operations / lanes)
                        var times: [Double] = []
                        let cpu = try CPUClock.measure { times = try raw.commits(count, records: lanes) }
                        let commits = Statistics(times)
                        // An operation is two commits, each shared by `lanes` operations; the drain's one.
                        let cpuPerCommit = cpu / Double(count) / 1e3
                        floor = (Double(lanes) / (2 * commits.mean / 1e9), Double(lanes) / (commits.mean / 1e9),
                                 2 * cpuPerCommit / Double(lanes), cpuPerCommit / Double(lanes))
                    }

                    let ourDirectory = directory.appendingPathComponent("ours")
                    let (ours, outbox, _) = try await ourLifecycle(ourDirectory, operations: operations, lanes: lanes, durability: durability)
                    outbox.close()
                    let ourCommits = try CommitCount.of(ourDirectory)
                    var theirs: LifecycleTimes?
                    var sqliteCommits: Double?
                    if !oursOnly {
                        let (times, sqlite) = try await sqliteLifecycle(directory.appendingPathComponent("sqlite"), operations: operations,
                                                                        lanes: lanes, durability: durability)
                        theirs = times
                        sqliteCommits = Double(sqlite.commits) / Double(operations)
                    }
                    sample["rate-\(lanes)"] = Trio(ours: ours.operationsPerSecond, sqlite: theirs?.operationsPerSecond, floor: floor?.rate)
                    sample["drain-\(lanes)"] = Trio(ours: ours.drainedPerSecond, sqlite: theirs?.drainedPerSecond, floor: floor?.drain)
                    sample["commits-\(lanes)"] = Trio(ours: Double(ourCommits) / Double(operations), sqlite: sqliteCommits,
                                                      floor: 2 / Double(lanes))
                    sample["cpu-\(lanes)"] = Trio(ours: ours.cpuPerOperation, sqlite: theirs?.cpuPerOperation, floor: floor?.cpu)
                    sample["cpu-drain-\(lanes)"] = Trio(ours: ours.drainCPUPerOperation, sqlite: theirs?.drainCPUPerOperation,
                                                        floor: floor?.drainCPU)
                }
                let canned = try await CannedTransport.cost(of: CannedTransport.requests(context.sizes.lifecycleOperations))
                sample["canned"] = Trio(ours: canned.cpu / 1e3)
                return sample
            }
        )
    }

    /// Enqueues `operations` writes from `lanes` producers, then drains them with `lanes` lanes
    /// to a canned answer per key. Checks every one was answered exactly once and is synced. The
    /// caller closes the outbox.
    static func ourLifecycle(
        _ directory: URL,
        operations: Int,
        lanes: Int,
        durability: OutboxConfiguration.Durability
    ) async throws -> (LifecycleTimes, Outbox, [OutboxRequest]) {
        let transport = CannedTransport()
        let outbox = try Workload.openOutbox(directory, durability: durability, lanes: lanes, transport: transport)
        let requests = (0..<operations).map(Workload.request)
        let keys = Mutex([String](repeating: "", count: operations))
        var enqueued = 0.0
        let enqueueCPU = try await CPUClock.measure {
            (_, enqueued) = try await timedProducers(lanes, operations / lanes) { number in
                let id = try await outbox.enqueue(requests[number])
                keys.withLock { $0[number] = id.idempotencyKey }
            }
        }
        try keepStore(directory, suffix: "-enqueued")
        // Nothing was sent yet: until its first wake or drain, the engine's worker sends nothing.
        transport.expect(keys.withLock { $0 })
        var drained = 0.0
        let drainCPU = await CPUClock.measure {
            drained = await Stopwatch.time { await outbox.drain() }
        }
        let synced = try outbox.metrics().queueDepth[.synced] ?? 0
        guard synced == operations else {
            throw BenchmarkFailure(description: "ours: \(synced) of \(operations) synced")
        }
        try transport.verify(operations: operations, contender: "ours")
        let times = LifecycleTimes(enqueueNanoseconds: enqueued, drainNanoseconds: drained, enqueueCPUNanoseconds: enqueueCPU,
                                   drainCPUNanoseconds: drainCPU, operations: operations)
        return (times, outbox, requests)
    }

    /// The same lifecycle through the SQLite outbox, to the same canned answers.
    static func sqliteLifecycle(
        _ directory: URL,
        operations: Int,
        lanes: Int,
        durability: OutboxConfiguration.Durability
    ) async throws -> (LifecycleTimes, SQLiteOutbox) {
        let transport = CannedTransport()
        let sqlite = try SQLiteOutbox(directory: directory, durability: durability)
        let requests = (0..<operations).map(Workload.request)
        let ids = (0..<operations).map { _ in OperationID() }
        var enqueued = 0.0
        let enqueueCPU = try await CPUClock.measure {
            (_, enqueued) = try await timedProducers(lanes, operations / lanes) { number in
                try await sqlite.enqueue(requests[number], id: ids[number])
            }
        }
        transport.expect(ids.map(\.idempotencyKey))
        var sent = 0
        var drained = 0.0
        let drainCPU = try await CPUClock.measure {
            drained = try await Stopwatch.time { sent = try await sqlite.drain(lanes: lanes, transport: transport) }
        }
        let synced = try sqlite.count(.synced)
        guard sent == operations, synced == operations else {
            throw BenchmarkFailure(description: "SQLite outbox: \(synced) of \(operations) synced, \(sent) sent")
        }
        try transport.verify(operations: operations, contender: "SQLite outbox")
        let times = LifecycleTimes(enqueueNanoseconds: enqueued, drainNanoseconds: drained, enqueueCPUNanoseconds: enqueueCPU,
                                   drainCPUNanoseconds: drainCPU, operations: operations)
        return (times, sqlite)
    }
}
