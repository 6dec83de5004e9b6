package import IdempotencyClaims
package import OutboxWire

/// The feed of a storage with one writer at a time (memory, LMDB): each business's changes
/// numbered 1, 2, ... in the order they commit, dense above the floor, at `(epoch, n, 0)`. The
/// reads and the purge's checks of both stores, over their own lookups.
enum NumberedFeed {
    /// One read: the rows after `after` and not past `until` (or the fence), at most `limit`,
    /// each looked up by its number.
    static func read(
        epoch: UInt64, last: UInt64, floor: UInt64, after: FeedPosition?, until: FeedPosition?, limit: Int,
        change: (UInt64) throws -> FeedChange?
    ) rethrows -> ChangeLogRead {
        var rows: [ChangeRow] = []
        // Rows are (epoch, n, 0): those after (epoch, a, m) are n > a, whatever m.
        if after.map({ $0.epoch == epoch }) ?? true, limit > 0 {
            let first = max(after?.major ?? 0, floor) + 1
            let end = min(last, until.map { $0.epoch == epoch ? $0.major : 0 } ?? last)
            var number = first
            while number <= end, rows.count < limit {
                if let found = try change(number) {
                    rows.append(ChangeRow(position: FeedPosition(epoch: epoch, major: number), change: found))
                }
                number += 1
            }
        }
        return ChangeLogRead(epoch: epoch, floor: FeedPosition(epoch: epoch, major: floor),
                             fence: FeedPosition(epoch: epoch, major: last), rows: rows)
    }

    /// The change numbers a purge through `through` forgets (none when the floor is there
    /// already), and the floor after it.
    /// - Throws: ``FeedPurgeRefusal`` for a position of another epoch or past the feed's end.
    static func purged(
        business: String, epoch: UInt64, last: UInt64, floor: UInt64, through: FeedPosition
    ) throws -> (numbers: ClosedRange<UInt64>?, floor: UInt64) {
        guard through.epoch == epoch else {
            throw FeedPurgeRefusal(message: "through \(through) is of epoch \(through.epoch); this feed is at epoch \(epoch)")
        }
        guard through <= FeedPosition(epoch: epoch, major: last) else {
            throw FeedPurgeRefusal(message: "through \(through) is past the end of business \(business)'s feed (\(epoch)-\(last)-0)")
        }
        return through.major > floor ? ((floor + 1)...through.major, through.major) : (nil, floor)
    }
}

extension Sequence<StoredRecord> {
    /// The live records of `business` (of `type`, when given), by type bytes then id bytes: what
    /// a snapshot and a summary read.
    func live(business: String, type: String?) -> [StoredRecord] {
        filter { !$0.isDeleted && $0.businessID.hasSameBytes(as: business) && (type.map($0.type.hasSameBytes(as:)) ?? true) }
            .sorted { left, right in
                left.type.hasSameBytes(as: right.type)
                    ? left.id.utf8.lexicographicallyPrecedes(right.id.utf8) : left.type.utf8.lexicographicallyPrecedes(right.type.utf8)
            }
    }

    /// A snapshot read of these records at `position`: the live ones after `after`, at most `limit`.
    func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int, position: FeedPosition) -> SnapshotRead {
        let live = live(business: business, type: type).filter { after?.precedes(type: $0.type, id: $0.id) ?? true }
        return SnapshotRead(epoch: position.epoch, position: position, records: live.prefix(limit).map(\.feedChange))
    }

    /// A summary of these records' live ones of `type` at `position`.
    func summary(business: String, type: String, position: FeedPosition) -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
        (position, live(business: business, type: type).map { (id: $0.id, revision: UInt64($0.revision)) })
    }
}

/// A feed whose snapshot and summary read every record of a business and the fence at one moment.
package protocol RecordsAtFence {
    /// The business's records (others' may come too) and its fence, seen at one moment.
    func recordsAndFence(business: String) throws -> (FeedPosition, [StoredRecord])
}

extension RecordsAtFence {
    package func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) throws -> SnapshotRead {
        let (fence, stored) = try recordsAndFence(business: business)
        return stored.snapshot(business: business, type: type, after: after, limit: limit, position: fence)
    }

    package func summary(business: String, type: String) throws -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
        let (fence, stored) = try recordsAndFence(business: business)
        return stored.summary(business: business, type: type, position: fence)
    }
}
