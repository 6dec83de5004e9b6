public import Foundation

/// The rows a statement returned, copied out of libpq in binary form.
///
/// ```swift
/// let rows = try txn.execute("SELECT id, revision FROM products WHERE id = $1", [.text(id)])
/// let revision = try rows.first?.int32(1)
/// ```
public struct PostgresRows: Sendable, RandomAccessCollection {
    /// The column names, in order.
    public let columns: [String]
    let types: [UInt32]
    let cells: [[[UInt8]?]]
    /// How many rows the statement changed (`INSERT`, `UPDATE`, `DELETE`), or returned.
    public let affectedRows: Int
    /// The server's command tag, e.g. `COMMIT`, or `ROLLBACK` for a commit of a failed transaction.
    public let commandTag: String

    public var startIndex: Int { cells.startIndex }
    public var endIndex: Int { cells.endIndex }

    public subscript(position: Int) -> PostgresRow {
        PostgresRow(columns: columns, types: types, cells: cells[position])
    }
}

/// One row; each accessor checks the column's type and throws ``PostgresError/Kind/decoding``
/// on a mismatch, and on SQL NULL unless it answers an optional.
public struct PostgresRow: Sendable {
    let columns: [String]
    let types: [UInt32]
    let cells: [[UInt8]?]

    public func isNull(_ column: Int) -> Bool { cells[column] == nil }

    public func text(_ column: Int) throws -> String {
        let bytes = try cell(column, [PostgresType.text, PostgresType.varchar])
        guard let text = String(validating: bytes, as: UTF8.self) else { throw mismatch(column, "is not UTF-8") }
        return text
    }

    public func bytes(_ column: Int) throws -> Data {
        Data(try cell(column, [PostgresType.bytea]))
    }

    public func int32(_ column: Int) throws -> Int32 {
        let bytes = try cell(column, [PostgresType.int4], length: 4)
        return Int32(bitPattern: UInt32(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
    }

    public func int64(_ column: Int) throws -> Int64 {
        let bytes = try cell(column, [PostgresType.int8], length: 8)
        return Int64(bitPattern: UInt64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }))
    }

    public func bool(_ column: Int) throws -> Bool {
        try cell(column, [PostgresType.bool], length: 1)[0] != 0
    }

    public func timestamp(_ column: Int) throws -> Date {
        let bytes = try cell(column, [PostgresType.timestamptz], length: 8)
        let micros = Int64(bitPattern: UInt64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }))
        return PostgresTime.date(microseconds: micros)
    }

    public func uuid(_ column: Int) throws -> UUID {
        let b = try cell(column, [PostgresType.uuid], length: 16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// A `jsonb` column's JSON text.
    public func jsonb(_ column: Int) throws -> String {
        let bytes = try cell(column, [PostgresType.jsonb])
        guard bytes.first == 1, let text = String(validating: bytes.dropFirst(), as: UTF8.self) else {
            throw mismatch(column, "is not jsonb of version 1")
        }
        return text
    }

    /// `nil` for SQL NULL, otherwise `read(column)`.
    public func optional<T>(_ column: Int, _ read: (Int) throws -> T) rethrows -> T? {
        isNull(column) ? nil : try read(column)
    }

    private func cell(_ column: Int, _ accepted: [UInt32], length: Int? = nil) throws -> [UInt8] {
        guard column < cells.count else { throw mismatch(column, "does not exist") }
        guard accepted.contains(types[column]) else { throw mismatch(column, "has type OID \(types[column])") }
        guard let bytes = cells[column] else { throw mismatch(column, "is NULL") }
        if let length, bytes.count != length { throw mismatch(column, "holds \(bytes.count) bytes, not \(length)") }
        return bytes
    }

    private func mismatch(_ column: Int, _ problem: String) -> PostgresError {
        let name = column < columns.count ? columns[column] : "#\(column)"
        return PostgresError(.decoding, message: "column \(name) \(problem)")
    }
}
