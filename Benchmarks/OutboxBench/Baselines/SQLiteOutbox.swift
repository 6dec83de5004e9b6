import CSQLite
import Dispatch
import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// The alternative a team would otherwise build: a mutable SQLite outbox.
///
/// One row per operation; its status updated in place on every attempt and on every outcome.
/// WAL mode, `synchronous=FULL` for the `.full` tier (`NORMAL` for `.processCrash`: like the
/// engine's tier, a commit survives the app dying, not the power), prepared statements, an index
/// on status, and one transaction per step: enqueue, claim (the attempt starts), finish (its
/// outcome). Writes run on one serial queue, as with GRDB's `DatabaseQueue`; reads use their own
/// connection. It keeps no history and no lane order (every benchmark write has a lane of its own),
/// both in its favour. Opened with `appTable`, it also holds the app's own table of records,
/// written in the outbox row's transaction (see `SQLiteOutbox+Records.swift`).
final class SQLiteOutbox: @unchecked Sendable {
    // Why unchecked: each connection and its statements are confined, the writer's to `queue`
    // and the reader's to `readLock`.

    /// Statuses, stored as small integers.
    enum Status: Int64, CaseIterable {
        case queued = 0, syncing, pendingApproval, failed, blocked, synced, withdrawn, discarded, conflicted, superseded

        init(_ status: OutboxStatus) {
            switch status {
            case .queued: self = .queued
            case .syncing: self = .syncing
            case .pendingApproval: self = .pendingApproval
            case .failed: self = .failed
            case .blocked: self = .blocked
            case .synced: self = .synced
            case .withdrawn: self = .withdrawn
            case .discarded: self = .discarded
            case .conflicted: self = .conflicted
            case .superseded: self = .superseded
            }
        }

        /// Rows on the Sync tab's waiting cards and in the badge.
        static let waitingList = "0, 1, 3, 4"
    }

    /// A row claimed for sending: everything the request needs.
    struct Claim: Sendable {
        var seq: Int64
        var request: TransportRequest
    }

