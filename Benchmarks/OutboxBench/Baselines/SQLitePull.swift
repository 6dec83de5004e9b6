import Foundation
import Outbox
import OutboxAudit
import OutboxWire

/// The pull a team would build on SQLite: the app's table of the server's records and a row per
/// feed holding its cursor, one transaction per page.
///
/// A page is checked as the protocol asks of every client (its business, that it starts at the
/// cursor asked, its count and digest), then in one `BEGIN IMMEDIATE` ... `COMMIT` its stored
/// cursor is read (another pull may have moved it), each change upserted only over an older
/// revision (`ON CONFLICT ... DO UPDATE ... WHERE excluded.revision > records.revision`; a
/// tombstone is the row with no value, kept so that an older revision cannot bring the record
/// back), and the cursor row written. WAL, `synchronous=FULL` as the SQLite outbox's `.full`
/// tier (the engine's default tier, which flushes each commit), a busy timeout of 10 s. It keeps no history of what
/// each page brought, and asks nobody about the edits a delete overtakes: both in its favour.
final class SQLitePull {
    static let schema = """
        CREATE TABLE IF NOT EXISTS records (
            business TEXT NOT NULL,
            type TEXT NOT NULL,
            id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            value BLOB,
            PRIMARY KEY (business, type, id)
        );
        CREATE TABLE IF NOT EXISTS feeds (business TEXT PRIMARY KEY, cursor TEXT NOT NULL);
        """

    private let connection: SQLiteConnection
    private let upsert: SQLiteConnection.Statement
    private let readCursor: SQLiteConnection.Statement
    private let writeCursor: SQLiteConnection.Statement
    private let countLive: SQLiteConnection.Statement

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        connection = try SQLiteConnection(path: directory.appendingPathComponent("pull.sqlite").path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        // A page waits for the member's save in hand (scenario 14.6), as a save waits for a page.
        try connection.execute("PRAGMA busy_timeout=10000")
        try connection.execute(Self.schema)
        upsert = try connection.prepare("""
            INSERT INTO records (business, type, id, revision, value) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (business, type, id) DO UPDATE SET revision = excluded.revision, value = excluded.value
            WHERE excluded.revision > records.revision
            """)
        readCursor = try connection.prepare("SELECT cursor FROM feeds WHERE business = ?")
        writeCursor = try connection.prepare("""
            INSERT INTO feeds (business, cursor) VALUES (?, ?) ON CONFLICT (business) DO UPDATE SET cursor = excluded.cursor
            """)
        countLive = try connection.prepare("SELECT COUNT(*) FROM records WHERE business = ? AND value IS NOT NULL")
    }

    /// Applies one page asked from `requested` (`nil`: the feed's start): answers the cursor it
    /// stored, or throws when the page fails its check or the stored cursor is not `requested`.
    @discardableResult
    func apply(_ page: FeedPage, requested: FeedPosition?) throws -> FeedPosition {
        guard page.business == Workload.businessID, page.from == requested ?? .start(of: page.from.epoch),
              page.count == page.changes.count, page.computedDigest == page.digest
        else {
            throw BenchmarkFailure(description: "SQLite pull: the page from \(page.from) fails its check")
        }
        try connection.transaction {
            try readCursor.bind([.text(page.business)])
            let stored = try readCursor.step() ? readCursor.text(0) : nil
            readCursor.reset()
            guard stored == requested?.text else {
                throw BenchmarkFailure(description: "SQLite pull: the stored cursor is \(stored ?? "none"), the page was asked from \(requested?.text ?? "none")")
            }
            for change in page.changes {
                try upsert.bind([.text(page.business), .text(change.type), .text(change.id), .integer(Int64(change.revision)),
                                 change.record.map(SQLiteConnection.Value.blob) ?? .null]).run()
            }
            try writeCursor.bind([.text(page.business), .text(page.cursor.text)]).run()
        }
        return page.cursor
    }

    /// The bytes on disk of the client in `directory`: its database and its write-ahead log (the
    /// log's bytes are the database's until a checkpoint moves them in).
    static func fileBytes(_ directory: URL) -> Int {
        let database = directory.appendingPathComponent("pull.sqlite")
        return FileSize.of(database) + FileSize.of(URL(fileURLWithPath: database.path + "-wal"))
    }

    /// The feed's stored cursor; `nil` when never pulled.
    func cursor() throws -> FeedPosition? {
        try readCursor.bind([.text(Workload.businessID)])
        defer { readCursor.reset() }
        guard try readCursor.step() else { return nil }
        return try FeedPosition(text: readCursor.text(0))
    }

    /// How many of the business's records are live (not tombstones).
    func liveRecords() throws -> Int {
        try countLive.bind([.text(Workload.businessID)])
        defer { countLive.reset() }
        guard try countLive.step() else { return 0 }
        return Int(countLive.int(0))
    }
}

