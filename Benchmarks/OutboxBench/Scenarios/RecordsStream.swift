import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// Scenario 13.5: what the record stream costs each commit. Ten subscribers follow one page of
/// records (`recordUpdates`), then commits change one record of it, each waiting until every
/// subscriber has a page showing it; the same commits without subscribers beside them.
///
/// In the `.processCrash` tier: the subscribers' work comes after the commit, so a durable
/// commit's flush adds the same time with them and without, and on a shared disk its spread
/// would hide what they cost.
extension Scenario {
    static let subscriberCount = 10

    static let recordsStream = Scenario(
        id: "13.5",
        name: "records-stream",
        title: "Records: the record stream's cost per commit, \(subscriberCount) subscribers to a page of 100 records, .processCrash tier",
        metrics: [
            .time("alone", "a commit changing one record, no subscribers, p50"),
            .time("seen", "a commit until all \(subscriberCount) subscribers have its page, p50"),
            .time("seen-p99", "the same, p99"),
            .time("added", "added per commit by the \(subscriberCount) subscribers (p50 with - p50 without)"),
            .time("returned", "the commit's own call while \(subscriberCount) subscribers listen, p50"),
        ],
        limit: { result in
            "after each commit that touches the page's business and type, each subscriber reads its page again (one snapshot) "
                + "and yields it when it differs: \(subscriberCount) page reads per commit, on the machine's cores. "
                + "Raw: an unflushed commit \(TextReport.format(result.floor("alone"))) µs, and \(subscriberCount) raw scans of the page's "
                + "entries \(TextReport.format(result.floor("added"))) µs (timed apart, added). The SQLite outbox has no stream: "
                + "after each commit, \(subscriberCount) observers each read the page's join again on a connection of its own, "
                + "as GRDB's ValueObservation on a DatabasePool does. The edited record's writes coalesce (one overlay) in both"
        },
        run: { context in
            let records = context.sizes.streamRecords
            let commits = context.sizes.streamCommits
            let directory = try context.freshDirectory("records-stream")
            defer { context.remove(directory) }
            let numbers = Array(0..<records)
            let key = Workload.productKey(0, type: Workload.stockType)
            func update(_ edit: Int) -> (OutboxRequest, [RecordChange]) {
                let value = Workload.markedValue(0, edit: edit)
                return (Workload.productUpdate(0, edit: edit, type: Workload.stockType, operationType: "stock.update", payload: value),
                        [.put(key, value)])
            }

            let raw = try LMDBFloor(directory: directory.appendingPathComponent("floor"), durable: false,
                                    recordBytes: Workload.enqueuedRecordWithChangeBytes, databases: 3)
            let rawCommits = Latencies(nanoseconds: try raw.commits(commits))

            // Ours: the page's records created and synced, then opened again and never woken, so
            // that the commits timed are the member's edits alone.
            let ourDirectory = directory.appendingPathComponent("ours")
            try await RecordJournal.createAndSync(ourDirectory, numbers: numbers, type: Workload.stockType)
            let outbox = try Workload.openOutbox(ourDirectory, durability: .processCrash)
            var alone: [Double] = []
            for edit in 1...commits {
                let (request, changes) = update(edit)
                alone.append(try await Stopwatch.time { _ = try await outbox.enqueue(request, changing: changes) })
            }
            let query = RecordQuery(business: Workload.businessID, type: Workload.stockType, limit: records)
            let gate = SeenGate(subscribers: subscriberCount)
            let subscribers = (0..<subscriberCount).map { subscriber in
                Task {
                    for await page in outbox.recordUpdates(query) {
                        gate.saw(Workload.edit(of: page.records.first?.value) ?? -1, by: subscriber)
                    }
                }
            }
            await gate.wait(until: commits)
            var returned: [Double] = []
            var seen: [Double] = []
            for edit in (commits + 1)...(2 * commits) {
                let (request, changes) = update(edit)
                let start = Stopwatch.now()
                _ = try await outbox.enqueue(request, changing: changes)
                returned.append(Double(Stopwatch.now() - start))
                await gate.wait(until: edit)
                seen.append(Double(Stopwatch.now() - start))
            }
            subscribers.forEach { $0.cancel() }
            guard try outbox.record(key)?.sync.pending.count == 1 else {
                throw BenchmarkFailure(description: "records: the edited record's writes did not coalesce into one pending write")
            }
            outbox.close()

            let rawPage = try RecordFloor(directory: ourDirectory)
            let rawPages = Latencies(nanoseconds: try (0..<commits).map { _ in
                try Stopwatch.time {
                    guard try rawPage.page(business: Workload.businessID, type: Workload.stockType).bases == records else {
                        throw BenchmarkFailure(description: "floor: the page's bases are missing")
                    }
                }
            })

            // The SQLite outbox: the same records in the app's table, synced rows in the outbox.
            let sqlite = try SQLiteOutbox(directory: directory.appendingPathComponent("sqlite"), durability: .processCrash, appTable: true)
            try sqlite.bulkInsert(numbers.map { (OperationID(), Workload.productCreate($0), OutboxStatus.synced) },
                                  records: numbers.map { (Workload.productKey($0, type: Workload.stockType).id, Workload.productValue($0)) })
            let observers = try (0..<subscriberCount).map { _ in try SQLiteOutbox.PageReader(path: sqlite.path) }
            var theirAlone: [Double] = []
            for edit in 1...commits {
                let (request, changes) = update(edit)
                theirAlone.append(try await Stopwatch.time { try await sqlite.enqueue(request, changing: changes, coalescing: true) })
            }
            var theirReturned: [Double] = []
            var theirSeen: [Double] = []
            for edit in (commits + 1)...(2 * commits) {
                let (request, changes) = update(edit)
                let start = Stopwatch.now()
                try await sqlite.enqueue(request, changing: changes, coalescing: true)
                theirReturned.append(Double(Stopwatch.now() - start))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for observer in observers {
                        group.addTask {
                            let page = try observer.records(limit: records)
                            guard page.count == records, Workload.edit(of: page.first?.value) == edit else {
                                throw BenchmarkFailure(description: "SQLite outbox: an observer's page does not show edit \(edit)")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                theirSeen.append(Double(Stopwatch.now() - start))
            }

            let (o, oSeen, oReturned) = (Latencies(nanoseconds: alone), Latencies(nanoseconds: seen), Latencies(nanoseconds: returned))
            let (s, sSeen, sReturned) = (Latencies(nanoseconds: theirAlone), Latencies(nanoseconds: theirSeen), Latencies(nanoseconds: theirReturned))
            let floorAdded = Double(subscriberCount) * rawPages.p50
            return [
                "alone": Trio(ours: o.p50, sqlite: s.p50, floor: rawCommits.p50),
                "seen": Trio(ours: oSeen.p50, sqlite: sSeen.p50, floor: rawCommits.p50 + floorAdded),
                "seen-p99": Trio(ours: oSeen.p99, sqlite: sSeen.p99, floor: rawCommits.p99 + Double(subscriberCount) * rawPages.p99),
                "added": Trio(ours: oSeen.p50 - o.p50, sqlite: sSeen.p50 - s.p50, floor: floorAdded),
                "returned": Trio(ours: oReturned.p50, sqlite: sReturned.p50, floor: rawCommits.p50),
            ]
        }
    )
}

/// Where each subscriber of a stream has got to: the newest edit its pages showed. A producer
/// waits on it until every subscriber has seen its commit.
final class SeenGate: Sendable {
    private struct State {
        var seen: [Int]
        var waiters: [(edit: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    init(subscribers: Int) {
        state = Mutex(State(seen: Array(repeating: -1, count: subscribers)))
    }

    /// `subscriber`'s page shows `edit`.
    func saw(_ edit: Int, by subscriber: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.seen[subscriber] = max(state.seen[subscriber], edit)
            let least = state.seen.min() ?? edit
            let ready = state.waiters.filter { $0.edit <= least }.map(\.continuation)
            state.waiters.removeAll { $0.edit <= least }
            return ready
        }
        ready.forEach { $0.resume() }
    }

    /// Returns once every subscriber has seen `edit` or a later one.
    func wait(until edit: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                guard (state.seen.min() ?? edit) < edit else { return true }
                state.waiters.append((edit, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
