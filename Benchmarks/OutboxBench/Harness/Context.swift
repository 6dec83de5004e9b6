import Foundation
import ThrowawayPostgres
import Synchronization

/// How big each scenario's work is: the sizes, or tiny ones for `--quick`.
struct Sizes: Sendable {
    /// Enqueues timed one after another (scenario 1).
    var sequentialEnqueues: Int
    /// Enqueues each producer makes (scenario 2), for 16 and for 64 producers.
    var enqueuesPer16Producer: Int
    var enqueuesPer64Producer: Int
    /// Operations taken through their whole lifecycle (scenarios 3 and 8).
    var lifecycleOperations: Int
    /// Events in the large journal (scenarios 4 to 6) and in the small one it is compared with.
    var largeJournalEvents: Int
    var smallJournalEvents: Int
    /// Rows waiting on the Sync tab (scenario 7).
    var waitingRows: Int
    /// Claims taken and completed per client count (scenario 10): split evenly over the clients.
    var claims: Int
    /// Writes drained to the loopback server (scenario 11), and the latency added per request.
    var drainedWrites: Int
    var requestLatencySeconds: Double
    /// How many times a fast read is timed per repeat; the median is kept.
    var readIterations: Int
    /// How many times an open is timed per repeat.
    var openIterations: Int
    /// Raw commits timed for a floor.
    var floorCommits: Int
    /// The member's records in the records scenarios' journal (13.3, 13.4): the page queried.
    var records: Int
    /// How many times the page of records is timed per repeat.
    var recordQueryIterations: Int
    /// The records of the record stream's page (13.5), and the commits timed with and without its
    /// subscribers.
    var streamRecords: Int
    var streamCommits: Int
    /// The records of the pull's feed (14.1, and the base 14.2 applies its pages over), and the
    /// pages of changes 14.2 times per repeat.
    var pullRecords: Int
    var pullPagesTimed: Int
    /// The records of 14.5's feed, of several types.
    var businessRecords: Int
    /// How long 14.4's writers and reader run per repeat, in seconds, and the changes in the feed
    /// before its first repeat.
    var feedReadSeconds: Double
    var feedBacklog: Int
    /// The records of 13.6's type (its first pages queried), and how many times each page is
    /// timed per repeat.
    var millionRecords: Int = 1_000_000
    var millionQueryIterations: Int = 200
    /// The records of 14.7's resnapshot.
    var resnapshotMillion: Int = 1_000_000

    static let full = Sizes(
        sequentialEnqueues: 1000, enqueuesPer16Producer: 200, enqueuesPer64Producer: 100,
        lifecycleOperations: 10_000, largeJournalEvents: 1_000_000, smallJournalEvents: 10_000,
        waitingRows: 10_000, claims: 1600, drainedWrites: 200, requestLatencySeconds: 0.05, readIterations: 500, openIterations: 5, floorCommits: 500,
        records: 1000, recordQueryIterations: 40, streamRecords: 100, streamCommits: 200,
        pullRecords: 100_000, pullPagesTimed: 40, businessRecords: 1_000_000, feedReadSeconds: 10, feedBacklog: 10_000
    )

    static let quick = Sizes(
        sequentialEnqueues: 20, enqueuesPer16Producer: 2, enqueuesPer64Producer: 2,
        lifecycleOperations: 100, largeJournalEvents: 3000, smallJournalEvents: 600,
        waitingRows: 100, claims: 32, drainedWrites: 20, requestLatencySeconds: 0.002, readIterations: 5, openIterations: 1, floorCommits: 10,
        records: 50, recordQueryIterations: 2, streamRecords: 10, streamCommits: 5,
        pullRecords: 600, pullPagesTimed: 3, businessRecords: 3000, feedReadSeconds: 0.5, feedBacklog: 200,
        millionRecords: 3000, millionQueryIterations: 3, resnapshotMillion: 2000
    )
}

/// What every scenario shares in one run: the sizes, a directory for its files, and the journals
/// that are expensive to build (built once, on first use).
final class Context: Sendable {
    let options: Options
    let sizes: Sizes
    /// Everything a run writes lives under here and is removed at the end.
    let root: URL
    let fixtures: Fixtures
    private let counter = Atomic<Int>(0)
    private let cluster = Mutex<TemporaryPostgresCluster?>(nil)

    init(options: Options, root: URL) {
        self.options = options
        self.sizes = options.quick ? .quick : .full
        self.root = root
        self.fixtures = Fixtures()
    }

    var quick: Bool { options.quick }

    /// A new, empty directory under the root, named after `label`.
    func freshDirectory(_ label: String) throws -> URL {
        let number = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let url = root.appendingPathComponent("\(label)-\(number)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A durable PostgreSQL cluster of the run's own, started on first use and stopped by
    /// ``stopServices()``. Its data goes under the run's directory, on the disk measured; in
    /// `--quick` mode, which measures nothing, under the system's temporary directory, which the
    /// `postgres` user can always reach.
    func postgres() throws -> TemporaryPostgresCluster {
        try cluster.withLock { cluster in
            if let cluster { return cluster }
            progress("starting a PostgreSQL cluster (initdb, fsync on, synchronous_commit on)")
            let started = try TemporaryPostgresCluster.start(durable: true, dataParent: quick ? nil : root)
            cluster = started
            return started
        }
    }

    /// Stops what the scenarios started (the PostgreSQL cluster), before the run's directory goes.
    func stopServices() {
        fixtures.stopServers()
        cluster.withLock { cluster in
            cluster?.stop()
            cluster = nil
        }
    }

    /// Removes what a repeat wrote.
    func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    /// Tells the person watching what is happening (stderr, so `--json` stays clean).
    func progress(_ message: String) {
        FileHandle.standardError.write(Data("  \(message)\n".utf8))
    }
}
