public import Foundation

/// A statement parameter, sent to the server in PostgreSQL's binary format with its type, so
/// nothing is quoted, escaped or rounded through text.
///
/// ```swift
/// try txn.execute("INSERT INTO products (id, body) VALUES ($1, $2)", [.text(id), .bytes(body)])
/// ```
public enum PostgresValue: Hashable, Sendable {
    case null
    case text(String)
    case bytes(Data)
    case int32(Int32)
    case int64(Int64)
    case bool(Bool)
    /// A `timestamptz`, kept by the server to the microsecond.
    case timestamp(Date)
    case uuid(UUID)
    /// A `jsonb` value, given as JSON text.
    case jsonb(String)

    /// The type's OID, so that `$n` needs no cast.
    var typeOID: UInt32 {
        switch self {
        case .null: 0   // unknown: the server infers it from the statement
        case .text: PostgresType.text
        case .bytes: PostgresType.bytea
        case .int32: PostgresType.int4
        case .int64: PostgresType.int8
        case .bool: PostgresType.bool
        case .timestamp: PostgresType.timestamptz
        case .uuid: PostgresType.uuid
        case .jsonb: PostgresType.jsonb
        }
    }

    /// The binary wire form; `nil` for SQL NULL.
    var binary: [UInt8]? {
        switch self {
        case .null: nil
        case .text(let text): Array(text.utf8)
        case .bytes(let data): Array(data)
        case .int32(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .int64(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .bool(let value): [value ? 1 : 0]
        case .timestamp(let date): withUnsafeBytes(of: PostgresTime.microseconds(date).bigEndian) { Array($0) }
        case .uuid(let uuid): withUnsafeBytes(of: uuid.uuid) { Array($0) }
        case .jsonb(let text): [1] + Array(text.utf8)   // jsonb's binary format: version 1, then the text
        }
    }
}

/// The OIDs of the built-in types this library sends and reads.
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let varchar: UInt32 = 1043
    static let timestamptz: UInt32 = 1184
    static let uuid: UInt32 = 2950
    static let jsonb: UInt32 = 3802
}

/// `timestamptz` on the wire: microseconds since 2000-01-01 00:00 UTC.
enum PostgresTime {
    static let epochOffset: TimeInterval = 946_684_800   // 2000-01-01 in Unix seconds

    static func microseconds(_ date: Date) -> Int64 {
        Int64(((date.timeIntervalSince1970 - epochOffset) * 1_000_000).rounded())
    }

    static func date(microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000 + epochOffset)
    }
}
