public import Foundation
public import OutboxCore
package import OutboxWire

/// What applying one page of a change feed did.
package enum PageOutcome: Sendable, Equatable {
    /// Its changes and its cursor landed in one commit (this event).
    case applied(PageApplied)
    /// An empty page at the cursor the feed already had: nothing to write. (A first pull's
    /// empty page is applied: the position it gave is kept.)
    case unchanged
    /// The page is of another epoch of the server: the base must be fetched again whole.
    case resnapshot(epoch: UInt64)
    /// The page was refused before anything of it was written.
    case refused(PageRefusal)
}

extension DrainBudget.Stop {
    /// The drain's budget behind a feed's stop, if that is what stopped it.
    init?(_ stop: Outbox.PullStop) {
        switch stop {
        case .budgetSpent: self = .budgetSpent
        case .expired: self = .expired
        default: return nil
        }
    }
}

extension Outbox {
    /// Pulls every business's change feed now, page by page, each page in its own commit, and
    /// returns what each did. It runs as one of the worker's passes (never beside another): the
    /// pass sends the writes due first, then pulls every feed, whatever their freshness; a feed
    /// the server asked to wait (`Retry-After`) is not asked before then.
    ///
    /// ```swift
    /// let report = try await outbox.pull()
    /// for feed in report.feeds where feed.stoppedBy != nil { print(feed.business, feed.stoppedBy!) }
    /// ```
    ///
    /// The feeds are ``PullConfiguration/businesses`` and every business the journal holds a
    /// feed, a server base or a record write for.
    /// - Throws: ``OutboxError/closed`` (also when a sign-out stopped the worker before the pass
    ///   ended: the pull stops after the page in hand); ``OutboxError/invalidConfiguration(field:problem:)``
    ///   when ``OutboxConfiguration/pull`` is `nil`.
    @discardableResult
    public func pull() async throws -> Outbox.PullReport {
        try ensureOpen()
        guard configuration.pull != nil else {
            throw OutboxError.invalidConfiguration(field: "pull", problem: "is nil: set OutboxConfiguration.pull to a PullConfiguration to pull")
        }
        guard let report = await worker.pull() else { throw OutboxError.closed }
        return report
    }

    /// Applies one page of `page.business`'s change feed, asked from `requested` (`nil`: the
    /// feed's start): see ``FeedPuller/apply(_:requested:limit:)``.
    package func apply(_ page: FeedPage, requested: FeedPosition?, limit: Int) async throws -> PageOutcome {
        try ensureOpen()
        return try await replayPass.puller.apply(page, requested: requested, limit: limit)
    }

    /// The cursor of `business`'s change feed: where its next page starts; `nil` when it was
    /// never pulled.
    package func feedCursor(business: String) throws -> FeedPosition? {
        try ensureOpen()
        return try store.read { txn in try store.schema.feedRow(business: business, in: txn)?.cursor ?? nil }
    }

    /// `business`'s change feed: its cursor, when a page last landed and last reached the end,
    /// when the worker pulls it next, and how far behind it is. `nil` for a business that is
    /// not pulled (neither configured nor held by the journal) and never was.
    ///
    /// What the worker learnt in memory since the journal opened (its backoff, the limits the
    /// server published) is absent after a restart until the feed is pulled again.
    /// - Throws: ``OutboxError/closed``, or a storage error reading the feed.
    public func feedState(business: String) throws -> Outbox.FeedState? {
        try ensureOpen()
        return try replayPass.pulls?.state(business: business)
            ?? PullStage.state(stored: store.queries.storedFeed(business: business), business: business, clock: configuration.clock)
    }

    /// Every pulled feed's state (``feedState(business:)``), in the order of the businesses' bytes.
    /// - Throws: ``OutboxError/closed``, or a storage error reading the feeds.
    public func feedStates() throws -> [Outbox.FeedState] {
        try ensureOpen()
        if let pulls = replayPass.pulls { return try pulls.states() }
        return try store.queries.pulledBusinesses().compactMap { business in
            try PullStage.state(stored: store.queries.storedFeed(business: business.string), business: business.string, clock: configuration.clock)
        }
    }
}

extension Outbox {
    /// Fetches `business`'s base again whole now (``FeedPuller/resnapshot(business:reason:settings:limits:maxPages:)``),
    /// outside a pass: for tests and tools; the worker does it when a pull meets a 409.
    func resnapshot(business: String, reason: String, maxPages: Int = 1_000) async throws -> FeedPuller.Resnapshot {
        try ensureOpen()
        return await replayPass.puller.resnapshot(business: business, reason: reason, settings: configuration.pull ?? PullConfiguration(),
                                                  limits: nil, maxPages: maxPages)
    }
}

extension Outbox {
    /// What one ``Outbox/pull()`` did, feed by feed.
    public struct PullReport: Sendable, Equatable {
        /// One report per feed the pass pulled (or would have, when something stopped it first), in
        /// the order of the businesses' bytes.
        public var feeds: [Outbox.FeedReport]

