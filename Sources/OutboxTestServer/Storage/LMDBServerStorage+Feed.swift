import Foundation
import IdempotencyClaims
import OutboxStorage
import OutboxWire

/// The LMDB storage's change feed, in the environment's own databases, so a change commits in
/// the transaction of its claim and its write, and a restarted server serves the same feed:
///
/// - `changes`: key the business's bytes, `0x1F` (which no business id holds), then the change
///   number as a big-endian `UInt64`; value the record of that revision (a tombstone too) as JSON.
/// - `feed_counters`: key the business's bytes; value its last change number and its floor, two
///   big-endian `UInt64`s.
/// - `feed_epoch`: key `epoch`; value the epoch as a big-endian `UInt64` (1 when first opened).
struct LMDBFeedTables: Sendable {
    let changes: LMDBDatabase
    let counters: LMDBDatabase
    let epoch: LMDBDatabase

    static let epochKey = Array("epoch".utf8)

    init(environment: LMDBEnvironment) throws {
        changes = try environment.openDatabase("changes")
        counters = try environment.openDatabase("feed_counters")
        epoch = try environment.openDatabase("feed_epoch")
        try environment.write { txn in
            if try txn.get(epoch, key: Self.epochKey) == nil { try txn.put(epoch, key: Self.epochKey, value: UInt64(1).bigEndianBytes) }
        }
    }

    static func changeKey(business: String, number: UInt64) -> [UInt8] {
        Array(business.utf8) + [0x1F] + number.bigEndianBytes
    }

    func epoch(_ txn: borrowing LMDBTransaction) throws -> UInt64 {
        guard let bytes = try txn.get(epoch, key: Self.epochKey) else { throw LMDBFeedError(message: "the feed's epoch is missing") }
        return try Self.number(bytes, at: 0)
    }

    /// The business's last change number and floor (0 and 0 before its first change).
    func counters(_ txn: borrowing LMDBTransaction, business: String) throws -> (last: UInt64, floor: UInt64) {
        guard let bytes = try txn.get(counters, key: Array(business.utf8)) else { return (0, 0) }
        return (try Self.number(bytes, at: 0), try Self.number(bytes, at: 8))
    }

    func putCounters(_ txn: borrowing LMDBTransaction, business: String, last: UInt64, floor: UInt64) throws {
        try txn.put(counters, key: Array(business.utf8), value: last.bigEndianBytes + floor.bigEndianBytes)
    }

    func change(_ txn: borrowing LMDBTransaction, business: String, number: UInt64) throws -> FeedChange? {
        try txn.get(changes, key: Self.changeKey(business: business, number: number))
            .map { try JSONDecoder().decode(StoredRecord.self, from: Data($0)).feedChange }
    }

    /// Writes `record`'s change as the business's next: the environment's one writer numbers
    /// changes in commit order, so `(epoch, n, 0)` never has a change come before it later.
    func append(_ txn: borrowing LMDBTransaction, _ record: StoredRecord) throws -> FeedPosition {
        let (last, floor) = try counters(txn, business: record.businessID)
        let number = last + 1
        try txn.put(changes, key: Self.changeKey(business: record.businessID, number: number), value: try JSONEncoder().encode(record))
        try putCounters(txn, business: record.businessID, last: number, floor: floor)
        return FeedPosition(epoch: try epoch(txn), major: number)
    }

    /// Forgets every change and counter and raises the epoch by one.
    func reset(_ txn: borrowing LMDBTransaction) throws {
        let next = try epoch(txn) + 1
        try txn.removeAll(changes)
        try txn.removeAll(counters)
        try txn.put(epoch, key: Self.epochKey, value: next.bigEndianBytes)
    }

    private static func number(_ bytes: [UInt8], at offset: Int) throws -> UInt64 {
        guard bytes.count >= offset + 8 else { throw LMDBFeedError(message: "a feed counter holds \(bytes.count) bytes, not \(offset + 8)") }
        return bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A feed value that is not what the storage writes.
struct LMDBFeedError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The LMDB feed as last committed: each read is one read transaction.
struct LMDBFeed: ServerFeed, RecordsAtFence {
    let environment: LMDBEnvironment
    let tables: LMDBFeedTables
    let records: LMDBDatabase

    func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) throws -> ChangeLogRead {
        try environment.read { txn in
            let (last, floor) = try tables.counters(txn, business: business)
            return try NumberedFeed.read(epoch: try tables.epoch(txn), last: last, floor: floor, after: after, until: until, limit: limit) {
                try tables.change(txn, business: business, number: $0)
            }
        }
    }

    /// Every record and the business's fence, in one read transaction.
    func recordsAndFence(business: String) throws -> (FeedPosition, [StoredRecord]) {
        let (position, values) = try environment.read { txn in
            var values: [Data] = []
            try txn.scan(records) { _, value in
                values.append(Data(value))
                return .next
            }
            return (FeedPosition(epoch: try tables.epoch(txn), major: try tables.counters(txn, business: business).last), values)
        }
        let decoder = JSONDecoder()
        return (position, try values.map { try decoder.decode(StoredRecord.self, from: $0) })
    }

    func purge(business: String, through: FeedPosition) throws -> (floor: FeedPosition, purged: Int) {
        try environment.write { txn in
            let epoch = try tables.epoch(txn)
            let (last, floor) = try tables.counters(txn, business: business)
            let (numbers, raised) = try NumberedFeed.purged(business: business, epoch: epoch, last: last, floor: floor, through: through)
            var purged = 0
            for number in numbers.map(Array.init) ?? [] where try txn.delete(tables.changes, key: LMDBFeedTables.changeKey(business: business, number: number)) {
                purged += 1
            }
            try tables.putCounters(txn, business: business, last: last, floor: raised)
            return (FeedPosition(epoch: epoch, major: raised), purged)
        }
    }
}
