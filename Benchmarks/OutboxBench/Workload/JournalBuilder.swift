import Foundation
import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting

/// Writes a large journal fast: the engine's own records, then the engine's own rebuild.
///
/// The events are encoded with the engine's `RecordCodec` and appended to the `events` database
/// in transactions of 50,000, with `meta` holding the format version and the account but no
/// projection version. The first `Outbox` open then finds the projections missing and rebuilds
/// every one of them from the events with the engine's fold, which refuses any illegal
/// transition: the result is a valid journal, as if the engine had written it, only faster.
///
/// The history it holds: one `journalOpened`, then operations whose attempts trail their enqueues
/// by 32 operations. Nine in ten are accepted at the first attempt (3 events); one in ten meets a
/// 503 first and is accepted at the second (5 events); one in a thousand is rejected with a 422 and
/// then discarded by the member (4 events). The last ~100 operations are only enqueued: they wait
/// on the Sync tab, the same rows whatever the journal's length.
struct JournalBuilder {
    /// What was built.
    struct Built: Sendable {
        var directory: URL
        var events: Int
        var operations: Int
        /// An operation from the middle of the journal with a 5-event history, and its seqs.
        var sample: OperationID
        var sampleSeqs: [UInt64]
        /// Rows waiting on the Sync tab: the queued tail.
        var waitingRows: Int
        /// The same operations in a SQLite outbox, each row in its final status.
        var sqliteDirectory: URL
    }

    private enum Fate {
        case accepted
        case retriedThenAccepted
        case rejected
        case waiting

        init(_ number: Int) {
            if number % 1000 == 999 { self = .rejected } else if number % 10 == 3 { self = .retriedThenAccepted } else { self = .accepted }
        }

        var eventCount: Int {
            switch self {
            case .accepted: 3
            case .rejected: 4
            case .retriedThenAccepted: 5
            case .waiting: 1
            }
        }

        var status: OutboxStatus {
            switch self {
            case .accepted, .retriedThenAccepted: .synced
            case .rejected: .discarded
            case .waiting: .queued
            }
        }
    }

    private static let chunk = 50_000
    private static let trailingOperations = 32
    private static let waitingTail = 100
    private static let start = Date(timeIntervalSinceReferenceDate: 820_000_000)

    private let environment: LMDBEnvironment
    private let events: LMDBDatabase
    private var buffer: [(key: [UInt8], record: [UInt8])] = []
    private var seq: UInt64 = 0
    private var sampleNumber: Int
    private var sample = OperationID()
    private var sampleSeqs: [UInt64] = []
    /// Every operation in journal order, with how it ends.
    private var operations: [(id: OperationID, fate: Fate)] = []

    /// Builds a journal of exactly `eventCount` events in `directory`, rebuilds its projections by
    /// opening it once, and fills a SQLite outbox with the same operations beside it.
    static func build(in directory: URL, events eventCount: Int) async throws -> Built {
        precondition(eventCount >= 4 * waitingTail, "a journal this small has no room for its history")
        let journal = directory.appendingPathComponent("journal")
        var builder = try JournalBuilder(directory: journal, sampleNumber: eventCount / 7 / 10 * 10 + 3)
        try builder.write(eventCount)
        builder.environment.close()

        // The engine's first open rebuilds every projection from the events.
        let outbox = try Workload.openOutbox(journal)
        let waiting = try outbox.badgeCount()
        let events = Int(try outbox.lastSeq().rawValue)
        outbox.close()

        let sqliteDirectory = directory.appendingPathComponent("sqlite")
        let sqlite = try SQLiteOutbox(directory: sqliteDirectory, durability: .full)
        try sqlite.bulkInsert(builder.operations.enumerated().lazy.map { ($0.element.id, Workload.request($0.offset), $0.element.fate.status) })
        return Built(
            directory: journal, events: events, operations: builder.operations.count, sample: builder.sample,
            sampleSeqs: builder.sampleSeqs, waitingRows: waiting, sqliteDirectory: sqliteDirectory
        )
    }

