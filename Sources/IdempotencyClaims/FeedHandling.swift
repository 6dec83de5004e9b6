import Foundation
public import OutboxWire

/// Answers `GET /sync/changes?cursor=&limit=[&until=]` over any backend's ``ChangeLog``: the
/// protocol's rules in one place (`Docs/wire-feed.md`), so every Swift backend
/// answers the same pages and the same refusals.
///
/// ```swift
/// let response = FeedHandling.respond(business: business, query: request.query, log: store, limits: limits)
/// send(response)   // 200 with a page, 409 resnapshot_required, or 400 feed_request_invalid
/// ```
///
/// - A page holds the rows after its cursor in position order, at most `limit` (clamped to
///   ``FeedLimits/maxLimit``; `max_limit` when absent) and under ``FeedLimits/maxPageBytes``
///   unless it holds one change. Its `cursor` is its last change's position when more follow,
///   else the fence (or `until`, when that comes first), so a client that sends it back never
///   skips a change; `has_more` is whether the page was cut (more follow its cursor, up to
///   `until` when given): a page that reached the fence or `until` says none.
/// - A cursor that is not a position is 409 `unknown`; of another epoch, `foreign_epoch`; past
///   the fence, `ahead`; below the floor, `expired`. No cursor means the start of the epoch,
///   which is `expired` too once the floor has moved.
public enum FeedHandling {
    /// What a server publishes unless configured otherwise: 1,000 changes or 4 MiB a page, and
    /// tombstones kept 30 days (as long as claims, so a phone offline that long still pulls).
    public static let defaultLimits = FeedLimits(maxLimit: 1_000, maxPageBytes: 4 << 20, tombstoneRetentionSeconds: 30 * 86_400)

    /// Why a request is not answered with a page.
    public enum Refusal: Error, Equatable, Sendable {
        /// 409 `resnapshot_required`.
        case resnapshot(FeedResnapshot)
        /// 400 `feed_request_invalid`: a parameter that is not one, named in the message.
        case invalid(String)

        public var response: ClaimResponse {
            switch self {
            case .resnapshot(let refusal):
                ClaimResponse(status: FeedResnapshot.status, headers: [FeedHandling.jsonType], body: refusal.body)
            case .invalid(let message):
                .problem(status: 400, code: WireErrorCode.feedRequestInvalid, message: message)
            }
        }
    }

    /// The whole answer to a `GET /sync/changes` whose query is `query` (as sent, without `?`).
    public static func respond(business: String, query: String, log: some ChangeLog, limits: FeedLimits) -> ClaimResponse {
        answer { () throws -> Data in try page(business: business, query: query, log: log, limits: limits).encoded() }
    }

    /// The page the query asks for.
    /// - Throws: ``Refusal``, or what the log throws.
    public static func page(business: String, query: String, log: some ChangeLog, limits: FeedLimits) throws -> FeedPage {
        let parameters = try Self.parameters(query)
        let limit = try Self.limit(parameters, limits)
        var until: FeedPosition?
        if let text = parameters["until"] {
            do {
                until = try FeedPosition(text: text)
            } catch {
                throw Refusal.invalid("until: \(error.description)")
            }
        }
        var cursor: FeedPosition?
        if let text = parameters["cursor"], !text.isEmpty {
            do {
                cursor = try FeedPosition(text: text)
            } catch {
                let epoch = try log.read(business: business, after: nil, until: nil, limit: 0).epoch
                throw Refusal.resnapshot(FeedResnapshot(
                    reason: .unknown, message: "the cursor names no place in this feed: \(error.description); fetch a snapshot", epoch: epoch))
            }
        }
        // One row more than the page takes says whether more follow.
        let read = try log.read(business: business, after: cursor, until: until, limit: limit + 1)
        let from = cursor ?? .start(of: read.epoch)
        try check(from, read)
        if let until {
            guard until.epoch == read.epoch else {
                throw Refusal.invalid("until \(until) is of epoch \(until.epoch); this feed is at epoch \(read.epoch)")
            }
            guard until >= from else { throw Refusal.invalid("until \(until) comes before the cursor \(from)") }
        }
        let end = until.map { min($0, read.fence) } ?? read.fence
        let changes = Self.taken(read.rows.map(\.change), limit: limit, limits: limits)
        let cutAt = changes.count < read.rows.count ? read.rows[changes.count - 1].position : nil
        // Every row up to `end` is in the page unless it was cut; `end` is at or past the cursor.
        let next = cutAt ?? end
        // More follow only a page that was cut: one that reached the fence (or `until`) says none,
        // so an empty page never says more follow and the engine never asks the same again.
        return FeedPage(
            business: business, from: from, cursor: next, hasMore: cutAt != nil, count: changes.count,
            digest: FeedDigest.page(changes.map(\.digestInput)), limits: limits, changes: changes)
    }

    /// The changes a page takes of `changes`: at most `limit`, and no more than fit in
    /// `max_page_bytes` unless the first alone does not.
    static func taken(_ changes: [FeedChange], limit: Int, limits: FeedLimits) -> [FeedChange] {
        var bytes = envelopeBytes
        var count = 0
        for change in changes {
            let size = change.encodedCount + 1
            if count == limit || (count > 0 && bytes + size > limits.maxPageBytes) { break }
            count += 1
            bytes += size
        }
        return Array(changes.prefix(count))
    }

