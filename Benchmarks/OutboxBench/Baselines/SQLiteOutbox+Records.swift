import Foundation
import Outbox
import OutboxAudit

/// The app's own records beside the SQLite outbox, as a team keeps them: a table of the member's
/// values (`products`), changed in the same transaction as the outbox row that sends the change,
/// and read joined with the record's pending outbox rows for their sync state.
///
/// The table holds one value per record, the member's: there is no server base beneath it, so a
/// refused write cannot be rolled back from it, and nothing says why a record holds its value.
/// All in its favour: it writes and reads less than the engine.
extension SQLiteOutbox {
    static let appSchema = """
        CREATE TABLE IF NOT EXISTS products (id TEXT PRIMARY KEY, value BLOB);
        CREATE INDEX IF NOT EXISTS operations_by_entity ON operations(entity_id);
        """

    /// Statuses of the rows whose change the member's view shows: queued, syncing, pending
    /// approval, conflicted.
    static let pendingList = "0, 1, 2, 8"

    /// A record as the app's table and its pending outbox rows give it.
    struct AppRecord: Sendable {
        var id: String
        var value: Data
        /// Its pending outbox rows, oldest first: their operation ids and statuses.
        var pending: [(operation: Data, status: Int64)]
    }

    /// The app table's prepared statements: writes on the writer's connection, reads on the
    /// reader's (each confined as the outbox's own are).
    final class AppTable: @unchecked Sendable {
        // Why unchecked: as the outbox's own statements, the writes run only on the writer's
        // queue and the reads only under the reader's lock.
        let upsert: SQLiteConnection.Statement
        let delete: SQLiteConnection.Statement
        /// Replaces the payload of the entity's newest unsent row of a type: coalescing, as the
        /// engine's coalescing types do.
        let coalesce: SQLiteConnection.Statement
        let record: SQLiteConnection.Statement
        let page: SQLiteConnection.Statement

        init(writer: SQLiteConnection, reader: SQLiteConnection) throws {
            upsert = try writer.prepare("INSERT INTO products (id, value) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET value = excluded.value")
            delete = try writer.prepare("DELETE FROM products WHERE id = ?")
            coalesce = try writer.prepare("""
                UPDATE operations SET payload = ?1, summary = ?2, changed_at = ?3
                WHERE seq = (SELECT seq FROM operations WHERE entity_id = ?4 AND operation_type = ?5 AND status = 0 AND attempts = 0
                             ORDER BY seq DESC LIMIT 1)
                RETURNING seq
                """)
            record = try reader.prepare("""
                SELECT p.id, p.value, o.id, o.status FROM products p
                LEFT JOIN operations o ON o.entity_id = p.id AND o.status IN (\(SQLiteOutbox.pendingList))
                WHERE p.id = ? ORDER BY o.seq
                """)
            page = try AppTable.preparePage(reader)
        }

        /// A page of the app's table, in id order after `?1`, at most `?2` records, joined with
        /// each record's pending rows.
        static func preparePage(_ connection: SQLiteConnection) throws -> SQLiteConnection.Statement {
            try connection.prepare("""
                SELECT p.id, p.value, o.id, o.status FROM (SELECT id, value FROM products WHERE id > ?1 ORDER BY id LIMIT ?2) p
                LEFT JOIN operations o ON o.entity_id = p.id AND o.status IN (\(SQLiteOutbox.pendingList))
                ORDER BY p.id, o.seq
                """)
        }

        /// The records of a statement's rows (`id, value, operation id, status`), one per id.
        static func records(_ statement: SQLiteConnection.Statement) throws -> [AppRecord] {
            var records: [AppRecord] = []
            while try statement.step() {
                let id = statement.text(0)
                if records.last?.id != id {
                    records.append(AppRecord(id: id, value: statement.blob(1), pending: []))
                }
                if !statement.isNull(2) {
                    records[records.count - 1].pending.append((statement.blob(2), statement.int(3)))
                }
            }
            return records
        }
    }

    /// Inserts a queued row and makes each of its record changes in the app's table, in one
    /// transaction; returns once committed (flushed for `.full`). With `coalescing`, the entity's
    /// unsent row of the same type takes the new payload instead of a new row being inserted.
    func enqueue(_ request: OutboxRequest, changing changes: [RecordChange], coalescing: Bool = false,
                 id: OperationID = OperationID(), at now: Date = Date()) async throws {
        guard let app else { preconditionFailure("the SQLite outbox was opened without its app table") }
        try await onWriter {
            try self.writer.transaction {
                for change in changes {
                    if let value = change.value {
                        try app.upsert.bind([.text(change.key.id), .blob(value)]).run()
                    } else {
                        try app.delete.bind([.text(change.key.id)]).run()
                    }
                }
                if coalescing, let entity = request.entityID {
                    let statement = try app.coalesce.bind([
                        .blob(request.payload), .text(request.summary), .real(now.timeIntervalSinceReferenceDate),
                        .text(entity), .text(request.operationType),
                    ])
                    let replaced = try statement.step()
                    try statement.run()
                    if replaced { return }
                }
                try self.insertRow(request, id: id, status: .queued, at: now)
            }
        }
    }

    /// One record's value and its pending rows; `nil` when the app's table has none.
    func record(_ id: String) throws -> AppRecord? {
        guard let app else { preconditionFailure("the SQLite outbox was opened without its app table") }
        return try readLock.withLock {
            try AppTable.records(try app.record.bind([.text(id)])).first
        }
    }

    /// A page of the app's table, in id order after `after`, at most `limit` records, each with
    /// its pending rows: the join a team writes for a list with sync badges.
    func records(after: String? = nil, limit: Int) throws -> [AppRecord] {
        guard let app else { preconditionFailure("the SQLite outbox was opened without its app table") }
        return try readLock.withLock {
            try AppTable.records(try app.page.bind([.text(after ?? ""), .integer(Int64(limit))]))
        }
    }

    /// Fills the outbox and the app's table in one transaction (fixtures only: not a measured path).
    func bulkInsert(_ rows: [(id: OperationID, request: OutboxRequest, status: OutboxStatus)], records: [(id: String, value: Data)],
                    at now: Date = Date()) throws {
        guard let app else { preconditionFailure("the SQLite outbox was opened without its app table") }
        try queue.sync {
            try writer.transaction {
                for (id, request, status) in rows {
                    try insertRow(request, id: id, status: Status(status), at: now)
                }
                for (id, value) in records {
                    try app.upsert.bind([.text(id), .blob(value)]).run()
                }
            }
        }
    }

    /// A reader of pages on a connection of its own, as each observation of a list re-reads its
    /// page after a commit (GRDB's `ValueObservation` on a `DatabasePool`).
    final class PageReader: @unchecked Sendable {
        // Why unchecked: the connection and its statement are confined to `lock`.
        private let lock = NSLock()
        private let connection: SQLiteConnection
        private let page: SQLiteConnection.Statement

        init(path: String) throws {
            connection = try SQLiteConnection(path: path)
            page = try AppTable.preparePage(connection)
        }

        func records(after: String? = nil, limit: Int) throws -> [AppRecord] {
            try lock.withLock {
                try AppTable.records(try page.bind([.text(after ?? ""), .integer(Int64(limit))]))
            }
        }
    }
}
