import Foundation
import OutboxStorage
import OutboxWire

/// The least a page's commit must write, through `OutboxStorage`: each change's row (its key,
/// its revision and the record's bytes; a tombstone's revision alone) put into one database, the
/// cursor's row beside them, one durable commit. Nothing is read first, nothing checked, no
/// event written: what is left of the engine's apply is its check of the page, the revisions it
/// compares, its event and its indexes.
final class PullFloor {
    private let environment: LMDBEnvironment
    private let table: LMDBDatabase
    private static let cursorKey = Array("cursor".utf8)

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = try LMDBEnvironment.open(
            directory: directory, options: LMDBEnvironment.Options(syncOnCommit: true, initialMapSizeBytes: 64 << 20, maxMapSizeBytes: 8 << 30))
        table = try environment.openDatabase("rows")
    }

    deinit {
        environment.close()
    }

    func apply(_ page: FeedPage) throws {
        try environment.write { txn in
            for change in page.changes {
                let key = Array(page.business.utf8) + [0x1F] + Array(change.type.utf8) + [0x1F] + Array(change.id.utf8)
                var value = change.revision.bigEndianByteArray
                if let record = change.record { value += record }
                try txn.put(table, key: key, value: value)
            }
            try txn.put(table, key: Self.cursorKey, value: Array(page.cursor.text.utf8))
        }
    }

    /// The rows stored, the cursor's among them.
    func rows() throws -> Int {
        try environment.read { txn in try txn.count(table) }
    }
}
