public import Foundation
public import OutboxCrypto

/// `GET /sync/changes?cursor=&limit=`: a page of a business's change feed, as both halves hold it
/// (`Docs/wire-feed.md`). The server answers it; the engine checks it
/// (`PageCheck`) and applies it in one commit with its cursor.
///
/// The body is JSON:
///
/// ```json
/// {"business": "pharmacy-7", "from": "3-41-0", "cursor": "3-43-0", "has_more": false,
///  "count": 2, "digest": "<hex>", "limits": {...},
///  "changes": [{"type": "product", "id": "p1", "revision": 19, "record": {...}},
///              {"type": "product", "id": "p2", "revision": 4, "deleted": true}]}
/// ```
public struct FeedPage: Sendable, Equatable {
    /// The path of the feed endpoint on the test server and in the contract.
    public static let path = "/sync/changes"

    /// The business whose feed this is (each business has one).
    public var business: String
    /// The cursor the request sent (the feed's start when it sent none).
    public var from: FeedPosition
    /// Where the next page starts: past every change of this page, and every change visible at it
    /// is delivered once this page is applied.
    public var cursor: FeedPosition
    /// Whether more changes follow the cursor now; `false`: the page reached the feed's end.
    public var hasMore: Bool
    /// How many changes the server put in the page, and their digest (``FeedDigest/page(_:)``).
    public var count: Int
    public var digest: SHA256Digest
    /// What the server publishes of its feed: its page limits and how long it keeps tombstones.
    public var limits: FeedLimits?
    public var changes: [FeedChange]

    public init(business: String, from: FeedPosition, cursor: FeedPosition, hasMore: Bool, count: Int, digest: SHA256Digest,
                limits: FeedLimits? = nil, changes: [FeedChange]) {
        self.business = business
        self.from = from
        self.cursor = cursor
        self.hasMore = hasMore
        self.count = count
        self.digest = digest
        self.limits = limits
        self.changes = changes
    }

    /// The digest of the changes as they are, to compare with ``digest``.
    public var computedDigest: SHA256Digest { FeedDigest.page(changes.map(\.digestInput)) }
}

/// One change of a ``FeedPage``: a record at a revision, or its tombstone.
public struct FeedChange: Sendable, Equatable {
    public var type: String
    public var id: String
    /// The record's revision after the change (a tombstone's is the delete's).
    public var revision: UInt64
    /// The record exactly as the page carried it (its JSON's bytes); `nil`: deleted.
    public var record: Data?

    public init(type: String, id: String, revision: UInt64, record: Data?) {
        self.type = type
        self.id = id
        self.revision = revision
        self.record = record
    }

    public var isDelete: Bool { record == nil }

    /// What the page digest reads of it: the record's bytes hashed.
    public var digestInput: FeedDigest.Change {
        FeedDigest.Change(type: type, id: id, revision: revision, recordHash: record.map { SHA256Digest(of: $0) })
    }
}

/// What a server publishes of its feed, in every page.
public struct FeedLimits: Sendable, Equatable {
    /// The largest `limit` it serves (a larger one is clamped), and the most bytes a page holds
    /// unless it holds a single record.
    public var maxLimit: Int
    public var maxPageBytes: Int
    /// How long it keeps a tombstone: a cursor older than that is answered 409
    /// `resnapshot_required`.
    public var tombstoneRetentionSeconds: Int

    public init(maxLimit: Int, maxPageBytes: Int, tombstoneRetentionSeconds: Int) {
        self.maxLimit = maxLimit
        self.maxPageBytes = maxPageBytes
        self.tombstoneRetentionSeconds = tombstoneRetentionSeconds
    }
}
