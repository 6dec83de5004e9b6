import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A return code from LMDB or the system beneath it, as a typed error.
///
/// Operational codes (the map is full, the reader table is full, an I/O error) are thrown and
/// can be matched by name:
///
/// ```swift
/// do { try environment.write { ... } }
/// catch LMDBError.mapFull { ... }
/// ```
///
/// Codes that can only come from misuse of the API (a bad transaction or database handle, a key
/// too long) are not thrown: ``LMDB/check(_:_:)`` traps on them, because no caller can recover.
public struct LMDBError: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    public static let keyExists = LMDBError(rawValue: MDB_KEYEXIST)
    public static let corrupted = LMDBError(rawValue: MDB_CORRUPTED)
    public static let pageNotFound = LMDBError(rawValue: MDB_PAGE_NOTFOUND)
    public static let panic = LMDBError(rawValue: MDB_PANIC)
    public static let versionMismatch = LMDBError(rawValue: MDB_VERSION_MISMATCH)
    /// The file is not an LMDB environment.
    public static let invalid = LMDBError(rawValue: MDB_INVALID)
    public static let mapFull = LMDBError(rawValue: MDB_MAP_FULL)
    public static let databasesFull = LMDBError(rawValue: MDB_DBS_FULL)
    public static let readersFull = LMDBError(rawValue: MDB_READERS_FULL)
    public static let transactionFull = LMDBError(rawValue: MDB_TXN_FULL)
    public static let cursorFull = LMDBError(rawValue: MDB_CURSOR_FULL)
    public static let pageFull = LMDBError(rawValue: MDB_PAGE_FULL)
    public static let mapResized = LMDBError(rawValue: MDB_MAP_RESIZED)
    /// A named database was opened with flags that do not match how it was created.
    public static let incompatible = LMDBError(rawValue: MDB_INCOMPATIBLE)
    public static let badReaderSlot = LMDBError(rawValue: MDB_BAD_RSLOT)
    public static let badTransaction = LMDBError(rawValue: MDB_BAD_TXN)
    public static let badValueSize = LMDBError(rawValue: MDB_BAD_VALSIZE)
    public static let badDatabase = LMDBError(rawValue: MDB_BAD_DBI)

    /// The disk is full (`ENOSPC`).
    public static let noSpace = LMDBError(rawValue: ENOSPC)
    /// The user's disk quota is used up (`EDQUOT`).
    public static let quotaExceeded = LMDBError(rawValue: EDQUOT)
    /// The file would grow past the process's file-size limit (`EFBIG`, `RLIMIT_FSIZE`).
    public static let fileTooLarge = LMDBError(rawValue: EFBIG)
    /// The file system is mounted read-only (`EROFS`).
    public static let readOnlyFileSystem = LMDBError(rawValue: EROFS)
    /// An input/output error from the disk (`EIO`).
    public static let io = LMDBError(rawValue: EIO)
    /// The path does not exist (`ENOENT`).
    public static let noSuchFile = LMDBError(rawValue: ENOENT)
    /// Permission denied (`EACCES`).
    public static let accessDenied = LMDBError(rawValue: EACCES)
    /// The environment was closed before this call (`EBADF`).
    public static let closed = LMDBError(rawValue: EBADF)

    /// Codes only a misuse of the API can produce: trapped, never thrown. (`MDB_BAD_TXN` is not
    /// one: LMDB also answers it to every later use of a transaction that met a damaged page,
    /// so it is thrown, as the damage it follows.)
    var isProgrammerError: Bool {
        self == .badDatabase || self == .badReaderSlot || self == .badValueSize
    }

    /// Whether the failure means "no room": the map, the disk or the quota is full, or the file
    /// may not grow. (An `EIO` may mean the same on some file systems; only the caller, which
    /// knows the path, can ask the file system whether it has room left.)
    public var isOutOfSpace: Bool {
        self == .mapFull || self == .noSpace || self == .quotaExceeded || self == .fileTooLarge
    }

    /// Whether the answer means the file's structure is damaged (a page reference or a page
    /// that cannot be what it claims), not that the disk failed.
    public var isStructuralDamage: Bool {
        self == .pageNotFound || self == .corrupted || self == .panic || self == .incompatible
    }

    public var description: String {
        guard let message = mdb_strerror(rawValue) else { return "LMDB error \(rawValue)" }
        return "\(String(cString: message)) (\(rawValue))"
    }

    /// Lets a code stand as a `catch` pattern: `catch LMDBError.mapFull { ... }`.
    public static func ~= (pattern: LMDBError, error: any Error) -> Bool {
        (error as? LMDBError) == pattern
    }
}