    /// `limit`, clamped to `max_limit`; `max_limit` when absent.
    static func limit(_ parameters: [String: String], _ limits: FeedLimits) throws(Refusal) -> Int {
        guard let text = parameters["limit"] else { return limits.maxLimit }
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let number = Int(text), number > 0 else {
            throw .invalid("limit is \(JSONNode.quoted(String(text.prefix(40)))): it must be a whole number, at least 1")
        }
        return min(number, limits.maxLimit)
    }

    // MARK: Snapshot and summary

    /// The whole answer to a `GET /sync/snapshot` whose query is `query`: 200 with a
    /// ``SnapshotPage``, or 400 `feed_request_invalid`.
    public static func respondSnapshot(business: String, query: String, log: some ChangeLog, limits: FeedLimits) -> ClaimResponse {
        answer { () throws -> Data in try snapshot(business: business, query: query, log: log, limits: limits).encoded() }
    }

    /// The snapshot page the query asks for: `limit` as for the feed, `type` (optional) one type
    /// only, `after_type` and `after_id` (both or neither) where the previous page ended.
    /// - Throws: ``Refusal``, or what the log throws.
    public static func snapshot(business: String, query: String, log: some ChangeLog, limits: FeedLimits) throws -> SnapshotPage {
        let parameters = try Self.parameters(query)
        let limit = try Self.limit(parameters, limits)
        let type = try nonEmpty("type", parameters)
        let after: SnapshotKey?
        switch (try nonEmpty("after_type", parameters), parameters["after_id"]) {
        case (nil, nil): after = nil
        case (let afterType?, let afterID?): after = SnapshotKey(type: afterType, id: afterID)
        default: throw Refusal.invalid("after_type and after_id go together: send both (the last record's type and id) or neither")
        }
        let read = try log.snapshot(business: business, type: type, after: after, limit: limit + 1)
        let records = Self.taken(read.records, limit: limit, limits: limits)
        return SnapshotPage(
            business: business, position: read.position, hasMore: records.count < read.records.count, count: records.count,
            digest: FeedDigest.page(records.map(\.digestInput)), limits: limits, records: records)
    }

    /// The whole answer to a `GET /sync/summary?type=`: 200 with a ``FeedSummary``, or 400.
    public static func respondSummary(business: String, query: String, log: some ChangeLog) -> ClaimResponse {
        answer { () throws -> Data in
            guard let type = try nonEmpty("type", parameters(query)) else {
                throw Refusal.invalid("type is missing: a summary is of one record type, ?type=product")
            }
            let (position, records) = try log.summary(business: business, type: type)
            return FeedSummary(business: business, type: type, position: position, count: records.count,
                               digest: FeedDigest.summary(records)).encoded()
        }
    }

    /// 200 with `body()`'s JSON, or its refusal, or 500.
    private static func answer(_ body: () throws -> Data) -> ClaimResponse {
        do {
            return ClaimResponse(status: 200, headers: [jsonType], body: try body())
        } catch let refusal as Refusal {
            return refusal.response
        } catch {
            return .problem(status: 500, code: "internal_error", message: "the server could not read its change feed: \(error)")
        }
    }

    /// The parameter `name`; refused when sent empty.
    private static func nonEmpty(_ name: String, _ parameters: [String: String]) throws(Refusal) -> String? {
        guard let value = parameters[name] else { return nil }
        guard !value.isEmpty else { throw .invalid("\(name) is empty: send a value or leave it out") }
        return value
    }

    /// The cursor against what the log saw: of its epoch, not past its fence, not below its floor.
    /// - Throws: ``Refusal/resnapshot(_:)``.
    public static func check(_ cursor: FeedPosition, _ read: ChangeLogRead) throws(Refusal) {
        if cursor.epoch != read.epoch {
            throw .resnapshot(FeedResnapshot(
                reason: .foreignEpoch,
                message: "the cursor \(cursor) is of epoch \(cursor.epoch); this server is at epoch \(read.epoch) since a restore or reset: fetch a snapshot",
                epoch: read.epoch))
        }
        if cursor > read.fence {
            throw .resnapshot(FeedResnapshot(
                reason: .ahead,
                message: "the cursor \(cursor) is past the end of this feed (\(read.fence)): the server lost changes it had sent, fetch a snapshot",
                epoch: read.epoch))
        }
        if cursor < read.floor {
            throw .resnapshot(FeedResnapshot(
                reason: .expired,
                message: "the cursor \(cursor) is older than the oldest this feed still serves (\(read.floor)): the deletes before it are forgotten, fetch a snapshot",
                epoch: read.epoch))
        }
    }

    /// The query's parameters, percent-decoded; one sent twice is refused rather than guessed.
    static func parameters(_ query: String) throws(Refusal) -> [String: String] {
        var found: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts[0].removingPercentEncoding,
                let value = (parts.count > 1 ? String(parts[1]) : "").removingPercentEncoding
            else { throw .invalid("the query parameter \(JSONNode.quoted(String(pair.prefix(40)))) is not percent-encoded UTF-8") }
            guard found.updateValue(value, forKey: name) == nil else {
                throw .invalid("the query parameter \(name) is sent more than once; send it once")
            }
        }
        return found
    }

    /// What a page holds besides its changes, at most: its business, positions, digest and limits.
    private static let envelopeBytes = 1_024

    private static let jsonType = ClaimResponse.Header(name: WireHeader.contentType, value: "application/json")
}
