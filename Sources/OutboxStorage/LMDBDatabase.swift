import CLMDB

/// A named database inside an environment: a handle that stays valid for the environment's life.
public struct LMDBDatabase: Sendable, Hashable, CustomStringConvertible {
    let handle: MDB_dbi
    public let name: String

    public var description: String { "database '\(name)'" }
}

/// Flags for ``LMDBTransaction/put(_:key:value:flags:)``.
public struct LMDBPutFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The key sorts after every key in the database: appended without a search.
    /// A key out of order fails with ``LMDBError/keyExists``.
    public static let append = LMDBPutFlags(rawValue: UInt32(MDB_APPEND))
    /// Fail with ``LMDBError/keyExists`` instead of replacing an existing value.
    public static let noOverwrite = LMDBPutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
}

/// What a scan's body answers after each entry.
public enum LMDBScanStep: Sendable {
    case next
    case stop
}
