import Foundation
import Outbox
import OutboxAudit
import OutboxStorage
import OutboxWire
import IdempotencyClaims
import Synchronization

/// Scenario 13.6's journal: a business's `records` products pulled into the base (one type), and
/// pending edits on the records of its first page, as a phone holds them after a pull of a whole
/// catalogue and a morning's edits; the same in a SQLite outbox with its app table.
///
/// Built fast: the feed's pages are made here (``PullFeed/product(_:edit:)``, served at revision 1,
/// 1,000 changes a page) and applied through the engine's own `apply(_:requested:limit:)`, one
/// commit a page, without HTTP or JSON: the same base rows and `pageApplied` events a pull writes.
/// Of the first 1,000 records in the order of their ids' bytes (the first page of 1,000), by rank:
/// ranks ending in 0 and 1 hold one pending edit, ranks ending in 2 two; the rest are synced. 300
/// records and 400 pending writes in the page of 1,000; 30 and 40 in the first 100.
///
/// Built once a run, on first use, under the run's directory.
struct MillionRecords: Sendable {
    var directory: URL
    var sqliteDirectory: URL
    var records: Int
    /// The ids of the first 1,000 records (fewer when the catalogue is smaller), in key order.
    var firstIDs: [String]

    /// The changes applied a page.
    static let pageChanges = 1_000
    static let firstPage = 1_000

    /// The pending edits of the record at `rank` in key order (among the first 1,000).
    static func edits(rank: Int) -> Int {
        switch rank % 10 {
        case 0, 1: 1
        case 2: 2
        default: 0
        }
    }

    /// Pending writes among the first `count` records in key order.
    static func pendingWrites(first count: Int) -> Int {
        (0..<count).reduce(0) { $0 + edits(rank: $1) }
    }

    private static let built = Mutex<[Int: MillionRecords]>([:])

    /// The journal of `records` products, built on first use in this run.
    static func shared(_ records: Int, context: Context) async throws -> MillionRecords {
        if let journal = built.withLock({ $0[records] }) { return journal }
        context.progress("building \(records) pulled records (pages of \(pageChanges) applied by the engine), "
            + "\(pendingWrites(first: min(records, firstPage))) edits pending on the first \(min(records, firstPage))")
        let directory = try context.freshDirectory("million-records-\(records)")
        var journal: MillionRecords?
        let nanoseconds = try await Stopwatch.time { journal = try await build(in: directory, records: records, context: context) }
        guard let journal else { throw BenchmarkFailure(description: "the journal of \(records) records was not built") }
        context.progress("built in \(TextReport.format(nanoseconds / 1e9)) s, the journal \(TextReport.format(Double(Scenario.directoryBytes(journal.directory)) / 1_048_576)) MiB")
        built.withLock { $0[records] = journal }
        return journal
    }

