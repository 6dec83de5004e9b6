public import OutboxWire

/// Why the engine refused a page of a change feed: journaled, never applied (`Docs/records.md`,
/// "The pull"). Each says what the server got wrong, so support can tell a backend's author.
public enum PageRefusal: Sendable, Equatable, CustomStringConvertible {
    /// The page is another business's feed.
    case otherBusiness(String)
    /// The page does not start where the request asked.
    case otherStart(asked: String, answered: String)
    /// The page's cursor is before where it started.
    case movedBack(from: String, to: String)
    /// The page holds changes but its cursor did not move: the next page would repeat it forever.
    case stuck(at: String, changes: Int)
    /// An empty page says more follow: the next page would ask the same again forever.
    case moreAfterEmpty(at: String)
    /// The page says it holds `said` changes and holds `held`.
    case countMismatch(said: Int, held: Int)
    /// The page's digest is not the digest of the changes it holds.
    case digestMismatch
    /// More changes than the request's limit.
    case overLimit(changes: Int, limit: Int)
    /// A body that is not a feed page: the reader's words, naming the field at fault.
    case malformed(String)
    /// A snapshot page whose record is not after the one before it (in type then id byte order,
    /// after the request's `after_type`/`after_id`): paging on would skip or repeat records.
    case outOfOrder(type: String, id: String)
    /// A snapshot page of one type asked for that holds a record of another.
    case otherType(asked: String, answered: String)

    /// A short code for the journal and the metrics.
    public var code: String {
        switch self {
        case .otherBusiness: "other_business"
        case .otherStart: "other_start"
        case .movedBack: "moved_back"
        case .stuck: "stuck"
        case .moreAfterEmpty: "more_after_empty"
        case .countMismatch: "count_mismatch"
        case .digestMismatch: "digest_mismatch"
        case .overLimit: "over_limit"
        case .malformed: "malformed"
        case .outOfOrder: "out_of_order"
        case .otherType: "other_type"
        }
    }

    public var description: String {
        switch self {
        case .otherBusiness(let business): "the page is business '\(business)''s feed, not the one asked for"
        case .otherStart(let asked, let answered): "the page starts at \(answered), the request asked from \(asked)"
        case .movedBack(let from, let to): "the page's cursor \(to) is before its start \(from)"
        case .stuck(let at, let changes): "the page holds \(changes) changes but its cursor stayed at \(at)"
        case .moreAfterEmpty(let at): "the page is empty but says more changes follow \(at)"
        case .countMismatch(let said, let held): "the page says it holds \(said) changes and holds \(held)"
        case .digestMismatch: "the page's digest is not the digest of the changes it holds"
        case .overLimit(let changes, let limit): "the page holds \(changes) changes, over the limit of \(limit) the request sent"
        case .malformed(let problem): "the body is not a feed page: \(problem)"
        case .outOfOrder(let type, let id): "the snapshot's record \(type)/\(id) is not after the one before it in type then id byte order"
        case .otherType(let asked, let answered): "the snapshot page of type '\(asked)' holds a record of type '\(answered)'"
        }
    }
}

