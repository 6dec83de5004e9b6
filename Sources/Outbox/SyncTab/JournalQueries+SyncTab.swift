import Foundation
import OutboxCore
import OutboxStorage

/// The Sync tab and the badge, answered from counters and indexes: never a journal scan.
extension JournalQueries {
    /// The Sync tab, each card holding at most `rowsPerCard` rows (its count covers them all).
    func syncTab(isOnline: Bool, rowsPerCard: Int) throws(OutboxError) -> SyncTab {
        let schema = self.schema
        return try read { txn in
            let counters = try schema.counters(in: txn)
            var reading = TabReading(engine: try schema.engineState(in: txn))
            var cards: [SyncCard] = []
            for (category, count) in counters.tabCounts(.waiting) {
                let rows = try schema.tabRows(.waiting, category: category.string, limit: rowsPerCard, reading: &reading, in: txn)
                guard let latest = rows.first else { continue }
                cards.append(SyncCard(category: category.string, count: Int(count), latestChangeAt: latest.changedAt, rows: rows))
            }
            cards.sort { ($0.latestChangeAt, ExactString($1.category)) > ($1.latestChangeAt, ExactString($0.category)) }

            let (approvalCard, approvalCount) = try schema.mergedCard(
                .approval, named: SyncCard.approvalCategory, counters: counters, rowsPerCard: rowsPerCard, reading: &reading, in: txn)
            let (conflictCard, conflictCount) = try schema.mergedCard(
                .conflicted, named: SyncCard.conflictCategory, counters: counters, rowsPerCard: rowsPerCard, reading: &reading, in: txn)

            let depth = JournalSchema.queueDepth(counters)
            let waitingForNetwork = depth[.queued, default: 0] + depth[.syncing, default: 0]
            let needingAttention = depth[.failed, default: 0] + depth[.blocked, default: 0] + depth[.conflicted, default: 0]
            return SyncTab(
                cards: cards,
                approvalCard: approvalCard,
                conflictCard: conflictCard,
                totalCount: cards.reduce(0) { $0 + $1.count } + approvalCount + conflictCount,
                banner: .make(isOnline: isOnline, waitingForNetwork: waitingForNetwork,
                              needingAttention: needingAttention, waitingForApproval: approvalCount),
                // The badge's statuses (``OutboxStatus/needsAttention``), from the same counters.
                badgeCount: waitingForNetwork + needingAttention
            )
        }
    }

    /// Queued, syncing, failed, blocked and conflicted rows (``OutboxStatus/needsAttention``):
    /// never pending approval, synced, withdrawn, discarded or superseded.
    func badgeCount() throws(OutboxError) -> Int {
        let schema = self.schema
        return try read { txn in
            try schema.count(ofStatuses: \.needsAttention, in: txn)
        }
    }
}
