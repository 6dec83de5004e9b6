import Foundation
import OutboxCore
import OutboxStorage

/// The Sync tab and the badge, answered from counters and indexes: never a journal scan.
extension JournalQueries {
    /// The Sync tab, each card holding at most `rowsPerCard` rows (its count covers them all).
    func syncTab(isOnline: Bool, rowsPerCard: Int, wording: SyncTabWording) throws(OutboxError) -> SyncTab {
        let schema = self.schema
        return try read { txn in
            let counters = try schema.counters(in: txn)
            let engine = try schema.engineStateAsJudged(in: txn)
            var reading = TabReading(engine: engine)
            var cards: [SyncTab.Card] = []
            for (category, count) in counters.tabCounts(.waiting) {
                let rows = try schema.tabRows(.waiting, category: category.string, limit: rowsPerCard, reading: &reading, in: txn)
                guard let latest = rows.first else { continue }
                cards.append(SyncTab.Card(category: category.string, count: Int(count), latestChangeAt: latest.changedAt, rows: rows))
            }
            cards.sort { ($0.latestChangeAt, ExactString($1.category)) > ($1.latestChangeAt, ExactString($0.category)) }

            var (approvalCard, approvalCount) = try schema.mergedCard(
                .approval, named: SyncTab.Card.approvalCategory, counters: counters, rowsPerCard: rowsPerCard, reading: &reading, in: txn)
            approvalCard?.headline = wording.approvalHeadline(counters.tabCounts(.approval).map { ($0.key.string, Int($0.value)) })
            let (conflictCard, conflictCount) = try schema.mergedCard(
                .conflicted, named: SyncTab.Card.conflictCategory, counters: counters, rowsPerCard: rowsPerCard, reading: &reading, in: txn)

            let depth = JournalSchema.queueDepth(counters)
            func rows(_ counted: (OutboxStatus) -> Bool) -> Int { depth.filter { counted($0.key) }.reduce(0) { $0 + $1.value } }
            let waitingForNetwork = rows(\.waitsForNetwork)
            let needingAttention = rows(\.needsAPerson)
            return SyncTab(
                cards: cards,
                approvalCard: approvalCard,
                conflictCard: conflictCard,
                totalCount: cards.reduce(0) { $0 + $1.count } + approvalCount + conflictCount,
                banner: .make(isOnline: isOnline, waitingForNetwork: waitingForNetwork,
                              needingAttention: needingAttention, waitingForApproval: approvalCount, hold: Self.bannerHold(engine)),
                // The badge's statuses (``OutboxStatus/countsOnBadge``), from the same counters.
                badgeCount: rows(\.countsOnBadge),
                notices: try schema.notices(since: wording.now.addingTimeInterval(-wording.noticeSeconds), limit: rowsPerCard, in: txn)
            )
        }
    }

    /// What holds every waiting row at once, as the journal records the engine: the banner
    /// then says so instead of promising they sync on their own.
    static func bannerHold(_ engine: EngineState) -> SyncTab.Banner.Hold? {
        switch Eligibility.engineHold(Eligibility.Engine(engine)) {
        case .otherInstallation?: .otherInstallation
        case .sessionPaused?, .noSession?, .otherAccount?: .signIn
        default: nil
        }
    }

    /// Queued, syncing, failed, blocked and conflicted rows (``OutboxStatus/countsOnBadge``):
    /// never pending approval, synced, withdrawn, discarded or superseded.
    func badgeCount() throws(OutboxError) -> Int {
        let schema = self.schema
        return try read { txn in
            try schema.count(ofStatuses: \.countsOnBadge, in: txn)
        }
    }
}

/// What the Sync tab's words need beyond the journal: the moment, how long a notice is shown, and
/// the member's nouns for each category.
struct SyncTabWording {
    var now: Date
    var noticeSeconds: TimeInterval
    var nouns: [String: OutboxConfiguration.CategoryNoun]

    init(_ configuration: OutboxConfiguration) {
        now = configuration.clock.now()
        noticeSeconds = configuration.decisionNoticeSeconds
        nouns = configuration.categoryNouns
    }

    /// "1 product is waiting for approval", "1 product and 2 employees are waiting for approval":
    /// each category counted in its noun (in changes when it has none), the categories in byte
    /// order; `nil` when nothing waits.
    func approvalHeadline(_ counts: [(category: String, count: Int)]) -> String? {
        let parts = counts.filter { $0.count > 0 }.sorted { ExactString($0.category) < ExactString($1.category) }
        guard !parts.isEmpty else { return nil }
        let phrases = parts.map { part in
            nouns[part.category]?.counted(part.count)
                ?? "\(OutboxConfiguration.CategoryNoun.change.counted(part.count)) in \(part.category)"
        }
        let list = phrases.count == 1 ? phrases[0] : phrases.dropLast().joined(separator: ", ") + " and " + phrases.last!
        let verb = parts.count == 1 && parts[0].count == 1 ? "is" : "are"
        return "\(list) \(verb) waiting for approval"
    }
}
