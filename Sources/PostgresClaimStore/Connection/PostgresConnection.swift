import CLibPQ
import Foundation

/// One libpq connection: statements with binary parameters and results, one at a time.
///
/// A connection is used by one thread at a time; ``PostgresConnectionPool`` lends it out.
/// Statements run in the connection's transaction if one is open (``PostgresConnectionPool/transaction(_:)``).
public final class PostgresConnection: @unchecked Sendable {
    // Why unchecked: a libpq connection may move between threads but must not be used by two at
    // once. The pool lends each connection to one borrower at a time, and only the borrower calls it.
    private let handle: OpaquePointer
    private var closed = false

    /// Connects with `settings`, blocking until connected or refused.
    /// - Throws: ``PostgresError/Kind/connection`` with libpq's reason.
    public init(_ settings: PostgresConnectionSettings) throws {
        var keywords = ["dbname", "fallback_application_name"]
        var values = [settings.conninfo, "outbox-claims"]
        for parameter in settings.overrides {
            keywords.append(parameter.keyword)
            values.append(parameter.value)
        }
        let connection = Self.withCStrings(keywords) { keywords in
            Self.withCStrings(values) { values in
                // expand_dbname: the first "dbname" is a whole connection string (or URI).
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let connection else { throw PostgresError(.connection, message: "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw PostgresError(.connection, message: "cannot connect to \(settings): \(reason)")
        }
        // Notices (e.g. "relation already exists, skipping") are not errors: keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
    }

    deinit {
        close()
    }

    /// Closes the connection; a transaction still open on it is rolled back by the server.
    public func close() {
        guard !closed else { return }
        closed = true
        PQfinish(handle)
    }

    /// Whether the connection is gone (closed, or broken by the network or the server).
    public var isBroken: Bool {
        closed || PQstatus(handle) != CONNECTION_OK
    }

    /// Whether the connection is idle outside any transaction: fit to lend again.
    var isIdle: Bool {
        !isBroken && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// The server process serving this connection.
    public var backendPID: Int32 {
        PQbackendPID(handle)
    }

    /// Runs one statement with `$1`, `$2`, ... bound to `parameters`.
    /// - Throws: ``PostgresError``: `.server` with the SQLSTATE when the server refused it,
    ///   `.connection` when the connection broke (then nothing of its open transaction committed).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        guard !closed else { throw PostgresError(.connection, message: "the connection was closed") }
        let types = parameters.map(\.typeOID)
        let encoded = parameters.map(\.binary)
        let lengths = encoded.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let result: OpaquePointer? = Self.withBuffers(encoded) { values in
            types.withUnsafeBufferPointer { types in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        PQexecParams(handle, sql, Int32(parameters.count), types.baseAddress, values,
                                     lengths.baseAddress, formats.baseAddress, 1)
                    }
                }
            }
        }
        guard let result else { throw connectionError() }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return Self.rows(of: result)
        default:
            if isBroken { throw connectionError() }
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? String(cString: PQresultErrorMessage(result))
            throw PostgresError(.server, sqlState: state, message: message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    private func connectionError() -> PostgresError {
        let reason = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(.connection, message: reason.isEmpty ? "the connection was lost" : reason)
    }

    private static func rows(of result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        let types = (0..<columnCount).map { UInt32(PQftype(result, Int32($0))) }
        var cells: [[[UInt8]?]] = []
        cells.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            cells.append((0..<Int32(columnCount)).map { column -> [UInt8]? in
                if PQgetisnull(result, row, column) != 0 { return nil }
                let length = Int(PQgetlength(result, row, column))
                guard length > 0, let pointer = PQgetvalue(result, row, column) else { return [] }
                return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
            })
        }
        let tag = String(cString: PQcmdStatus(result))
        let affected = Int(String(cString: PQcmdTuples(result))) ?? rowCount
        return PostgresRows(columns: columns, types: types, cells: cells, affectedRows: affected, commandTag: tag)
    }

    /// Lends `strings` to C as a NULL-terminated array of C strings.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        // Never empty (it ends with the NULL terminator), so the buffer always has an address.
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// Lends binary parameter values to C; `nil` entries are SQL NULL.
    private static func withBuffers<R>(_ values: [[UInt8]?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = values.map { value in
            guard let value else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(value.count, 1))
            value.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: value.count) }
            }
            return copy
        }
        defer { for copy in copies { copy?.deallocate() } }
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