    private init(directory: URL, sampleNumber: Int) throws {
        environment = try LMDBEnvironment.open(
            directory: directory,
            options: LMDBEnvironment.Options(syncOnCommit: false, initialMapSizeBytes: 1 << 30, maxMapSizeBytes: 8 << 30)
        )
        let meta = try environment.openDatabase("meta")
        events = try environment.openDatabase("events")
        self.sampleNumber = sampleNumber
        try environment.write { txn in
            try txn.put(meta, key: Array("format-version".utf8), value: UInt32(RecordCodec.formatVersion).bigEndianByteArray)
            try txn.put(meta, key: Array("account".utf8), value: Array(Workload.account.utf8))
        }
    }

    private mutating func write(_ eventCount: Int) throws {
        try append(nil, .journalOpened(JournalOpened(formatVersion: RecordCodec.formatVersion, engineVersion: Outbox.engineVersion, appVersion: nil)))
        var trailing: [(OperationID, Fate)] = []
        var pendingEvents = 0
        var number = 0
        // Whole lifecycles while they fit, leaving room for the waiting tail.
        while Int(seq) + pendingEvents + Fate(number).eventCount + Self.waitingTail <= eventCount {
            let (id, fate) = try enqueue(number, Fate(number))
            trailing.append((id, fate))
            pendingEvents += fate.eventCount - 1
            number += 1
            if trailing.count > Self.trailingOperations {
                let (oldest, oldestFate) = trailing.removeFirst()
                try attempts(oldest, oldestFate)
                pendingEvents -= oldestFate.eventCount - 1
            }
        }
        for (id, fate) in trailing { try attempts(id, fate) }
        while Int(seq) < eventCount {
            _ = try enqueue(number, .waiting)
            number += 1
        }
        try flush()
        try environment.sync()
    }

    private mutating func enqueue(_ number: Int, _ fate: Fate) throws -> (OperationID, Fate) {
        let id = OperationID()
        if number == sampleNumber { sample = id }
        let request = Workload.request(number)
        try append(id, .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: Workload.account)))
        operations.append((id, fate))
        return (id, fate)
    }

    private mutating func attempts(_ id: OperationID, _ fate: Fate) throws {
        switch fate {
        case .waiting:
            return
        case .accepted:
            try attempt(1, id, TransportResponse.json(201, #"{"revision":"\#(seq)"}"#))
        case .rejected:
            try attempt(1, id, TransportResponse.error(422, code: "validation_failed", message: "This SKU is already in use."))
            try append(id, .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)))
        case .retriedThenAccepted:
            try attempt(1, id, TransportResponse.error(503, code: "unavailable", message: "The server is busy."))
            try attempt(2, id, TransportResponse.json(201, #"{"revision":"\#(seq)"}"#))
        }
    }

    /// `attemptStarted` and `attemptFinished`, classified by the engine's disposition table.
    private mutating func attempt(_ number: Int, _ id: OperationID, _ response: TransportResponse) throws {
        let attempt = AttemptNumber(rawValue: number)
        try append(id, .attemptStarted(AttemptStarted(attempt: attempt, trigger: .drain)))
        let now = moment(seq + 1)
        let classification = DispositionTable.classify(.response(response), policy: .idempotent, now: now)
        let next = classification.disposition == .transientFailure
            ? OperationTypePolicy.RetryPolicy.standard.nextAttempt(afterAttempt: attempt, of: id, now: now, retryAfter: nil) : nil
        try append(id, .attemptFinished(AttemptFinished(attempt: attempt, classification, nextAttemptAt: next)))
    }

    private mutating func append(_ id: OperationID?, _ body: JournalEventBody) throws {
        seq += 1
        let event = JournalEvent(seq: JournalSequence(rawValue: seq), operationID: id, recordedAt: moment(seq), body: body)
        if let id, id == sample { sampleSeqs.append(seq) }
        buffer.append((event.seq.key, RecordCodec.encode(event)))
        if buffer.count >= Self.chunk { try flush() }
    }

    private mutating func flush() throws {
        let batch = buffer
        let events = self.events
        buffer.removeAll(keepingCapacity: true)
        try environment.write { txn in
            for (key, record) in batch { try txn.put(events, key: key, value: record, flags: .append) }
        }
    }

    /// Ten events a second, from a fixed start.
    private func moment(_ seq: UInt64) -> Date {
        Self.start.addingTimeInterval(Double(seq) / 10)
    }
}
