import Foundation
import OutboxCore
import OutboxStorage

/// The Sync tab's reads of the stored projections: each card's newest rows.
extension JournalSchema {
    /// One card gathering every category of `group` (the approval card, the conflict card): its
    /// newest rows across them, and the count of all; no card when no row is in the group.
    func mergedCard(_ group: TabGroup, named name: String, counters: JournalCounters, rowsPerCard: Int,
                    in txn: borrowing LMDBTransaction) throws -> (card: SyncCard?, count: Int) {
        let counts = counters.tabCounts(group)
        var rows: [SyncRow] = []
        for category in counts.keys {
            rows += try tabRows(group, category: category.string, limit: rowsPerCard, in: txn)
        }
        rows.sort { $0.changedAt > $1.changedAt }
        let count = Int(counts.values.reduce(0, +))
        let card = rows.first.map {
            SyncCard(category: name, count: count, latestChangeAt: $0.changedAt, rows: Array(rows.prefix(rowsPerCard)))
        }
        return (card, count)
    }

    /// The newest `limit` rows of one Sync tab card, each queued row saying what holds it.
    func tabRows(_ group: TabGroup, category: String, limit: Int, in txn: borrowing LMDBTransaction) throws -> [SyncRow] {
        var rows: [SyncRow] = []
        let engine = try engineState(in: txn)
        // Reversed: the highest latest seq comes first.
        try txn.scan(syncTab, leading: JournalCodec.TabKey.leading(group, category: category), reverse: true) { entry in
            guard rows.count < limit else { return .stop }
            if let state = try self.state(try entry.value(), in: txn) {
                var row = SyncRow(opened(state))
                // Its scheduled retry is not a hold: the banner already says it syncs on its own.
                if let waiting = try waitingOn(state, engine: engine, now: .distantPast, in: txn) {
                    row.waitingReason = try waitingReason(waiting, in: txn)
                }
                rows.append(row)
            }
            return .next
        }
        return rows
    }
}
