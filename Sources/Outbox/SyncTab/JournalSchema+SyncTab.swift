import Foundation
import OutboxCore
import OutboxStorage

/// The Sync tab's reads of the stored projections: each card's newest rows.
extension JournalSchema {
    /// One card gathering every category of `group` (the approval card, the conflict card): its
    /// newest rows across them, and the count of all; no card when no row is in the group.
    func mergedCard(_ group: TabGroup, named name: String, counters: JournalCounters, rowsPerCard: Int,
                    reading: inout TabReading, in txn: borrowing LMDBTransaction) throws -> (card: SyncTab.Card?, count: Int) {
        let counts = counters.tabCounts(group)
        var rows: [SyncTab.Row] = []
        for category in counts.keys {
            rows += try tabRows(group, category: category.string, limit: rowsPerCard, reading: &reading, in: txn)
        }
        rows.sort { $0.changedAt > $1.changedAt }
        let count = Int(counts.values.reduce(0, +))
        let card = rows.first.map {
            SyncTab.Card(category: name, count: count, latestChangeAt: $0.changedAt, rows: Array(rows.prefix(rowsPerCard)))
        }
        return (card, count)
    }

    /// The newest `limit` rows of one Sync tab card, each queued row saying what holds it.
    func tabRows(_ group: TabGroup, category: String, limit: Int, reading: inout TabReading,
                 in txn: borrowing LMDBTransaction) throws -> [SyncTab.Row] {
        var rows: [SyncTab.Row] = []
        // Reversed: the highest latest seq comes first. Each entry holds its row's state.
        try txn.scan(syncTab, leading: JournalCodec.TabKey.leading(group, category: category), reverse: true) { entry in
            guard rows.count < limit else { return .stop }
            var state: OperationState
            do {
                state = try entry.value()
            } catch let error as LMDBCodecError {
                throw OutboxError.projectionCorrupt(reason: "a Sync tab row of \(category): \(error)")
            }
            // Its scheduled retry is not a hold: the banner already says it syncs on its own.
            let waiting = try verdict(on: state, engine: reading.engine, now: .distantPast, lookups: &reading.lookups, in: txn).waitingOn
            open(&state)
            var row = SyncTab.Row(state)
            if let waiting {
                row.waitingReason = try waitingReason(waiting, labels: &reading.labels, in: txn)
            }
            rows.append(row)
            return .next
        }
        return rows
    }
}

extension JournalSchema {
    /// The decisions the engine made for the member since `moment`, newest first, at most
    /// `limit`: read from the `notices` index backwards, stopping at the first older one.
    func notices(since moment: Date, limit: Int, in txn: borrowing LMDBTransaction) throws -> [SyncTab.Notice] {
        var notices: [SyncTab.Notice] = []
        try txn.scan(self.notices, reverse: true) { entry in
            guard notices.count < limit else { return .stop }
            guard let decidedAt = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes), decidedAt >= moment else { return .stop }
            guard var state = try self.stateToShow(try entry.value(), in: txn), let decision = state.decision else { return .next }
            open(&state)
            notices.append(SyncTab.Notice(state, decision: decision, decidedAt: decidedAt))
            return .next
        }
        return notices
    }
}

/// One read of the tab: the engine state every row's verdict takes, and what the rows read so
/// far answered about the rows they wait on, so that the rows of one lane, or waiting on one
/// write, read it and its label once. Valid only inside its transaction.
struct TabReading {
    let engine: EngineState
    var lookups = EligibilityLookups()
    /// Rows a queued row waits on, by the label its reason names them with.
    var labels: [OperationID: String] = [:]
}
