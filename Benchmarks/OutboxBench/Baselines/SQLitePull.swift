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
/// tier (the engine's default tier, which flushes each commit). It keeps no history of what
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
