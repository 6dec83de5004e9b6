import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// A business's feed as the journal holds it: its row, and the page that set it (gone once
/// compacted).
struct StoredFeed: Sendable {
    var row: FeedRow
    /// The `pageApplied` that moved the cursor last, with the moment it was recorded.
    var page: PageApplied?
    var pageAt: DeviceMoment?
}

extension JournalQueries {
    /// Every business the journal holds a feed, a server base or a record write for, in the
    /// order of their bytes: the feeds the worker pulls besides the configured ones.
    func pulledBusinesses() throws(OutboxError) -> [ExactString] {
        let schema = self.schema
        return try read { txn in
            var found = Set<ExactString>()
            try txn.scan(schema.feeds) { entry in
                found.insert(ExactString(try entry.key()))
                return .next
            }
            try schema.businesses(in: schema.base, into: &found, txn: txn)
            try schema.businesses(in: schema.recordWrites, into: &found, txn: txn)
            return found.sorted()
        }
    }

    /// `business`'s feed row and the page that set it; `nil` when it was never pulled.
    func storedFeed(business: String) throws(OutboxError) -> StoredFeed? {
        try RecordKey.checkScope(business: business, type: nil)
        let schema = self.schema
        return try read { txn in
            guard let row = try schema.feedRow(business: business, in: txn) else { return nil }
            guard let event = try schema.event(row.pageSeq, in: txn), case .pageApplied(let page) = event.body else {
                return StoredFeed(row: row)
            }
            return StoredFeed(row: row, page: page, pageAt: DeviceMoment(wall: event.recordedAt, uptime: event.uptime))
        }
    }
}

extension JournalSchema {
    /// The businesses of a table keyed by a record first (its business leads the key: its length,
    /// then its bytes), one seek per business: past each one found, the scan jumps to the first
    /// key of the next (a type's length is at most 64, so 0xFF after the business is past them all).
    func businesses<K, V>(in table: LMDBTable<K, V>, into found: inout Set<ExactString>, txn: borrowing LMDBTransaction) throws {
        var start: [UInt8]? = nil
        while true {
            var next: [UInt8]?
            try txn.scan(table, from: start) { entry in
                let bytes = entry.keyBytes
                guard let length = bytes.first.map(Int.init), bytes.count > length,
                      let business = String(validating: bytes[1...length], as: UTF8.self)
                else { throw LMDBCodecError(reason: "\(table.description): a key that does not start with a business") }
                found.insert(ExactString(business))
                next = Array(bytes[0...length]) + [0xFF]
                return .stop
            }
            guard let next else { return }
            start = next
        }
    }
}
