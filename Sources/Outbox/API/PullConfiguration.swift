public import Foundation
public import OutboxWire

/// How the engine pulls the server's change feeds (`Docs/records.md`, "The pull"): one feed per
/// business, page by page, in each pass after the writes are sent.
///
/// ```swift
/// configuration.pull = PullConfiguration(
///     types: ["product": PullConfiguration.PulledType(freshnessSeconds: 900), "employee": PullConfiguration.PulledType()],
///     businesses: ["pharmacy-7"]
/// )
/// try await outbox.pull()
/// ```
///
/// `nil` on ``OutboxConfiguration/pull`` (the default): the engine never pulls.
public struct PullConfiguration: Sendable {
    /// The change feed's path (`GET`, `Docs/wire-feed.md`), resolved by the
    /// transport against its base URL. No query: the engine adds `limit` and `cursor`.
    public var changesEndpoint: String
    /// The snapshot's path (a resnapshot's pages) and the summary's (the invariant check).
    public var snapshotEndpoint: String
    public var summaryEndpoint: String
    /// The most changes asked for in one page; a server publishing a smaller `max_limit` in its
    /// pages is asked for that many instead.
    public var pageSize: Int
    /// The record types the app knows, each with how old its base may be. A change of a type not
    /// listed is passed over (counted in the page's `skipped`); empty: every synced type is
    /// pulled, each with ``PullConfiguration.PulledType/init(freshnessSeconds:)``'s default.
    public var types: [String: PullConfiguration.PulledType] {
        get { exactTypes.byString { first, _ in first } }
        set { exactTypes = newValue.byExactBytes }
    }
    /// ``types`` by their exact bytes: what the engine looks a type up in.
    package var exactTypes: [ExactString: PullConfiguration.PulledType]
    /// Businesses pulled besides those the journal holds (a feed, a base record or a record
    /// write of): the ones the member is about to see before writing anything.
    public var businesses: [String]
    /// The most pages one pass pulls over every feed: past it, the feed stops with
    /// ``Outbox.PullStop/pageLimit`` and the next pass goes on.
    public var maxPagesPerPass: Int
    /// How often each listed type's summary is compared with the base (the invariant check,
    /// ``SummaryChecked``), after a pull that reached the feed's end: at most once per interval
    /// per type while the app runs, and once after each launch. `nil`: never.
    public var summaryIntervalSeconds: TimeInterval?

    /// The largest page size that may be configured.
    public static let maximumPageSize = 10_000

    public init(changesEndpoint: String = FeedPage.path, snapshotEndpoint: String = "/sync/snapshot", summaryEndpoint: String = "/sync/summary",
                pageSize: Int = 500, types: [String: PullConfiguration.PulledType] = [:], businesses: [String] = [], maxPagesPerPass: Int = 1_000,
                summaryIntervalSeconds: TimeInterval? = 86_400) {
        self.changesEndpoint = changesEndpoint
        self.snapshotEndpoint = snapshotEndpoint
        self.summaryEndpoint = summaryEndpoint
        self.pageSize = pageSize
        self.exactTypes = types.byExactBytes
        self.businesses = businesses
        self.maxPagesPerPass = maxPagesPerPass
        self.summaryIntervalSeconds = summaryIntervalSeconds
    }

    /// How old a feed's base may be before the worker pulls it again: the shortest freshness of
    /// the types it carries (a feed carries every type of its business).
    var freshnessSeconds: TimeInterval {
        exactTypes.values.map(\.freshnessSeconds).min() ?? PullConfiguration.PulledType.defaultFreshnessSeconds
    }

    /// Whether a pulled change of `type` is applied: every type when none is listed.
    func pulls(type: String) -> Bool {
        exactTypes.isEmpty || exactTypes[ExactString(type)] != nil
    }

    /// The page size to ask for: the configured one, no more than the server's `max_limit`.
    func limit(servedBy limits: FeedLimits?) -> Int {
        guard let served = limits?.maxLimit, served >= 1 else { return pageSize }
        return min(pageSize, served)
    }
}

extension PullConfiguration {
    /// What the app declares of one pulled record type.
    public struct PulledType: Sendable, Equatable {
        /// How old the base of the type may be, in seconds, before the worker pulls again (measured by
        /// uptime within a boot, by the wall clock across one).
        public var freshnessSeconds: TimeInterval

        /// An hour.
        public static let defaultFreshnessSeconds: TimeInterval = 3_600

        public init(freshnessSeconds: TimeInterval = PullConfiguration.PulledType.defaultFreshnessSeconds) {
            self.freshnessSeconds = freshnessSeconds
        }
    }
}
