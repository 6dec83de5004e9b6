import Foundation

/// The records of one business and type, in the order of their ids' bytes, a page at a time.
///
/// ```swift
/// var query = RecordQuery(business: "pharmacy-7", type: "product", limit: 100)
/// repeat {
///     let page = try outbox.records(query)
///     show(page.records)
///     query.after = page.nextAfter
/// } while query.after != nil
/// ```
public struct RecordQuery: Sendable, Equatable {
    public var business: String
    public var type: String
    /// Only ids after this one (by bytes): the previous page's ``RecordQuery.Page/nextAfter``.
    public var after: String?
    /// The most records a page holds (1...10,000).
    public var limit: Int

    public static let maxLimit = 10_000

    public init(business: String, type: String, after: String? = nil, limit: Int = 100) {
        self.business = business
        self.type = type
        self.after = after
        self.limit = limit
    }
}

extension RecordQuery {
    /// One page of a ``RecordQuery``: the member's view of each record, pending creates included,
    /// records the member deleted left out.
    public struct Page: Sendable, Equatable {
        public var records: [LocalRecord]
        /// The id to ask `after:` for the next page; `nil` when this page is the last.
        public var nextAfter: String?
        /// How fresh the page's server bases are (each record says the same): `nil` for a local-only
        /// or unpulled type.
        public var freshness: LocalRecord.Freshness?

        public init(records: [LocalRecord], nextAfter: String?, freshness: LocalRecord.Freshness? = nil) {
            self.records = records
            self.nextAfter = nextAfter
            self.freshness = freshness
        }
    }
}