    /// What the Sync tab shows, as the mutable outbox reads it.
    struct SyncTabSummary: Sendable {
        var cards: [(category: String, count: Int, rows: Int)]
        var approvalCount: Int
        var waitingByStatus: [Int64: Int]
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS operations (
            seq INTEGER PRIMARY KEY,
            id BLOB NOT NULL UNIQUE,
            business_id TEXT NOT NULL,
            operation_type TEXT NOT NULL,
            method TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            payload BLOB NOT NULL,
            entity_id TEXT,
            category TEXT NOT NULL,
            entity_label TEXT NOT NULL,
            summary TEXT NOT NULL,
            payload_version INTEGER NOT NULL,
            account TEXT NOT NULL,
            status INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at REAL,
            last_attempt_at REAL,
            last_error_code TEXT,
            last_error_message TEXT,
            server_revision TEXT,
            created_at REAL NOT NULL,
            changed_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS operations_by_status ON operations(status);
        """

    let path: String
    /// Write transactions committed so far: one per step.
    var commits: Int { committed.load(ordering: .relaxed) }
    private let committed = Atomic<Int>(0)
    let queue = DispatchQueue(label: "sqlite-outbox.writer", qos: .userInitiated)
    let writer: SQLiteConnection
    private let insert: SQLiteConnection.Statement
    private let claim: SQLiteConnection.Statement
    private let finish: SQLiteConnection.Statement
    let readLock = NSLock()
    let reader: SQLiteConnection
    private let tabCards: SQLiteConnection.Statement
    private let tabRows: SQLiteConnection.Statement
    private let approvalRows: SQLiteConnection.Statement
    private let waitingByStatus: SQLiteConnection.Statement
    private let badge: SQLiteConnection.Statement
    private let row: SQLiteConnection.Statement
    /// The app's table and its statements, when opened with one.
    let app: AppTable?

    /// Opens (or creates) the outbox database in `directory`; with `appTable`, the app's table of
    /// records beside it (`products`) and an index of the outbox rows by entity, to find a
    /// record's pending rows.
    init(directory: URL, durability: OutboxConfiguration.Durability, appTable: Bool = false) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("outbox.sqlite").path
        writer = try SQLiteConnection(path: path)
        try writer.execute("PRAGMA journal_mode=WAL")
        try writer.execute("PRAGMA synchronous=\(durability == .full ? "FULL" : "NORMAL")")
        try writer.execute(Self.schema)
        if appTable { try writer.execute(Self.appSchema) }
        insert = try writer.prepare("""
            INSERT INTO operations (id, business_id, operation_type, method, endpoint, payload, entity_id, category,
                entity_label, summary, payload_version, account, status, created_at, changed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        claim = try writer.prepare("""
            UPDATE operations SET status = 1, attempts = attempts + 1, last_attempt_at = ?1, changed_at = ?1
            WHERE seq = (SELECT seq FROM operations WHERE status = 0 AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
                         ORDER BY seq LIMIT 1)
            RETURNING seq, id, method, endpoint, payload, business_id, payload_version
            """)
        finish = try writer.prepare("""
            UPDATE operations SET status = ?, next_attempt_at = ?, last_error_code = ?, last_error_message = ?,
                server_revision = COALESCE(?, server_revision), changed_at = ?
            WHERE seq = ?
            """)
        reader = try SQLiteConnection(path: path)
        tabCards = try reader.prepare("""
            SELECT category, COUNT(*), MAX(changed_at) FROM operations
            WHERE status IN (\(Status.waitingList)) GROUP BY category ORDER BY 3 DESC
            """)
        tabRows = try reader.prepare("""
            SELECT id, entity_label, summary, status, changed_at, last_error_code, last_error_message FROM operations
            WHERE status IN (\(Status.waitingList)) AND category = ? ORDER BY changed_at DESC LIMIT ?
            """)
        approvalRows = try reader.prepare("""
            SELECT id, entity_label, summary, status, changed_at FROM operations
            WHERE status = 2 ORDER BY changed_at DESC LIMIT ?
            """)
        waitingByStatus = try reader.prepare("""
            SELECT status, COUNT(*) FROM operations WHERE status IN (\(Status.waitingList), 2) GROUP BY status
            """)
        badge = try reader.prepare("SELECT COUNT(*) FROM operations WHERE status IN (\(Status.waitingList))")
        row = try reader.prepare("SELECT * FROM operations WHERE id = ?")
        app = appTable ? try AppTable(writer: writer, reader: reader) : nil
    }

    // MARK: Writing, one transaction per step

    /// Inserts a queued row; returns once committed (flushed for `.full`).
    func enqueue(_ request: OutboxRequest, id: OperationID = OperationID(), at now: Date = Date()) async throws {
        try await onWriter { try self.insertRow(request, id: id, status: .queued, at: now) }
    }

    /// Claims the oldest due queued row: status `syncing`, one more attempt. `nil` when none is due.
    func claimNext(at now: Date = Date()) async throws -> Claim? {
        try await onWriter {
            try self.writer.transaction {
                let statement = try self.claim.bind([.real(now.timeIntervalSinceReferenceDate)])
                guard try statement.step() else { return nil }
                let id = OperationID(bytes: [UInt8](statement.blob(1)))?.idempotencyKey ?? ""
                let request = TransportRequest(
                    method: statement.text(2),
                    endpoint: statement.text(3),
                    headers: [
                        OutboxHeader.idempotencyKey: id,
                        OutboxHeader.contentType: "application/json",
                        OutboxHeader.payloadVersion: String(statement.int(6)),
                        OutboxHeader.businessID: statement.text(5),
                    ],
                    body: statement.blob(4)
                )
                let seq = statement.int(0)
                try statement.run()
                return Claim(seq: seq, request: request)
            }
        }
    }

    /// Records a claimed row's outcome in place, classified by the engine's own disposition table.
    func finish(_ claim: Claim, result: TransportResult, at now: Date = Date()) async throws {
        let classification = DispositionTable.classify(result, policy: .idempotent, now: now)
        let status = Status(classification.disposition.status)
        let next: SQLiteConnection.Value = status == .queued ? .real(now.timeIntervalSinceReferenceDate + 2) : .null
        try await onWriter {
            try self.writer.transaction {
                try self.finish.bind([
                    .integer(status.rawValue), next, .optional(classification.errorCode),
                    .optional(classification.errorMessage), .optional(classification.serverRevision),
                    .real(now.timeIntervalSinceReferenceDate), .integer(claim.seq),
                ]).run()
            }
        }
    }

    /// Sends every due row with `lanes` workers, each claiming, sending and finishing one row at a
    /// time. Returns how many rows were sent.
    func drain(lanes: Int, transport: any OutboxTransport) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<lanes {
                group.addTask {
                    var sent = 0
                    while let claim = try await self.claimNext() {
                        let result: TransportResult
                        do {
                            result = .response(try await transport.send(claim.request))
                        } catch {
                            result = .noResponse(.other)
                        }
                        try await self.finish(claim, result: result)
                        sent += 1
                    }
                    return sent
                }
            }
            return try await group.reduce(0, +)
        }
    }

