package import Foundation
package import OutboxCore
package import OutboxStorage

/// How long the writes waiting have waited, by the wall clock and by connected age (the time a
/// route to the server was seen), and which of them wait on the engine rather than on a person:
/// what ``OutboxMetrics`` and `journal-inspect summary` show of a stranded device.
extension JournalQueries {
    /// The most pending writes read for ``Waiting``: ages are reported for the oldest
    /// ``OutboxMetrics.PendingAge/reported`` of them, and the oldest healthy one is looked for among these.
    package static let pendingScanLimit = 1_000

    package struct Waiting: Sendable {
        package var ages: [OutboxMetrics.PendingAge]
        package var oldestHealthy: OutboxMetrics.PendingAge?
        /// Healthy writes waiting whose connected age is past the objective's interval.
        package var pastInterval: Int
        package var routeSeen: Bool
    }

    /// The waiting writes at `now`, in one snapshot.
    /// - Parameter watchedUntil: for a reader of a journal no engine has open, its last event:
    ///   a route seen then counts as connected up to there, not up to `now`.
    package func waiting(now: Date, objectiveSeconds: Double, watchedUntil: Date? = nil, in txn: borrowing LMDBTransaction) throws -> Waiting {
        let engine = try projections.engineState(in: txn)
        let clock = engine.route.connectedClock(at: watchedUntil.map { min($0, now) } ?? now)
        var ages: [OutboxMetrics.PendingAge] = []
        var healthy: OutboxMetrics.PendingAge?
        var past = 0
        for state in try projections.oldestPending(limit: Self.pendingScanLimit, in: txn) {
            let held = try heldByPerson(state, engine: engine, now: now, in: txn)
            let age = OutboxMetrics.PendingAge(
                operation: state.id, ageSeconds: max(0, now.timeIntervalSince(state.createdAt)),
                connectedAgeSeconds: state.connectedClockAtEnqueue.map { max(0, clock - $0) }, heldByPerson: held
            )
            if ages.count < OutboxMetrics.PendingAge.reported { ages.append(age) }
            if !held {
                if healthy == nil { healthy = age }
                if let connected = age.connectedAgeSeconds, connected > objectiveSeconds { past += 1 }
            }
        }
        return Waiting(ages: ages, oldestHealthy: healthy, pastInterval: past, routeSeen: engine.route.seen)
    }

    /// Whether a pending write waits on a person: a lane head, dependency or earlier write of
    /// its record that failed, is blocked, conflicted or waits for approval, or a session a
    /// member must sign in to. Unknown (false) when the projections are of another layout.
    private func heldByPerson(_ state: OperationState, engine: EngineState, now: Date, in txn: borrowing LMDBTransaction) throws -> Bool {
        guard projectionsAreCurrent, state.status == .queued else { return false }
        switch try schema.waitingOn(state, engine: engine, now: now, in: txn) {
        case .laneHead(_, let status)?, .dependency(_, let status)?, .recordWrite(_, let status)?:
            return status.map { [.failed, .blocked, .conflicted, .pendingApproval].contains($0) } ?? false
        case .sessionPaused?, .noSession?, .otherAccount?, .otherInstallation?:
            return true
        case .scheduled?, .attachment?, nil:
            return false
        }
    }
}