/// Whether a page of a change feed may be applied: a pure function of what the request asked
/// and what the page says, checked before anything of it is written.
package enum PageCheck {
    /// What the engine sent and expects back.
    package struct Request: Sendable, Equatable {
        package var business: String
        /// The cursor sent: the feed row's, which only a page or a resnapshot moves.
        package var cursor: FeedPosition
        package var limit: Int

        package init(business: String, cursor: FeedPosition, limit: Int) {
            self.business = business
            self.cursor = cursor
            self.limit = limit
        }
    }

    package enum Verdict: Sendable, Equatable {
        /// Apply it, its changes and its cursor in one commit.
        case apply
        /// The page is of another epoch of the server (restored from a backup, or reset): the
        /// cursor means nothing there, so the base is fetched again whole (a resnapshot).
        case resnapshot(epoch: UInt64)
        /// Journal the refusal, apply nothing; the next pull asks again from the same cursor.
        case refuse(PageRefusal)
    }

    /// The checks, in the order a server's mistake is best explained: whose page, which life of
    /// the server, where it starts and ends, then what it holds.
    /// - Parameter digests: the page's changes as its digest reads them, when the caller has them
    ///   (their record hashes serve the base too).
    package static func verdict(_ page: FeedPage, for request: Request, digests: [FeedDigest.Change]? = nil) -> Verdict {
        guard ExactString(page.business) == ExactString(request.business) else { return .refuse(.otherBusiness(page.business)) }
        if page.from.epoch != request.cursor.epoch || page.cursor.epoch != request.cursor.epoch {
            // Either end in another epoch: the server lives another life than the cursor's.
            return .resnapshot(epoch: page.cursor.epoch != request.cursor.epoch ? page.cursor.epoch : page.from.epoch)
        }
        guard page.from == request.cursor else { return .refuse(.otherStart(asked: request.cursor.text, answered: page.from.text)) }
        guard page.cursor >= page.from else { return .refuse(.movedBack(from: page.from.text, to: page.cursor.text)) }
        if page.changes.isEmpty {
            if page.hasMore { return .refuse(.moreAfterEmpty(at: page.cursor.text)) }
        } else if page.cursor == page.from {
            return .refuse(.stuck(at: page.cursor.text, changes: page.changes.count))
        }
        guard page.changes.count <= request.limit else { return .refuse(.overLimit(changes: page.changes.count, limit: request.limit)) }
        guard page.count == page.changes.count else { return .refuse(.countMismatch(said: page.count, held: page.changes.count)) }
        guard (digests.map(FeedDigest.page) ?? page.computedDigest) == page.digest else { return .refuse(.digestMismatch) }
        return .apply
    }
}

extension PageCheck {
    /// What the engine sent for a page of a snapshot, and what it expects back.
    package struct SnapshotRequest: Sendable, Equatable {
        package var business: String
        /// The first page's position, once a page was staged: later pages are of its epoch, at
        /// or after it.
        package var since: FeedPosition?
        /// The last record staged (type and id); the page's records come after it.
        package var after: (type: String, id: String)?
        package var limit: Int
        /// The one type asked for; `nil`: every type.
        package var type: String?

        package init(business: String, type: String? = nil, since: FeedPosition?, after: (type: String, id: String)?, limit: Int) {
            self.business = business
            self.type = type
            self.since = since
            self.after = after
            self.limit = limit
        }

        package static func == (left: Self, right: Self) -> Bool {
            left.business == right.business && left.since == right.since && left.after?.type == right.after?.type
                && left.after?.id == right.after?.id && left.limit == right.limit && left.type == right.type
        }
    }

    /// Whether a snapshot page may be staged: the same checks as a feed page's where they apply,
    /// and its records in order after the last one staged. A page of another epoch than the first
    /// page's means the server changed lives mid-snapshot: the staging starts over.
    package static func verdict(_ page: SnapshotPage, for request: SnapshotRequest, digests: [FeedDigest.Change]? = nil) -> Verdict {
        guard ExactString(page.business) == ExactString(request.business) else { return .refuse(.otherBusiness(page.business)) }
        if let since = request.since {
            if page.position.epoch != since.epoch { return .resnapshot(epoch: page.position.epoch) }
            guard page.position >= since else { return .refuse(.movedBack(from: since.text, to: page.position.text)) }
        }
        if page.records.isEmpty, page.hasMore { return .refuse(.moreAfterEmpty(at: page.position.text)) }
        guard page.records.count <= request.limit else { return .refuse(.overLimit(changes: page.records.count, limit: request.limit)) }
        guard page.count == page.records.count else { return .refuse(.countMismatch(said: page.count, held: page.records.count)) }
        var previous = request.after.map { (type: Array($0.type.utf8), id: Array($0.id.utf8)) }
        for record in page.records {
            if let type = request.type, ExactString(type) != ExactString(record.type) { return .refuse(.otherType(asked: type, answered: record.type)) }
            let key = (type: Array(record.type.utf8), id: Array(record.id.utf8))
            if let previous, !(previous.type.lexicographicallyPrecedes(key.type) || (previous.type == key.type && previous.id.lexicographicallyPrecedes(key.id))) {
                return .refuse(.outOfOrder(type: record.type, id: record.id))
            }
            previous = key
        }
        guard (digests.map(FeedDigest.page) ?? page.computedDigest) == page.digest else { return .refuse(.digestMismatch) }
        return .apply
    }
}