/// The member's side of the SQLite client while it pulls (scenario 14.6), on a connection of
/// its own to the same database: a save is the write's row in the outbox table and the member's
/// value in its edits table (the record's row as the member sees it over the server's), in one
/// `BEGIN IMMEDIATE` ... `COMMIT` (WAL, `synchronous=FULL`, a busy timeout of 10 s: a save
/// waits for the pull's transaction in hand); a screen's read is the record's row and a page of
/// 100 of one type, each with the member's value over the server's. One edit row a record (the
/// newest value): the engine keeps every pending write of a record in its view, in the client's
/// favour.
///
/// Not thread-safe: one thread uses a member's connection.
final class SQLiteMember {
    static let schema = """
        CREATE TABLE IF NOT EXISTS writes (
            id INTEGER PRIMARY KEY,
            business TEXT NOT NULL,
            type TEXT NOT NULL,
            record TEXT NOT NULL,
            method TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            payload BLOB NOT NULL,
            state TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS edits (
            business TEXT NOT NULL,
            type TEXT NOT NULL,
            id TEXT NOT NULL,
            write INTEGER NOT NULL,
            value BLOB,
            PRIMARY KEY (business, type, id)
        );
        """

    private let connection: SQLiteConnection
    private let insertWrite: SQLiteConnection.Statement
    private let upsertEdit: SQLiteConnection.Statement
    private let readRecord: SQLiteConnection.Statement
    private let readPage: SQLiteConnection.Statement
    private let countWrites: SQLiteConnection.Statement

    /// Opens the client's database in `directory` (``SQLitePull`` created it, in WAL mode).
    init(directory: URL) throws {
        connection = try SQLiteConnection(path: directory.appendingPathComponent("pull.sqlite").path)
        try connection.execute("PRAGMA busy_timeout=10000")
        try connection.execute("PRAGMA synchronous=FULL")
        try connection.execute(Self.schema)
        insertWrite = try connection.prepare("""
            INSERT INTO writes (business, type, record, method, endpoint, payload, state) VALUES (?, ?, ?, 'PUT', ?, ?, 'queued')
            RETURNING id
            """)
        upsertEdit = try connection.prepare("""
            INSERT INTO edits (business, type, id, write, value) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (business, type, id) DO UPDATE SET write = excluded.write, value = excluded.value
            """)
        readRecord = try connection.prepare("""
            SELECT r.revision, COALESCE(e.value, r.value) FROM records r
            LEFT JOIN edits e ON e.business = r.business AND e.type = r.type AND e.id = r.id
            WHERE r.business = ? AND r.type = ? AND r.id = ?
            """)
        readPage = try connection.prepare("""
            SELECT r.id, r.revision, COALESCE(e.value, r.value) FROM records r
            LEFT JOIN edits e ON e.business = r.business AND e.type = r.type AND e.id = r.id
            WHERE r.business = ? AND r.type = ? AND r.id > ? AND r.value IS NOT NULL ORDER BY r.id LIMIT ?
            """)
        countWrites = try connection.prepare("SELECT COUNT(*) FROM writes WHERE business = ?")
    }

    /// Saves the member's `value` of `key` with the write that sends it, in one transaction.
    func save(_ key: RecordKey, endpoint: String, value: Data) throws {
        try connection.transaction {
            try insertWrite.bind([.text(key.business), .text(key.type), .text(key.id), .text(endpoint), .blob(value)])
            guard try insertWrite.step() else { throw BenchmarkFailure(description: "SQLite member: the write's insert returned no id") }
            let write = insertWrite.int(0)
            insertWrite.reset()
            try upsertEdit.bind([.text(key.business), .text(key.type), .text(key.id), .integer(write), .blob(value)]).run()
        }
    }

    /// The record's value as the member sees it; `nil` when the client holds no server row of it.
    func record(_ key: RecordKey) throws -> Data? {
        try readRecord.bind([.text(key.business), .text(key.type), .text(key.id)])
        defer { readRecord.reset() }
        guard try readRecord.step() else { return nil }
        return readRecord.blob(1)
    }

    /// The first `limit` live records of `type` after the id `after`, in id order: each id and
    /// the member's value.
    func page(business: String, type: String, after: String, limit: Int) throws -> [(id: String, value: Data)] {
        try readPage.bind([.text(business), .text(type), .text(after), .integer(Int64(limit))])
        defer { readPage.reset() }
        var rows: [(id: String, value: Data)] = []
        while try readPage.step() { rows.append((readPage.text(0), readPage.blob(2))) }
        return rows
    }

    /// The writes saved of `business`.
    func writes(business: String) throws -> Int {
        try countWrites.bind([.text(business)])
        defer { countWrites.reset() }
        guard try countWrites.step() else { return 0 }
        return Int(countWrites.int(0))
    }
}
