import Foundation
import OutboxCore
import OutboxStorage

/// The member's and support's views, answered from counters and indexes: never a journal scan.
extension JournalQueries {
    /// The Sync tab, each card holding at most `rowsPerCard` rows (its count covers them all).
    func syncTab(isOnline: Bool, rowsPerCard: Int) throws(OutboxError) -> SyncTab {
        let schema = self.schema
        return try read { txn in
            let counters = try schema.counters(in: txn)
            var cards: [SyncCard] = []
            for (category, count) in counters.tabCounts(.waiting) {
                let rows = try schema.tabRows(.waiting, category: category.string, limit: rowsPerCard, in: txn)
                guard let latest = rows.first else { continue }
                cards.append(SyncCard(category: category.string, count: Int(count), latestChangeAt: latest.changedAt, rows: rows))
            }
            cards.sort { ($0.latestChangeAt, ExactString($1.category)) > ($1.latestChangeAt, ExactString($0.category)) }

            let (approvalCard, approvalCount) = try schema.mergedCard(.approval, named: SyncCard.approvalCategory, counters: counters, rowsPerCard: rowsPerCard, in: txn)
            let (conflictCard, conflictCount) = try schema.mergedCard(.conflicted, named: SyncCard.conflictCategory, counters: counters, rowsPerCard: rowsPerCard, in: txn)

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

    /// Rows not yet settled: every status but synced, withdrawn and discarded.
    func unsettledCount() throws(OutboxError) -> Int {
        let schema = self.schema
        return try read { txn in
            try schema.count(ofStatuses: { !$0.isTerminal }, in: txn)
        }
    }

    /// Ledger rows in journal order, filtered and paged.
    func ledger(_ query: LedgerQuery) throws(OutboxError) -> LedgerPage {
        try Self.checkLimit(query.limit)
        let projections = self.projections
        let statuses = query.status.map { [$0] } ?? OutboxStatus.allCases
        let rows = try read { txn in
            try projections.oldestFirst(statuses: statuses, after: query.after, limit: Self.rowsToRead(query.limit), where: { state in
                if let from = query.createdFrom, state.createdAt < from { return false }
                if let before = query.createdBefore, state.createdAt >= before { return false }
                return true
            }, in: txn)
        }
        let page = Self.cut(rows, limit: query.limit, cursor: \.firstSeq)
        return LedgerPage(entries: page.rows.map(LedgerEntry.init), nextAfter: page.nextAfter)
    }

    /// The engine's numbers at `now`.
    func metrics(now: Date) throws(OutboxError) -> OutboxMetrics {
        let schema = self.schema
        let projections = self.projections
        let fileBytes = (try? environment.info().usedBytes) ?? 0
        let liveBytes = (try? environment.liveBytes()) ?? fileBytes
        return try read { txn in
            let depth = try projections.statusCounts(in: txn)
            let oldest = try projections.oldestPending(in: txn)
            let counters = try schema.counters(in: txn)
            func outcome(_ category: OutcomeCategory) -> Int { Int(counters.count(of: category)) }
            return OutboxMetrics(
                queueDepth: depth,
                oldestPendingAgeSeconds: oldest.map { now.timeIntervalSince($0.createdAt) },
                oldestPendingOperation: oldest?.id,
                totalAttempts: Int(counters.attempts),
                accepted: outcome(.accepted),
                replayed: outcome(.replayed),
                rejected: outcome(.rejected),
                blocked: outcome(.blocked),
                transientFailures: outcome(.transientFailure),
                conflictsByOperationType: counters.conflictsByOperationType.mapValues { Int($0) },
                revisionConflictsByOperationType: counters.revisionConflictsByOperationType.mapValues { Int($0) },
                gaveUp: outcome(.gaveUp),
                journalEvents: Int(counters.events),
                journalEventBytes: try projections.eventBytes(in: txn),
                journalFileBytes: fileBytes,
                journalLiveBytes: liveBytes,
                journalBudgetBytes: options.limitBytes
            )
        }
    }
}

extension JournalSchema {
    /// Rows by status, every status present.
    func queueDepth(in txn: borrowing LMDBTransaction) throws -> [OutboxStatus: Int] {
        Self.queueDepth(try counters(in: txn))
    }

    /// Rows by status, every status present, from the counters.
    static func queueDepth(_ counters: JournalCounters) -> [OutboxStatus: Int] {
        var depth: [OutboxStatus: Int] = [:]
        for status in OutboxStatus.allCases { depth[status] = Int(counters.count(of: status)) }
        return depth
    }

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

    /// What holds a queued row, in the member's words.
    func waitingReason(_ waiting: WaitingOn, in txn: borrowing LMDBTransaction) throws -> String? {
        func label(_ id: OperationID) throws -> String {
            guard let state = try self.state(id, in: txn), let text = presentation(of: state), !text.label.isEmpty else {
                return "an earlier change"
            }
            return text.label
        }
        switch waiting {
        case .laneHead(let head, let status), .recordWrite(let head, let status):
            let why = switch status {
            case .failed?, .blocked?: ", which needs your attention"
            case .conflicted?: ", which was changed elsewhere"
            case .pendingApproval?: ", which waits for approval"
            default: ""
            }
            return "Waits for an earlier change to \(try label(head))\(why)"
        case .dependency(let dependency, let status):
            let why = switch status {
            case .failed?, .blocked?, .conflicted?: ", which needs your attention"
            case .pendingApproval?: ", which waits for approval"
            default: ""
            }
            return "Waits for \(try label(dependency)) to sync first\(why)"
        case .sessionPaused:
            return "Waits for you to sign in again"
        case .noSession:
            return "Waits for someone to sign in"
        case .otherAccount:
            return "Not sent while another account is signed in"
        case .scheduled:
            return nil
        }
    }
}