        public init(feeds: [Outbox.FeedReport]) {
            self.feeds = feeds
        }

        /// The report of `business`'s feed; `nil` when the pass did not pull it.
        public func feed(_ business: String) -> Outbox.FeedReport? {
            feeds.first { $0.business.utf8.elementsEqual(business.utf8) }
        }
    }
}

extension Outbox {
    /// What pulling one business's feed did, page by page.
    public struct FeedReport: Sendable, Equatable {
        public var business: String
        /// Pages applied (each in its own commit) and the changes they brought to the base.
        public var pagesApplied: Int
        public var changesApplied: Int
        /// Changes passed over: of a local-only type, or of a type ``PullConfiguration/types`` does
        /// not list.
        public var skipped: Int
        /// Whether the feed reached its end: the base holds everything the server had at the last
        /// page's cursor.
        public var reachedEnd: Bool
        /// Why it stopped before its end; `nil` when it reached it.
        public var stoppedBy: Outbox.PullStop?
        /// Snapshot pages and records staged when the base was fetched again whole, and the
        /// resnapshots swapped in.
        public var pagesStaged = 0
        public var recordsStaged = 0
        public var resnapshots = 0
        /// Each type whose summary was compared with the base after the feed reached its end, and
        /// the verdict (``SummaryChecked``); a mismatched type was fetched again.
        package var summaries: [String: SummaryChecked.Verdict] = [:]

        public init(business: String, pagesApplied: Int = 0, changesApplied: Int = 0, skipped: Int = 0, reachedEnd: Bool = false,
                    stoppedBy: Outbox.PullStop? = nil) {
            self.business = business
            self.pagesApplied = pagesApplied
            self.changesApplied = changesApplied
            self.skipped = skipped
            self.reachedEnd = reachedEnd
            self.stoppedBy = stoppedBy
        }
    }
}

extension Outbox {
    /// Why a feed's pull stopped before its end. Nothing of the page that stopped it was applied,
    /// and the next pull asks from the same cursor.
    public enum PullStop: Sendable, Equatable {
        /// No response (offline, timed out, cut off): the feed backs off and asks again; a wake
        /// when the network comes back asks at once.
        case offline
        /// 401: pulls and writes pause until ``Outbox/resumeSession()``, as for a write's 401.
        case unauthorized
        /// 429 or 5xx: the feed waits until then (the server's `Retry-After` when it said one,
        /// else the retry policy's backoff); other feeds go on.
        case backingOff(until: Date)
        /// The page failed its check (``PageCheck``) and was journaled (`pageRefused`).
        case refused(PageRefusal)
        /// Another status (404, 400, ...): the server's words, as it said them (at most 512 bytes).
        case invalidResponse(status: Int, problem: String)
        /// Nobody is signed in, or another account is: nothing is asked, and a page that spans the
        /// change is dropped, never applied.
        case signedOut
        case otherAccount
        /// The journal is full: a page never takes the room writes need.
        case storageFull
        /// A write became due while the feed was pulled: the pull gives way to it, and the next pass
        /// (at once) goes on from the cursor reached.
        case writesWaiting
        /// The pass pulled ``PullConfiguration/maxPagesPerPass`` pages: the next pass goes on.
        case pageLimit
        /// A budgeted drain (``Outbox/drain(until:)``) had less time left than a page needs
        /// (``OutboxConfiguration/attemptBudgetSeconds``): the next pass goes on from the cursor
        /// reached (a resnapshot's staged pages are kept).
        case budgetSpent
        /// The system took its time back (``Outbox/expire()``, or the drain's task cancelled): a
        /// page cut off applies nothing, and the next pass asks for it again.
        case expired
        /// The journal could not be read or written: the feed backs off and asks again.
        case journalError(String)

        /// A short code for logs: the case's name, never the server's words.
        var code: String {
            switch self {
            case .offline: "offline"
            case .unauthorized: "unauthorized"
            case .backingOff: "backing_off"
            case .refused(let refusal): "refused_\(refusal.code)"
            case .invalidResponse(let status, _): "status_\(status)"
            case .signedOut: "signed_out"
            case .otherAccount: "other_account"
            case .storageFull: "storage_full"
            case .writesWaiting: "writes_waiting"
            case .pageLimit: "page_limit"
            case .budgetSpent: "budget_spent"
            case .expired: "expired"
            case .journalError: "journal_error"
            }
        }

        /// Whether the feed counts it as a failure and backs off.
        var backsOff: Bool {
            switch self {
            case .offline, .backingOff, .refused, .invalidResponse, .storageFull, .journalError: true
            case .unauthorized, .signedOut, .otherAccount, .writesWaiting, .pageLimit, .budgetSpent, .expired: false
            }
        }

        /// A drain's budget as a feed's stop.
        init(_ stop: DrainBudget.Stop) {
            switch stop {
            case .budgetSpent: self = .budgetSpent
            case .expired: self = .expired
            }
        }
    }
}
