import Foundation
import Outbox
import OutboxAudit
import OutboxWire
import Synchronization

/// Scenario 14.7's resnapshot, measured in a fresh child process (`outbox-bench --probe
/// pull-resnapshot-live <dir>`): the journal of ``PullResnapshot`` copied, then pulled over
/// loopback while its writes meet no signal, as 14.3's probe does, with the member at work
/// throughout: a reader reads a record every 100 ms (a synced one and one with a pending edit in
/// turn), and a writer saves an edit of another product every 250 ms.
///
/// Every read must find its record with a base and the member's value, the synced record's base
/// never going back (the old generation's until the swap, the new one's after); every save must
/// land. Afterwards the 50 pending edits and every edit saved meanwhile are still pending, each
/// shown over the new base. Prints one ``Measurement`` as a JSON line.
enum ResnapshotProbe {
    struct Measurement: Codable, Sendable {
        var seconds: Double
        var pages: Int
        /// How far `RssAnon` rose above its value before the pull, at its highest and at the end, in KiB.
        var anonymousPeakKiB: Double
        var anonymousEndKiB: Double
        /// The reader's reads, from just before the pull starts to its end (not the check before it,
        /// nor the one after), their latencies in µs.
        var reads: Int
        var readP50: Double
        var readP99: Double
        var readMax: Double
        /// The synced record's base: how many times the reads saw it change (the swap: 1).
        var baseChanges: Int
        /// The saves made during the pull, their latencies in ms.
        var saves: Int
        var saveP50: Double
        var saveP99: Double
        var saveMax: Double
        /// Writes pending after the pull: the 50, and the saves.
        var pendingAfter: Int
    }

    /// The synced record the reader reads.
    static let readSynced = 2

    static func run(directory: URL) -> Int32 {
        PullProbe.child("resnapshot probe") { try await measure(directory: directory) }
    }

    /// What the reader saw.
    private struct Reads {
        var nanoseconds: [Double] = []
        var baseSeqs: [UInt64] = []
        var failure: String?
    }

