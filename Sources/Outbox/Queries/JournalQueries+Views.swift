import Foundation
import OutboxCore
import OutboxStorage

/// The ledger, the metrics and the counts behind them, answered from counters and indexes:
/// never a journal scan. The Sync tab's reads are in `SyncTab/`.
extension JournalQueries {
    /// Rows not yet settled: every status but synced, withdrawn and discarded.
    func unsettledCount() throws(OutboxError) -> Int {
        let schema = self.schema
        return try read { txn in
            try schema.count(ofStatuses: { !$0.isTerminal }, in: txn)
        }
    }


    /// The engine's numbers at `now`, the service objective at `objectiveSeconds`.
    func metrics(now: Date, objectiveSeconds: Double = 60) throws(OutboxError) -> OutboxMetrics {
        let schema = self.schema
        let projections = self.projections
        let fileBytes = (try? environment.info().usedBytes) ?? 0
        let liveBytes = (try? environment.liveBytes()) ?? fileBytes
        return try read { txn in
            let depth = try projections.statusCounts(in: txn)
            let oldest = try projections.oldestPending(in: txn)
            let counters = try schema.counters(in: txn)
            func outcome(_ category: OutcomeCategory) -> Int { Int(counters.count(of: category)) }
            let waiting = try self.waiting(now: now, objectiveSeconds: objectiveSeconds, in: txn)
            var metrics = OutboxMetrics(
                queueDepth: depth,
                oldestPendingAgeSeconds: oldest.map { now.timeIntervalSince($0.createdAt) },
                oldestPendingOperation: oldest?.id,
                totalAttempts: Int(counters.attempts),
                accepted: outcome(.accepted),
                replayed: outcome(.replayed),
                rejected: outcome(.rejected),
                blocked: outcome(.blocked),
                transientFailures: outcome(.transientFailure),
                conflictsByOperationType: counters.conflictsByOperationType.mapValues { Int($0) }.byString(combining: +),
                revisionConflictsByOperationType: counters.revisionConflictsByOperationType.mapValues { Int($0) }.byString(combining: +),
                gaveUp: outcome(.gaveUp),
                journalEvents: Int(counters.events),
                journalEventBytes: try projections.eventBytes(in: txn),
                journalFileBytes: fileBytes,
                journalLiveBytes: liveBytes,
                journalBudgetBytes: options.limitBytes
            )
            metrics.oldestPendingConnectedAgeSeconds = waiting.ages.first?.connectedAgeSeconds
            metrics.oldestHealthyPending = waiting.oldestHealthy
            metrics.pendingAges = waiting.ages
            metrics.routeSeen = waiting.routeSeen
            metrics.acknowledgement = counters.acknowledgement(within: objectiveSeconds, pendingPast: waiting.pastInterval)
            metrics.abandonedAttempts = Int(counters.abandonedAttempts)
            metrics.cancelledAttempts = Int(counters.cancelledAttempts)
            return metrics
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
}
