import CSQLite
import Foundation

/// A thin, synchronous handle on one SQLite connection: the baseline's only contact with C.
///
/// Not thread-safe by itself: ``SQLiteOutbox`` confines each connection to one serial queue.
final class SQLiteConnection {
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var message: String
        var description: String { "SQLite error \(code): \(message)" }
    }

    private let handle: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(db)
            throw Failure(code: rc, message: message)
        }
        handle = db
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil))
    }

    func prepare(_ sql: String) throws -> Statement {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil))
        guard let statement else { throw Failure(code: SQLITE_MISUSE, message: "empty statement: \(sql)") }
        return Statement(handle: statement, connection: self)
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` ... `COMMIT`; rolls back when it throws.
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw Failure(code: rc, message: String(cString: sqlite3_errmsg(handle)))
        }
    }

    /// One prepared statement, reused: bind, step, read columns, reset.
    final class Statement {
        private let handle: OpaquePointer
        private let connection: SQLiteConnection

        fileprivate init(handle: OpaquePointer, connection: SQLiteConnection) {
            self.handle = handle
            self.connection = connection
        }

        deinit {
            sqlite3_finalize(handle)
        }

        /// Binds `values` to the parameters in order, after clearing the previous run.
        @discardableResult
        func bind(_ values: [Value]) throws -> Statement {
            try connection.check(sqlite3_reset(handle))
            try connection.check(sqlite3_clear_bindings(handle))
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                switch value {
                case .null:
                    try connection.check(sqlite3_bind_null(handle, index))
                case .integer(let number):
                    try connection.check(sqlite3_bind_int64(handle, index, number))
                case .real(let number):
                    try connection.check(sqlite3_bind_double(handle, index, number))
                case .text(let text):
                    try connection.check(sqlite3_bind_text(handle, index, text, -1, transient))
                case .blob(let bytes):
                    try bytes.withUnsafeBytes { raw in
                        try connection.check(sqlite3_bind_blob(handle, index, raw.baseAddress, Int32(raw.count), transient))
                    }
                }
            }
            return self
        }

        /// Steps once: `true` when a row is ready to read.
        func step() throws -> Bool {
            let rc = sqlite3_step(handle)
            try connection.check(rc)
            return rc == SQLITE_ROW
        }

        /// Ends a run early, so that the statement holds no read open (the next ``bind(_:)`` resets
        /// it too).
        func reset() {
            sqlite3_reset(handle)
        }

        /// Steps to the end, for statements that return nothing.
        func run() throws {
            while try step() {}
        }

        func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
        func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

        func text(_ column: Int32) -> String {
            guard let bytes = sqlite3_column_text(handle, column) else { return "" }
            return String(cString: bytes)
        }

        func blob(_ column: Int32) -> Data {
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
            return Data(bytes: bytes, count: count)
        }
    }

    enum Value {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob(Data)

        static func optional(_ text: String?) -> Value { text.map(Value.text) ?? .null }
    }
}

/// SQLite copies bound values at once (`SQLITE_TRANSIENT`).
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
