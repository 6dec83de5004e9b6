import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The data file of an environment (`data.mdb`), read with plain `pread` before LMDB maps it.
///
/// LMDB trusts its file: a page it is told to read past the end of a truncated file is a
/// `SIGBUS`, not an error. So before an environment is opened, ``check(path:)`` reads the two
/// meta pages (where LMDB keeps the root of every tree and the last page in use) and the few
/// pages they point to, and refuses a file that cannot hold what its meta pages describe. The
/// cost is a handful of page reads, whatever the file's length.
///
/// The layout read here is LMDB's data format version 1 (`MDB_DATA_VERSION`), the only one its
/// 0.9 releases write: a page header of 16 bytes, then, on pages 0 and 1, `MDB_meta`.
public enum LMDBDataFile {
    /// What the newest meta page says, once checked against the file.
    public struct Header: Sendable, Equatable {
        public var pageSizeBytes: Int
        /// The last page the newest committed transaction uses.
        public var lastPage: UInt64
        /// The newest committed transaction.
        public var transactionID: UInt64
        public var fileSizeBytes: Int
        /// The bytes the newest transaction needs the file to hold.
        public var usedBytes: Int { Int(lastPage + 1) * pageSizeBytes }
    }

    /// Why a data file cannot be opened safely.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// Not a regular file (a directory, a FIFO, a device): never opened, it could block.
            case notRegularFile
            /// Zero bytes: nothing was ever committed to it.
            case empty
            /// This process may not read it (or the directory holding it).
            case inaccessible
            /// Not an LMDB data file at all.
            case notLMDB
            /// An LMDB file of another data format.
            case unsupportedVersion
            /// Shorter than the pages its newest transaction uses: a copy or backup cut short.
            case truncated
            /// Its meta pages or the roots they name are inconsistent.
            case damaged
        }

        public var kind: Kind
        /// What is wrong, in a sentence.
        public var reason: String

        public var description: String { reason }
    }

    static let pageHeaderBytes = 16
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1
    static let invalidPage = UInt64.max
    // Page flags.
    static let branchPage: UInt16 = 0x01
    static let leafPage: UInt16 = 0x02
    static let overflowPage: UInt16 = 0x04
    static let metaPage: UInt16 = 0x08
    static let leaf2Page: UInt16 = 0x20
    // Node flags.
    static let bigDataNode: UInt16 = 0x01
    static let subDatabaseNode: UInt16 = 0x02
    /// Offsets inside a meta page (page header included) and inside an `MDB_db`.
    enum Offset {
        static let magic = 16, version = 20, freeDatabase = 40, mainDatabase = 88, lastPage = 136, transactionID = 144
        static let metaEnd = 152
        static let databasePad = 0, databaseDepth = 6, databaseRoot = 40, databaseSize = 48
    }

    /// Checks the data file at `path` before LMDB opens it.
    /// - Returns: the newest meta page's figures; `nil` when there is no file (LMDB creates one).
    /// - Throws: ``Problem`` saying what is wrong; the file is left untouched.
    public static func check(path: String) throws(Problem) -> Header? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            let kind: Problem.Kind = errno == EACCES || errno == EPERM ? .inaccessible : .notLMDB
            throw Problem(kind: kind, reason: "it cannot be read: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Problem(kind: .notRegularFile, reason: "data.mdb is not a regular file (\(FileSystem.fileKind(UInt32(status.st_mode))))")
        }
        let size = Int(status.st_size)
        guard size > 0 else { throw Problem(kind: .empty, reason: "data.mdb is empty (0 bytes)") }
        let file = try PageFile(path: path, size: size)
        defer { file.closeFile() }
        return try check(file)
    }

    static func check(_ file: PageFile) throws(Problem) -> Header {
        let first = try meta(in: file, at: 0, pageSize: nil)
        let pageSize = first.pageSize
        file.pageSizeBytes = pageSize
        let second = try meta(in: file, at: pageSize, pageSize: pageSize)
        // LMDB reads the meta page with the higher transaction id: so does this check.
        let newest = second.transactionID > first.transactionID ? second : first
        let header = Header(
            pageSizeBytes: pageSize, lastPage: newest.lastPage, transactionID: newest.transactionID, fileSizeBytes: file.size
        )
        guard newest.lastPage >= 1, newest.lastPage < UInt64(Int.max / pageSize) else {
            throw Problem(kind: .damaged, reason: "its meta page names last page \(newest.lastPage), which no file can have")
        }
        guard header.usedBytes <= file.size else {
            throw Problem(
                kind: .truncated,
                reason: "data.mdb is \(file.size) bytes but its last committed transaction uses \(header.usedBytes) "
                    + "(pages 0 to \(newest.lastPage) of \(pageSize) bytes): the file was cut short, as by an incomplete copy or backup"
            )
        }
        for (name, database) in [("free-page", newest.freeDatabase), ("main", newest.mainDatabase)] {
            try checkTree(name, root: database.root, depth: database.depth, lastPage: newest.lastPage, in: file)
        }
        if newest.mainDatabase.root != invalidPage {
            try checkNamedDatabases(rootPage: newest.mainDatabase.root, lastPage: newest.lastPage, in: file)
        }
        return header
    }

    // MARK: Meta pages

    struct Database {
        var pad: UInt32
        var depth: UInt16
        var root: UInt64
    }

    struct Meta {
        var pageSize: Int
        var freeDatabase: Database
        var mainDatabase: Database
        var lastPage: UInt64
        var transactionID: UInt64
    }

    private static func meta(in file: PageFile, at offset: Int, pageSize: Int?) throws(Problem) -> Meta {
        guard let page = file.read(offset: offset, count: Offset.metaEnd) else {
            if offset == 0 {
                throw Problem(kind: .notLMDB, reason: "data.mdb is \(file.size) bytes, too short for LMDB's header")
            }
            throw Problem(kind: .truncated, reason: "data.mdb is \(file.size) bytes, too short for LMDB's second meta page: the file was cut short")
        }
        let which = offset == 0 ? "first" : "second"
        guard page.u16(10) & metaPage != 0, page.u32(Offset.magic) == magic else {
            if offset == 0 { throw Problem(kind: .notLMDB, reason: "data.mdb does not start with LMDB's header") }
            throw Problem(kind: .damaged, reason: "LMDB's \(which) meta page is damaged (its page header or magic number is wrong)")
        }
        let version = page.u32(Offset.version)
        guard version == dataVersion else {
            throw Problem(kind: .unsupportedVersion, reason: "its LMDB data format is version \(version); this LMDB reads version \(dataVersion)")
        }
        let free = database(page, at: Offset.freeDatabase)
        let size = Int(free.pad)
        guard size >= 512, size <= 65_536, size & (size - 1) == 0 else {
            throw Problem(kind: .damaged, reason: "LMDB's \(which) meta page names a page size of \(size) bytes, which LMDB never uses")
        }
        if let pageSize, size != pageSize {
            throw Problem(kind: .damaged, reason: "LMDB's meta pages disagree on the page size (\(pageSize) and \(size) bytes)")
        }
        return Meta(
            pageSize: size,
            freeDatabase: free,
            mainDatabase: database(page, at: Offset.mainDatabase),
            lastPage: page.u64(Offset.lastPage),
            transactionID: page.u64(Offset.transactionID)
        )
    }

    private static func database(_ bytes: [UInt8], at offset: Int) -> Database {
        Database(
            pad: bytes.u32(offset + Offset.databasePad),
            depth: bytes.u16(offset + Offset.databaseDepth),
            root: bytes.u64(offset + Offset.databaseRoot)
        )
    }

    // MARK: Roots

    /// A tree's root must be a page in use, holding a branch or leaf page that says its own number.
    private static func checkTree(_ name: String, root: UInt64, depth: UInt16, lastPage: UInt64, in file: PageFile) throws(Problem) {
        guard root != invalidPage else { return }
        guard root >= 2, root <= lastPage else {
            throw Problem(kind: .damaged, reason: "the \(name) tree's root is page \(root), outside the pages in use (2 to \(lastPage))")
        }
        guard let page = file.page(root) else {
            throw Problem(kind: .truncated, reason: "the \(name) tree's root page \(root) cannot be read")
        }
        let problem = Problem(kind: .damaged, reason: "the \(name) tree's root page \(root) is damaged")
        guard page.u64(0) == root else { throw problem }
        let flags = page.u16(10) & (branchPage | leafPage | overflowPage | metaPage)
        guard flags == branchPage || flags == leafPage else { throw problem }
        guard (flags == branchPage) == (depth > 1) || depth == 0 else { throw problem }
        let lower = Int(page.u16(12)), upper = Int(page.u16(14))
        guard lower >= pageHeaderBytes, lower <= upper, upper <= file.pageSizeBytes else { throw problem }
    }

    /// The named databases are the main tree's entries: when it is one leaf, each names a root.
    private static func checkNamedDatabases(rootPage: UInt64, lastPage: UInt64, in file: PageFile) throws(Problem) {
        guard let page = file.page(rootPage), page.u16(10) & leafPage != 0
        else { return }
        for node in LeafNodes(page: page) {
            guard let node else {
                throw Problem(kind: .damaged, reason: "the main tree's root page \(rootPage) holds a damaged entry")
            }
            guard node.flags & subDatabaseNode != 0 else { continue }
            guard node.value.count == Offset.databaseSize else {
                throw Problem(kind: .damaged, reason: "the main tree's entry for '\(node.name)' is damaged")
            }
            let database = database(node.value, at: 0)
            try checkTree("'\(node.name)'", root: database.root, depth: database.depth, lastPage: lastPage, in: file)
        }
    }
}