    /// Fills the table in one transaction (fixtures only: not a measured path).
    func bulkInsert(_ rows: some Sequence<(id: OperationID, request: OutboxRequest, status: OutboxStatus)>, at now: Date = Date()) throws {
        try queue.sync {
            try writer.transaction {
                for (id, request, status) in rows {
                    try insertRow(request, id: id, status: Status(status), at: now)
                }
            }
        }
    }

    func insertRow(_ request: OutboxRequest, id: OperationID, status: Status, at now: Date) throws {
        let moment = SQLiteConnection.Value.real(now.timeIntervalSinceReferenceDate)
        try insert.bind([
            .blob(Data(id.bytes)), .text(request.businessID), .text(request.operationType), .text(request.method),
            .text(request.endpoint), .blob(request.payload), .optional(request.entityID), .text(request.category),
            .text(request.entityLabel), .text(request.summary), .integer(Int64(request.payloadVersion)),
            .text(Workload.account), .integer(status.rawValue), moment, moment,
        ]).run()
    }

    /// Runs one step, one transaction, on the writer's queue.
    func onWriter<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let result = Result { try body() }
                self.committed.add(1, ordering: .relaxed)
                continuation.resume(with: result)
            }
        }
    }

    // MARK: Reading

    /// The Sync tab: cards of waiting rows by category, newest first, with their counts; the
    /// approval card; the counts the banner needs.
    func syncTab(rowsPerCard: Int = 50) throws -> SyncTabSummary {
        try readLock.withLock {
            var cards: [(category: String, count: Int, rows: Int)] = []
            try tabCards.bind([])
            while try tabCards.step() {
                cards.append((tabCards.text(0), Int(tabCards.int(1)), 0))
            }
            for index in cards.indices {
                try tabRows.bind([.text(cards[index].category), .integer(Int64(rowsPerCard))])
                while try tabRows.step() {
                    _ = (tabRows.blob(0), tabRows.text(1), tabRows.text(2), tabRows.int(3), tabRows.double(4),
                         tabRows.text(5), tabRows.text(6))
                    cards[index].rows += 1
                }
            }
            try approvalRows.bind([.integer(Int64(rowsPerCard))])
            while try approvalRows.step() {
                _ = (approvalRows.blob(0), approvalRows.text(1), approvalRows.text(2), approvalRows.double(4))
            }
            var byStatus: [Int64: Int] = [:]
            try waitingByStatus.bind([])
            while try waitingByStatus.step() {
                byStatus[waitingByStatus.int(0)] = Int(waitingByStatus.int(1))
            }
            return SyncTabSummary(cards: cards, approvalCount: byStatus[Status.pendingApproval.rawValue] ?? 0, waitingByStatus: byStatus)
        }
    }

    /// Queued, syncing, failed and blocked rows.
    func badgeCount() throws -> Int {
        try readLock.withLock {
            try badge.bind([])
            _ = try badge.step()
            let count = Int(badge.int(0))
            try badge.run()
            return count
        }
    }

    /// One row by its id: all the mutable outbox knows of an operation (it keeps no history).
    func row(_ id: OperationID) throws -> Int? {
        try readLock.withLock {
            try row.bind([.blob(Data(id.bytes))])
            guard try row.step() else { return nil }
            let status = Int(row.int(13))
            try row.run()
            return status
        }
    }

    /// How many rows have `status`.
    func count(_ status: OutboxStatus) throws -> Int {
        try readLock.withLock {
            let statement = try reader.prepare("SELECT COUNT(*) FROM operations WHERE status = \(Status(status).rawValue)")
            _ = try statement.step()
            return Int(statement.int(0))
        }
    }

    /// Moves every committed page from the WAL into the database file and truncates the WAL.
    func checkpoint() throws {
        try queue.sync { try writer.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// The database file and its WAL, in bytes.
    var fileBytes: (database: Int, wal: Int) {
        (FileSize.of(URL(fileURLWithPath: path)), FileSize.of(URL(fileURLWithPath: path + "-wal")))
    }
}
