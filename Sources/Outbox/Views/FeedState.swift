public import Foundation
package import OutboxWire

extension Outbox.FeedState {
    /// How far a pull of the feed has come: what a progress bar shows while a first sync of a
    /// large catalogue runs. Counted in memory as each page lands (a page is one commit; no
    /// commit is made per record), and observable: an observation reading ``Outbox/feedState(business:)``
    /// hears every page. The feed names no total ahead: a screen shows the count, or the share
    /// of a total the app knows.
    public struct PullProgress: Sendable, Equatable {
        /// When the pull began.
        public var startedAt: Date
        /// Whether it still runs; `false` once it reached the end, gave way to a write or stopped.
        public var isRunning: Bool
        public var pagesApplied: Int
        /// Changes applied: records written or deleted (passed-over changes not counted).
        public var changesApplied: Int
        /// Bytes of the server's pages applied.
        public var bytesApplied: Int

        public init(startedAt: Date, isRunning: Bool = true, pagesApplied: Int = 0, changesApplied: Int = 0, bytesApplied: Int = 0) {
            self.startedAt = startedAt
            self.isRunning = isRunning
            self.pagesApplied = pagesApplied
            self.changesApplied = changesApplied
            self.bytesApplied = bytesApplied
        }
    }

    /// How far a resnapshot's staging has come.
    public struct ResnapshotProgress: Sendable, Equatable {
        /// The first snapshot page's position: the feed's cursor once swapped in.
        public var position: String
        public var pagesStaged: Int
        public var recordsStaged: Int

        public init(position: String, pagesStaged: Int, recordsStaged: Int) {
            self.position = position
            self.pagesStaged = pagesStaged
            self.recordsStaged = recordsStaged
        }
    }
}

extension Outbox {
    /// A business's change feed as the engine holds it: where its cursor is, when pages last landed
    /// and last reached the end, when the worker pulls it next and how far behind it is. A screen can
    /// say "updated 2 hours ago" from ``caughtUpAt`` and ``lagSeconds``.
    public struct FeedState: Sendable, Equatable {
        public var business: String
        /// The server epoch and the cursor (`epoch-major-minor`) the next page starts from; `nil`
        /// for a feed never pulled.
        public var epoch: UInt64?
        public var cursor: String?
        /// When a page last landed, and when a page last reached the feed's end.
        public var lastPageAt: Date?
        public var caughtUpAt: Date?
        /// When the worker pulls it next on its own (freshness, or a backoff); `nil` without a
        /// pull configuration. At or before now: at the next pass.
        public var nextPullAt: Date?
        /// Seconds since the last page that reached the end, by the clock now (uptime within a
        /// boot, the wall clock across one); `nil` when it never did.
        public var lagSeconds: Double?
        /// What the server published of its feed in the last page seen since the journal opened.
        package var limits: FeedLimits?
        /// Failed pulls in a row since the last that went on, and what stopped the last pull (kept
        /// in memory since the journal opened).
        public var failures: Int
        public var lastStop: Outbox.PullStop?
        /// A resnapshot under way: the base fetched again whole is being staged while the member
        /// still sees the old one.
        public var resnapshot: Outbox.FeedState.ResnapshotProgress?
        /// The pull under way, or the last one since the journal opened: pages, changes and bytes
        /// applied so far.
        public var pull: Outbox.FeedState.PullProgress?

        package init(business: String, epoch: UInt64? = nil, cursor: String? = nil, lastPageAt: Date? = nil, caughtUpAt: Date? = nil,
                    nextPullAt: Date? = nil, lagSeconds: Double? = nil, limits: FeedLimits? = nil, failures: Int = 0, lastStop: Outbox.PullStop? = nil) {
            self.business = business
            self.epoch = epoch
            self.cursor = cursor
            self.lastPageAt = lastPageAt
            self.caughtUpAt = caughtUpAt
            self.nextPullAt = nextPullAt
            self.lagSeconds = lagSeconds
            self.limits = limits
            self.failures = failures
            self.lastStop = lastStop
        }
    }
}
