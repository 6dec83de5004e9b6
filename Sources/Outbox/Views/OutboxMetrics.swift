import Foundation
public import OutboxCore

/// The engine's numbers, read from its counters without a scan.
public struct OutboxMetrics: Sendable, Equatable, Codable {
    /// Rows by status, every status present (zero when none).
    public var queueDepth: [OutboxStatus: Int]
    /// How long the oldest queued or syncing row has waited, by the clock now.
    public var oldestPendingAgeSeconds: Double?
    public var oldestPendingOperation: OperationID?
    /// The oldest pending row's connected age: how long it waited while a route to the server
    /// was seen (any HTTP response is a route; no response, the journal closed, or the app's
    /// background time over is none). `nil` for a row made before the journal kept the clock.
    public var oldestPendingConnectedAgeSeconds: Double? = nil
    /// The oldest pending row that waits on the engine, not on a person (no failed, blocked,
    /// conflicted or awaiting-approval row ahead of it, no sign-in needed): a stranded device
    /// shows here. Looked for among the oldest 1,000 pending rows.
    public var oldestHealthyPending: OutboxMetrics.PendingAge? = nil
    /// The oldest pending rows (at most ``OutboxMetrics.PendingAge/reported``), oldest first, each with its
    /// wall-clock and connected age.
    public var pendingAges: [OutboxMetrics.PendingAge] = []
    /// Whether a route to the server is seen now, as the journal last recorded it.
    public var routeSeen: Bool = false
    /// The service objective (``OutboxMetrics.AcknowledgementObjective``) at the configured interval.
    public var acknowledgement = OutboxMetrics.AcknowledgementObjective(intervalSeconds: 60, acknowledged: 0, withinInterval: 0, pendingPastInterval: 0)
    /// Attempts the app's end interrupted (abandoned at the next open, replayed under their key),
    /// and attempts an expiry of background time cancelled, over the operations whose events the
    /// journal keeps (compaction takes them with the events).
    public var abandonedAttempts: Int = 0
    public var cancelledAttempts: Int = 0
    /// Attempts started, over every operation the journal knows (compacted ones included).
    public var totalAttempts: Int
    /// Operations by their latest outcome.
    public var accepted: Int
    public var replayed: Int
    public var rejected: Int
    public var blocked: Int
    public var transientFailures: Int
    /// Operations whose last answer was `idempotency_conflict`, by operation type (compared
    /// byte for byte, as the journal keeps it).
    public var conflictsByOperationType: [String: Int]
    /// Operations whose last answer was a revision conflict (412, `revision_conflict`), by
    /// operation type: the record changed elsewhere, apart from key conflicts.
    public var revisionConflictsByOperationType: [String: Int] = [:]
    /// Operations the retry policy gave up on (`gave_up`).
    public var gaveUp: Int = 0
    /// The journal's size: events, their record bytes, and the bytes of the file in use.
    public var journalEvents: Int
    public var journalEventBytes: Int
    public var journalFileBytes: Int
    /// The bytes holding live data (the file in use, less pages free for reuse), against the
    /// budget (`maxJournalBytes`).
    public var journalLiveBytes: Int
    public var journalBudgetBytes: Int
    /// The problems the engine met since it opened, by kind: errors it handled without a caller
    /// to throw them to (a read that failed during a pass, an outcome it could not record, a
    /// compaction that failed). Counted in memory, never journaled; each is also logged, and the
    /// latest are in `Outbox.recentProblems`. Empty from a ``JournalReader``.
    public var problems: [OutboxLogger.Problem.Kind: Int] = [:]
    /// The pull's numbers since the journal opened (counted in memory, zero from a
    /// ``JournalReader``): passes that pulled at least one feed, pages applied, pages refused
    /// (each journaled as `pageRefused`), and pulled changes passed over (of a local-only type or
    /// one the pull configuration does not list).
    public var pulls: Int = 0
    public var pagesApplied: Int = 0
    public var pagesRefused: Int = 0
    public var pulledChangesSkipped: Int = 0
    /// Bases fetched again whole and swapped in (a 409, another epoch, a summary mismatch), and
    /// type summaries compared with the base and found to differ, since the journal opened.
    public var resnapshots: Int = 0
    public var summariesChecked: Int = 0
    public var summaryMismatches: Int = 0
    /// Per business, the seconds since its feed's last page that reached the end, by the clock
    /// now (uptime within a boot): a feed never caught up is absent.
    public var cursorLagSeconds: [String: Double] = [:]

    /// The share of the budget in use, 0...1.
    public var budgetUsed: Double {
        journalBudgetBytes > 0 ? Double(journalLiveBytes) / Double(journalBudgetBytes) : 0
    }
}

extension OutboxMetrics {
    /// How long one pending write has waited.
    public struct PendingAge: Sendable, Equatable, Codable {
        public var operation: OperationID
        /// Since it was made, by the clock now.
        public var ageSeconds: Double
        /// Of that, the time a route to the server was seen; `nil` for a write made before the
        /// journal kept the connected clock.
        public var connectedAgeSeconds: Double?
        /// Whether it waits on a person (a row ahead of it failed, is blocked, conflicted or awaits
        /// approval, or someone must sign in) rather than on the engine.
        public var heldByPerson: Bool

        /// How many of the oldest pending writes ``OutboxMetrics/pendingAges`` lists.
        public static let reported = 20

        public init(operation: OperationID, ageSeconds: Double, connectedAgeSeconds: Double?, heldByPerson: Bool) {
            self.operation = operation
            self.ageSeconds = ageSeconds
            self.connectedAgeSeconds = connectedAgeSeconds
            self.heldByPerson = heldByPerson
        }
    }
}
