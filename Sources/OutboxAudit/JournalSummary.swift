public import Outbox
public import Foundation
public import OutboxCore

/// A journal at a glance: what support reads before anything else.
public struct JournalSummary: Sendable, Equatable {
    /// The journal's directory.
    public var path: String
    /// The record format version stored in `meta`.
    public var formatVersion: Int
    /// The projections' layout version stored in `meta`; `nil` when none is stored.
    public var projectionVersion: Int?
    /// Whether the projections are of this engine's layout (when not, they were folded in memory).
    public var projectionsAreCurrent: Bool
    /// The account the journal belongs to, when recorded.
    public var account: String?
    /// The first and last seq; `nil` and ``JournalSequence/zero`` for an empty journal.
    public var firstSeq: JournalSequence?
    public var lastSeq: JournalSequence
    /// Records in the journal, readable or not.
    public var eventCount: Int
    /// The bytes of those records, as counted when they were written.
    public var eventBytes: Int
    /// The size of `data.mdb` on disk.
    public var fileBytes: Int
    /// The bytes of the pages LMDB has in use.
    public var usedBytes: Int
    /// Operations by status, every status present.
    public var statusCounts: [OutboxStatus: Int]
    /// The queued or syncing operation enqueued first: what has waited longest.
    package var oldestPending: OperationState?
    /// Whether the worker is paused (a 401) and why, and which engine last opened the journal.
    package var engine: EngineState
    /// When the last readable event was recorded (device clock).
    public var lastEventAt: Date?
    /// The records the summary had to read and could not (the journal's last ones, when damaged).
    public var damaged: [Outbox.DamagedRecord]
    /// Each business's change feed the journal pulled: its cursor and the page that set it.
    public var feeds: [Feed] = []
    /// The waiting writes at the moment read as now: the oldest one's connected age (a route
    /// seen at the last event counts up to that event: what came after is unknown), the oldest
    /// one held by no person, whether a route was seen at the last event.
    public var oldestPendingConnectedAgeSeconds: Double?
    public var oldestHealthyPending: OutboxMetrics.PendingAge?
    public var routeSeen = false
    /// The service objective at ``OutboxMetrics.AcknowledgementObjective/defaultIntervalSeconds``, and the
    /// attempts abandoned at an open and cancelled by an expiry.
    public var acknowledgement = OutboxMetrics.AcknowledgementObjective.untracked
    public var abandonedAttempts = 0
    public var cancelledAttempts = 0

    /// A business's change feed as the journal holds it.
    public struct Feed: Sendable, Equatable {
        public var business: String
        /// Where its next page starts (``FeedPosition``'s text); `nil` before its first page or
        /// resnapshot lands.
        public var cursor: String?
        /// The event that set it (`pageApplied`, or a resnapshot's), and when it was recorded
        /// (`nil`: compacted away).
        public var pageSeq: JournalSequence
        public var pageAt: Date?
        /// When the feed last reached its end (a page that did not leaves it as far behind as it
        /// was): what its lag counts from; `nil` when no page that did is in the journal.
        public var caughtUpAt: Date?
        /// A resnapshot under way: the snapshot's first position, the records and pages staged.
        public var staging: Staging? = nil

        public struct Staging: Sendable, Equatable, Encodable {
            public var position: String
            public var pages: Int
            public var records: Int
            public var startedSeq: JournalSequence
        }
    }

    package init(path: String, formatVersion: Int, projectionVersion: Int?, projectionsAreCurrent: Bool,
                account: String?, firstSeq: JournalSequence?, lastSeq: JournalSequence, eventCount: Int,
                eventBytes: Int, fileBytes: Int, usedBytes: Int, statusCounts: [OutboxStatus: Int],
                oldestPending: OperationState?, engine: EngineState, lastEventAt: Date?, damaged: [Outbox.DamagedRecord]) {
        self.path = path
        self.formatVersion = formatVersion
        self.projectionVersion = projectionVersion
        self.projectionsAreCurrent = projectionsAreCurrent
        self.account = account
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.eventCount = eventCount
        self.eventBytes = eventBytes
        self.fileBytes = fileBytes
        self.usedBytes = usedBytes
        self.statusCounts = statusCounts
        self.oldestPending = oldestPending
        self.engine = engine
        self.lastEventAt = lastEventAt
        self.damaged = damaged
    }

    /// Operations of every status.
    public var operationCount: Int { statusCounts.values.reduce(0, +) }

    /// The operation that has waited longest, and since when it was saved.
    public var oldestPendingID: OperationID? { oldestPending?.id }
    public var oldestPendingSince: Date? { oldestPending?.createdAt }
    /// Why the worker sends nothing, when a 401 paused it.
    public var workerPause: Outbox.WorkerPause? { engine.pause }
    /// The last `journalOpened` event: which engine and app opened the journal.
    package var lastOpened: JournalOpened? { engine.lastOpened }
}

/// How many operations were waiting (not yet terminal) right after one event.
public struct QueueDepthSample: Sendable, Equatable, Codable {
    public var seq: JournalSequence
    public var recordedAt: Date
    /// Operations queued, syncing, waiting for approval, failed or blocked.
    public var pending: Int

    public init(seq: JournalSequence, recordedAt: Date, pending: Int) {
        self.seq = seq
        self.recordedAt = recordedAt
        self.pending = pending
    }

    /// At most `maxCount` samples of `samples`: each kept one is the highest of its stretch, so
    /// a spike survives; the last sample is always kept.
    public static func thinned(_ samples: [QueueDepthSample], to maxCount: Int) -> [QueueDepthSample] {
        guard maxCount >= 2, samples.count > maxCount else { return samples }
        let buckets = maxCount - 1
        var thinned: [QueueDepthSample] = []
        thinned.reserveCapacity(maxCount)
        let body = samples.dropLast()
        for bucket in 0..<buckets {
            let lower = body.startIndex + bucket * body.count / buckets
            let upper = body.startIndex + (bucket + 1) * body.count / buckets
            guard lower < upper else { continue }
            // Non-empty by the guard above.
            if let highest = body[lower..<upper].max(by: { $0.pending < $1.pending }) { thinned.append(highest) }
        }
        if let last = samples.last { thinned.append(last) }
        return thinned
    }
}
