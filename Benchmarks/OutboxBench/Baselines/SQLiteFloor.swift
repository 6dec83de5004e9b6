import Foundation

/// What SQLite itself costs for a durable append, with nothing of an outbox around it: one row
/// of the enqueued record's size inserted per transaction, WAL mode and `synchronous=FULL`, one
/// prepared statement, straight through the C API. The SQLite outbox's own overhead is the
/// distance between it and this.
final class SQLiteFloor {
    private let connection: SQLiteConnection
    private let insert: SQLiteConnection.Statement
    private let record: Data

    init(directory: URL, recordBytes: Int) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        connection = try SQLiteConnection(path: directory.appendingPathComponent("floor.sqlite").path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        try connection.execute("CREATE TABLE records (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        insert = try connection.prepare("INSERT INTO records (body) VALUES (?)")
        record = Data((0..<recordBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    }

    /// `count` transactions of one insert each; answers each one's nanoseconds.
    func inserts(_ count: Int) throws -> [Double] {
        try (0..<count).map { _ in
            try Stopwatch.time {
                try connection.transaction { try insert.bind([.blob(record)]).run() }
            }
        }
    }
}