/// A node of a leaf page, its bytes copied out; `nil` where the page's own offsets are damaged.
struct LeafNode {
    var flags: UInt16
    /// The value's size: for a big value, the bytes on its overflow pages.
    var dataSize: Int
    var key: [UInt8]
    /// The value, or for a big value (``LMDBDataFile/bigDataNode``) its first overflow page.
    var value: [UInt8]
    var name: String { String(decoding: key, as: UTF8.self) }
}

/// The nodes of one leaf page, read with every offset checked against the page's bounds.
struct LeafNodes: Sequence, IteratorProtocol {
    let page: [UInt8]
    private var index = 0
    private let count: Int

    init(page: [UInt8]) {
        self.page = page
        let lower = Int(page.u16(12))
        count = lower >= LMDBDataFile.pageHeaderBytes && lower <= page.count ? (lower - LMDBDataFile.pageHeaderBytes) / 2 : 0
    }

    mutating func next() -> LeafNode?? {
        guard index < count else { return nil }
        defer { index += 1 }
        let offset = Int(page.u16(LMDBDataFile.pageHeaderBytes + 2 * index))
        // A node: data size (two u16 halves), flags, key size, then the key and the data.
        guard offset >= LMDBDataFile.pageHeaderBytes, offset + 8 <= page.count else { return .some(nil) }
        let dataSize = Int(page.u16(offset)) | Int(page.u16(offset + 2)) << 16
        let flags = page.u16(offset + 4)
        let keySize = Int(page.u16(offset + 6))
        let keyStart = offset + 8
        let valueSize = flags & LMDBDataFile.bigDataNode != 0 ? 8 : dataSize
        guard keyStart + keySize + valueSize <= page.count else { return .some(nil) }
        return LeafNode(
            flags: flags,
            dataSize: dataSize,
            key: Array(page[keyStart..<keyStart + keySize]),
            value: Array(page[keyStart + keySize..<keyStart + keySize + valueSize])
        )
    }
}

