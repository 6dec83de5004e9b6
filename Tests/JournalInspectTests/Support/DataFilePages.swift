import Foundation
@testable import OutboxStorage

/// A data file's pages as LMDB lays them out, read from a copy of its bytes: enough to find a
/// named database's root and bend a branch page's child reference, the damage LMDB's own reads
/// trust and the open-time check does not look for.
struct DataFilePages {
    var bytes: [UInt8]
    let pageSize: Int

    init(_ url: URL) throws {
        bytes = Array(try Data(contentsOf: url))
        pageSize = Int(bytes.u32(LMDBDataFile.Offset.freeDatabase + LMDBDataFile.Offset.databasePad))
        guard pageSize >= 512 else { throw FixtureError.unexpected("\(url.path) has no readable meta page") }
    }

    var pageCount: Int { bytes.count / pageSize }

    /// The newest meta page's offset: LMDB reads the one with the higher transaction id.
    private var newestMeta: Int {
        let first = bytes.u64(LMDBDataFile.Offset.transactionID)
        let second = bytes.u64(pageSize + LMDBDataFile.Offset.transactionID)
        return second > first ? pageSize : 0
    }

    /// The last page the newest transaction uses.
    var lastPage: UInt64 { bytes.u64(newestMeta + LMDBDataFile.Offset.lastPage) }

    func page(_ number: UInt64) -> [UInt8] {
        let start = Int(number) * pageSize
        return Array(bytes[start..<start + pageSize])
    }

    /// The root page of the named database, from the main tree's root leaf.
    func root(of name: String) throws -> UInt64 {
        let mainRoot = bytes.u64(newestMeta + LMDBDataFile.Offset.mainDatabase + LMDBDataFile.Offset.databaseRoot)
        for node in LeafNodes(page: page(mainRoot)) {
            guard let node, node.name == name, node.flags & LMDBDataFile.subDatabaseNode != 0 else { continue }
            return node.value.u64(LMDBDataFile.Offset.databaseRoot)
        }
        throw FixtureError.unexpected("no database '\(name)' in the main tree's root")
    }

    func isBranch(_ number: UInt64) -> Bool {
        page(number).u16(10) & LMDBDataFile.branchPage != 0
    }

    /// Where a page's `index`th node starts, in the file.
    private func branchNodeOffset(page number: UInt64, index: Int) -> Int {
        let start = Int(number) * pageSize
        return start + Int(bytes.u16(start + LMDBDataFile.pageHeaderBytes + 2 * index))
    }

    /// The page a branch page's `index`th node points to: 48 bits in the node's first three u16s.
    func child(ofBranch number: UInt64, index: Int) -> UInt64 {
        let offset = branchNodeOffset(page: number, index: index)
        return UInt64(bytes.u16(offset)) | UInt64(bytes.u16(offset + 2)) << 16 | UInt64(bytes.u16(offset + 4)) << 32
    }

    /// Points a branch page's `index`th node at `target`, leaving everything else as it was.
    mutating func setChild(ofBranch number: UInt64, index: Int, to target: UInt64) {
        let offset = branchNodeOffset(page: number, index: index)
        for half in 0..<3 {
            let value = UInt16(truncatingIfNeeded: target >> (16 * half))
            bytes[offset + 2 * half] = UInt8(value & 0xFF)
            bytes[offset + 2 * half + 1] = UInt8(value >> 8)
        }
    }

    /// How many nodes a page holds.
    func nodeCount(_ number: UInt64) -> Int {
        max(0, (Int(page(number).u16(12)) - LMDBDataFile.pageHeaderBytes) / 2)
    }

    /// The rightmost leaf of the named database's tree: where its last keys are.
    func rightmostLeaf(of name: String) throws -> UInt64 {
        var number = try root(of: name)
        while isBranch(number) { number = child(ofBranch: number, index: nodeCount(number) - 1) }
        return number
    }

    /// Sets the data size of a leaf page's `index`th node (its first four bytes): LMDB hands a
    /// reader that many bytes from where the node's data starts, however far past the page.
    mutating func setDataSize(ofLeaf number: UInt64, index: Int, to size: UInt32) {
        let offset = branchNodeOffset(page: number, index: index)
        for byte in 0..<4 { bytes[offset + byte] = UInt8(truncatingIfNeeded: size >> (8 * byte)) }
    }

    func write(to url: URL) throws {
        try Data(bytes).write(to: url)
    }
}