    static func build(in directory: URL, records: Int, context: Context) async throws -> MillionRecords {
        let journal = directory.appendingPathComponent("journal")
        let outbox = try Workload.openOutbox(journal, durability: .processCrash, transport: WritesMeetNoSignal(inner: nil))
        var from = FeedPosition.start(of: 1)
        var requested: FeedPosition?
        var number = 0
        while number < records {
            let count = min(pageChanges, records - number)
            let changes = (number..<number + count).map { number in
                FeedChange(type: Workload.productType, id: Workload.stableID(number), revision: 1,
                           record: PullFeed.served(PullFeed.product(number), revision: 1))
            }
            let cursor = FeedPosition(epoch: from.epoch, major: from.major + UInt64(count))
            let page = FeedPage(business: Workload.businessID, from: from, cursor: cursor, hasMore: number + count < records, count: count,
                                digest: FeedDigest.page(changes.map(\.digestInput)), limits: FeedHandling.defaultLimits, changes: changes)
            guard case .applied = try await outbox.apply(page, requested: requested, limit: pageChanges) else {
                throw BenchmarkFailure(description: "the million's journal did not apply the page from \(from)")
            }
            requested = cursor
            from = cursor
            number += count
        }
        // The first page's records, in the order of their ids' bytes: the ones edited.
        let first = (0..<records).map { (bytes: Array(Workload.stableID($0).utf8), number: $0) }
            .sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            .prefix(firstPage)
            .map { (id: String(decoding: $0.bytes, as: UTF8.self), number: $0.number) }
        var edited: [(number: Int, edits: Int)] = []
        for (rank, record) in first.enumerated() where edits(rank: rank) > 0 {
            edited.append((record.number, edits(rank: rank)))
            for edit in 1...edits(rank: rank) {
                _ = try await outbox.enqueue(Workload.productUpdate(record.number, edit: edit),
                                             changing: [.put(Workload.productKey(record.number), Workload.productValue(record.number, edit: edit))])
            }
        }
        let page = try outbox.records(RecordQuery(business: Workload.businessID, type: Workload.productType, limit: first.count))
        let pending = page.records.reduce(0) { $0 + $1.sync.pending.count }
        guard page.records.map(\.key.id) == first.map(\.id), page.records.allSatisfy({ $0.server != nil }),
              pending == pendingWrites(first: first.count)
        else {
            throw BenchmarkFailure(description: "the million's first page shows \(page.records.count) records and \(pending) pending writes")
        }
        try outbox.flush()
        outbox.close()

        // The SQLite outbox: the pending edits' rows, and every product's row in the app's table
        // (the member's value), in transactions of 50,000.
        let sqliteDirectory = directory.appendingPathComponent("sqlite")
        let sqlite = try SQLiteOutbox(directory: sqliteDirectory, durability: .full, appTable: true)
        let finalEdit = Dictionary(uniqueKeysWithValues: edited)
        let rows = edited.flatMap { record in
            (1...record.edits).map { (OperationID(), Workload.productUpdate(record.number, edit: $0), OutboxStatus.queued) }
        }
        try sqlite.bulkInsert(rows, records: [])
        var start = 0
        while start < records {
            let end = min(records, start + 50_000)
            try sqlite.bulkInsert([], records: (start..<end).map { number in
                (Workload.stableID(number), Workload.productValue(number, edit: finalEdit[number] ?? 0))
            })
            start = end
        }
        return MillionRecords(directory: journal, sqliteDirectory: sqliteDirectory, records: records, firstIDs: first.map(\.id))
    }
}

/// 13.6's floor: the least the first `count` records of a type and their pending writes need,
/// read straight through `OutboxStorage` (projection layout 7, as ``RecordFloor``): a cursor over
/// the first `count` bases in `records`, one over the `record-writes` entries up to the last of
/// them, and each write's state and `enqueued` event by key, every value touched in place.
final class MillionFloor {
    private let environment: LMDBEnvironment
    private let events: LMDBDatabase
    private let state: LMDBDatabase
    private let records: LMDBDatabase

    init(directory: URL) throws {
        environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        events = try environment.openDatabase("events")
        state = try environment.openDatabase("state")
        records = try environment.openDatabase("records")
    }

    deinit {
        environment.close()
    }

    /// The entries of the first `count` records of `business`'s `type`, in one read transaction.
    func firstPage(business: String, type: String, count: Int) throws -> RecordFloor.Touched {
        try environment.read { txn in
            var touched = RecordFloor.Touched()
            let scope = RecordKey.scopeBytes(business: business, type: type)
            let leading = [UInt8(1)] + scope
            var last: [UInt8] = []
            try txn.scan(records, from: leading) { key, value in
                guard key.starts(with: leading) else { return .stop }
                touched.bases += 1
                touched.bytes += value.count
                guard touched.bases < count else {
                    last = Array(key.dropFirst(leading.count).dropLast())
                    return .stop
                }
                return .next
            }
            // Past the last record's writes: its id, then a byte above the terminator.
            let writesLeading = [UInt8(5)] + scope
            let bound = writesLeading + last + [1]
            var writes: [(state: [UInt8], event: [UInt8])] = []
            try txn.scan(state, from: writesLeading) { key, value in
                guard key.lexicographicallyPrecedes(bound) else { return .stop }
                precondition(value.count == 16, "a damaged record-writes entry")
                writes.append(([1] + Array(value), Array(key.suffix(8))))
                return .next
            }
            for write in writes {
                let stateBytes = try txn.withValue(state, key: write.state) { $0?.count }
                let eventBytes = try txn.withValue(events, key: write.event) { $0?.count }
                guard let stateBytes, let eventBytes else { throw BenchmarkFailure(description: "a pending write's state or event is missing") }
                touched.writes += 1
                touched.bytes += stateBytes + eventBytes
            }
            return touched
        }
    }
}