/// A file read with `pread`: a short read is `nil`, never a fault.
final class PageFile {
    let descriptor: Int32
    let size: Int
    /// Set once the meta page is read; pages are this size.
    var pageSizeBytes = 4096

    init(path: String, size: Int) throws(LMDBDataFile.Problem) {
        // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let kind: LMDBDataFile.Problem.Kind = errno == EACCES || errno == EPERM ? .inaccessible : .notLMDB
            throw LMDBDataFile.Problem(kind: kind, reason: "data.mdb cannot be read: \(String(cString: strerror(errno)))")
        }
        self.size = size
    }

    /// Page `number`, whole; `nil` past the end of the file.
    func page(_ number: UInt64) -> [UInt8]? {
        guard number < UInt64(size / pageSizeBytes) else { return nil }
        return read(offset: Int(number) * pageSizeBytes, count: pageSizeBytes)
    }

    func read(offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= size - count else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
            }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }

    func closeFile() {
        _ = close(descriptor)
    }
}

extension [UInt8] {
    /// Little-endian integers: LMDB writes its headers in the machine's order, and every
    /// platform this package builds for is little-endian.
    func u16(_ offset: Int) -> UInt16 {
        guard offset >= 0, offset + 2 <= count else { return 0 }
        return UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }

    func u32(_ offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= count else { return 0 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(self[offset + $1]) << (8 * $1) }
    }

    func u64(_ offset: Int) -> UInt64 {
        guard offset >= 0, offset + 8 <= count else { return 0 }
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(self[offset + $1]) << (8 * $1) }
    }
}
