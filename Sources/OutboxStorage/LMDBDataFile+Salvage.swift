#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension LMDBDataFile {
    /// What a salvage read of a data file found.
    public struct SalvageScan: Sendable, Equatable {
        /// Pages read from the file.
        public var pagesRead: Int
        /// Leaf pages whose entries were handed to the visitor.
        public var leafPages: Int
        /// Entries whose bytes could not be read whole (an offset or an overflow page out of
        /// bounds): skipped.
        public var damagedEntries: Int
    }

    /// Reads every leaf page of a damaged data file with bounds-checked `pread`s, never through
    /// LMDB, and hands each entry's key and value to `visit`.
    ///
    /// This is how what a damaged journal still holds is recovered: the walk does not follow the
    /// trees (a bent page reference would lead it astray), it reads the file page by page. It
    /// therefore also meets pages LMDB had freed, and pages of a last commit that never
    /// completed; the caller tells its records apart (a journal's records carry checksums).
    /// - Throws: ``Problem`` when the file cannot be read at all.
    public static func salvage(path: String, visit: (_ key: [UInt8], _ value: [UInt8]) -> Void) throws(Problem) -> SalvageScan {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw Problem(kind: .notLMDB, reason: "data.mdb cannot be read: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Problem(kind: .notRegularFile, reason: "data.mdb is not a regular file")
        }
        let file = try PageFile(path: path, size: Int(status.st_size))
        defer { file.closeFile() }
        // The page size from the first meta page when it reads, else LMDB's usual one.
        if let meta = file.read(offset: 0, count: Offset.metaEnd), meta.u32(Offset.magic) == magic {
            let size = Int(meta.u32(Offset.freeDatabase + Offset.databasePad))
            if size >= 512, size <= 65_536, size & (size - 1) == 0 { file.pageSizeBytes = size }
        }
        var scan = SalvageScan(pagesRead: 0, leafPages: 0, damagedEntries: 0)
        let pageCount = UInt64(file.size / file.pageSizeBytes)
        var number: UInt64 = 2
        while number < pageCount {
            defer { number += 1 }
            guard let page = file.page(number) else { break }
            scan.pagesRead += 1
            guard page.u64(0) == number else { continue }
            let flags = page.u16(10)
            if flags & overflowPage != 0 {
                // Its data is read through the node that points to it; skip the pages it spans.
                let span = UInt64(page.u32(12))
                if span > 1, span < pageCount { number += span - 1 }
                continue
            }
            guard flags & leafPage != 0, flags & (leaf2Page | branchPage | metaPage) == 0 else { continue }
            scan.leafPages += 1
            for node in LeafNodes(page: page) {
                guard let node else {
                    scan.damagedEntries += 1
                    continue
                }
                guard node.flags & subDatabaseNode == 0 else { continue }
                if node.flags & bigDataNode != 0 {
                    guard let value = overflowValue(node, in: file) else {
                        scan.damagedEntries += 1
                        continue
                    }
                    visit(node.key, value)
                } else {
                    visit(node.key, node.value)
                }
            }
        }
        return scan
    }

    /// A big value's bytes, from the overflow pages its node names; `nil` when they do not read.
    private static func overflowValue(_ node: LeafNode, in file: PageFile) -> [UInt8]? {
        let first = node.value.u64(0)
        guard let header = file.page(first), header.u64(0) == first, header.u16(10) & overflowPage != 0 else { return nil }
        let span = Int(header.u32(12))
        guard span >= 1, pageHeaderBytes + node.dataSize <= span * file.pageSizeBytes else { return nil }
        return file.read(offset: Int(first) * file.pageSizeBytes + pageHeaderBytes, count: node.dataSize)
    }
}