    private static func measure(directory: URL) async throws -> Measurement {
        let feed = try JSONDecoder().decode(PullProbe.Feed.self, from: Data(contentsOf: directory.appendingPathComponent("feed.json")))
        let store = directory.appendingPathComponent("store-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: store) }
        try FileManager.default.copyItem(at: directory.appendingPathComponent("journal"), to: store)
        var configuration = Workload.configuration(durability: .full, lanes: 1)
        configuration.pull = PullConfiguration(pageSize: PullFeed.pageSize, businesses: [Workload.businessID], maxPagesPerPass: 100_000,
                                               summaryIntervalSeconds: nil)
        // A generous timeout: with 30 s, a run on two loaded cores had its pull stopped as
        // offline before its first page (the test server sorts the million once for the
        // snapshot's first page).
        let transport = WritesMeetNoSignal(inner: URLSessionTransport(baseURL: URL(string: feed.url)!, timeoutSeconds: 600))
        let outbox = try Outbox(directory: store, transport: transport, configuration: configuration)
        defer { outbox.close() }

        let edited = PullResnapshot.editedProducts(records: feed.records, pending: PullResnapshot.pendingEdits)
        let pendingKey = Workload.productKey(edited[1])
        let syncedKey = Workload.productKey(readSynced)
        let syncedID = Data(Workload.stableID(readSynced).utf8)
        // Reads and saves run until the pull is done.
        let done = Atomic<Bool>(false)
        let reads = Mutex(Reads())
        let readerDone = DispatchSemaphore(value: 0)
        @Sendable func read(_ index: Int) {
            let synced = index % 2 == 0
            var record: LocalRecord?
            var failure: String?
            let nanoseconds = Stopwatch.time {
                do { record = try outbox.record(synced ? syncedKey : pendingKey) } catch { failure = "a read failed: \(error)" }
            }
            if failure == nil {
                if let record, let base = record.server, base.value != nil, let value = record.value {
                    if synced, value.range(of: syncedID) == nil || record.sync.isSynced == false {
                        failure = "the synced record read \(record)"
                    } else if !synced, value != Workload.productValue(edited[1], edit: 1) || record.sync.pending.count != 1 {
                        failure = "the edited record does not show its pending edit: \(record)"
                    }
                    reads.withLock { reads in
                        if synced { reads.baseSeqs.append(base.seq.rawValue) }
                    }
                } else {
                    failure = "a read found no base and value: \(String(describing: record))"
                }
            }
            reads.withLock { reads in
                reads.nanoseconds.append(nanoseconds)
                if reads.failure == nil { reads.failure = failure }
            }
        }
        // One read before the pull: the old base. The reader's first read is made before the
        // pull starts too, so that however short the pull, one read is made beside it.
        read(0)
        let readerStarted = DispatchSemaphore(value: 0)
        Thread {
            var index = 1
            while !done.load(ordering: .acquiring) {
                read(index)
                if index == 1 { readerStarted.signal() }
                index += 1
                usleep(100_000)
            }
            readerDone.signal()
        }.start()
        readerStarted.wait()
        let writer = Task { () throws -> [Double] in
            var latencies: [Double] = []
            var index = 0
            while !done.load(ordering: .acquiring) {
                // Odd products: none of the 50 edited (multiples of the catalogue's fiftieth), nor the one read.
                let number = 2 * index + 1
                guard number < feed.records else { break }
                latencies.append(try await Stopwatch.time {
                    _ = try await outbox.enqueue(Workload.productUpdate(number, edit: 1),
                                                 changing: [.put(Workload.productKey(number), Workload.productValue(number, edit: 1))])
                })
                index += 1
                try await Task.sleep(nanoseconds: 250_000_000)
            }
            return latencies
        }

        // Every base the snapshot stages comes with an event after this one.
        let seqBefore = try outbox.lastSeq()
        let baseline = Double(Probe.status("RssAnon") ?? 0)
        let sampler = AnonymousMemorySampler()
        Thread { sampler.sample() }.start()
        let start = Stopwatch.now()
        let report: Outbox.FeedReport?
        do {
            report = try await outbox.pull().feed(Workload.businessID)
        } catch {
            done.store(true, ordering: .releasing)
            readerDone.wait()
            _ = try? await writer.value
            _ = sampler.stop()
            throw error
        }
        let elapsed = Stopwatch.now() - start
        done.store(true, ordering: .releasing)
        readerDone.wait()
        let saves = try await writer.value
        let peak = sampler.stop()
        let end = Double(Probe.status("RssAnon") ?? 0)
        guard let report else { throw BenchmarkFailure(description: "the pull did not pull \(Workload.businessID)") }
        guard report.stoppedBy == nil, report.reachedEnd else { throw BenchmarkFailure(description: "the resnapshot's pull: \(report)") }

        // One read after: the new base (the snapshot's stage).
        read(0)
        let seen = reads.withLock { $0 }
        if let failure = seen.failure { throw BenchmarkFailure(description: "during the resnapshot: \(failure)") }
        guard seen.nanoseconds.count > 2 else { throw BenchmarkFailure(description: "no read during the resnapshot") }
        let changes = zip(seen.baseSeqs, seen.baseSeqs.dropFirst()).filter { $0 != $1 }.count
        guard zip(seen.baseSeqs, seen.baseSeqs.dropFirst()).allSatisfy({ $0 <= $1 }), changes == 1,
              let last = seen.baseSeqs.last, last > seqBefore.rawValue else {
            throw BenchmarkFailure(description: "the synced record's base went \(seen.baseSeqs): not the old one, then the new one once")
        }
        let pendingAfter = try check(outbox, feed: feed, edited: edited, saved: saves.count, seqBefore: seqBefore)
        let readStatistics = Statistics(Array(seen.nanoseconds.dropFirst().dropLast()).map { $0 / 1e3 })
        let saveStatistics = Statistics(saves.isEmpty ? [0] : saves.map { $0 / 1e6 })
        return Measurement(
            seconds: Double(elapsed) / 1e9, pages: report.pagesApplied,
            anonymousPeakKiB: max(0, max(peak, end) - baseline), anonymousEndKiB: max(0, end - baseline),
            reads: readStatistics.count, readP50: readStatistics.median, readP99: readStatistics.percentile(99), readMax: readStatistics.max,
            baseChanges: changes,
            saves: saves.count, saveP50: saveStatistics.median, saveP99: saveStatistics.percentile(99), saveMax: saveStatistics.max,
            pendingAfter: pendingAfter
        )
    }

    /// After the resnapshot: every record of the snapshot in the base, the cursor past the old
    /// feed's end, the 50 edits and the `saved` ones still pending, each shown over the new base.
    private static func check(_ outbox: Outbox, feed: PullProbe.Feed, edited: [Int], saved: Int, seqBefore: JournalSequence) throws -> Int {
        let live = try PullCheck.liveRecords(outbox)
        let cursor = try outbox.feedCursor(business: Workload.businessID)
        guard live == feed.records + 1, let cursor, cursor > (try FeedPosition(text: feed.cursor)) else {
            throw BenchmarkFailure(description: "after the resnapshot the engine holds \(live) records at cursor \(cursor?.text ?? "none")")
        }
        for number in edited + (0..<saved).map({ 2 * $0 + 1 }) {
            let record = try outbox.record(Workload.productKey(number))
            guard let record, record.value == Workload.productValue(number, edit: 1), record.sync.pending.count == 1,
                  let base = record.server, base.value != nil, base.seq > seqBefore
            else {
                throw BenchmarkFailure(description: "product \(number)'s pending edit is not shown over the new base: \(String(describing: record))")
            }
        }
        let pending = try outbox.badgeCount()
        guard pending == edited.count + saved else {
            throw BenchmarkFailure(description: "\(pending) writes pending after the resnapshot, not \(edited.count) + \(saved)")
        }
        return pending
    }
}
