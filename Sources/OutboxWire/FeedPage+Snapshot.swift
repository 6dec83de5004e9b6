public import Foundation
public import OutboxCrypto

/// `GET /sync/snapshot?limit=[&type=][&after_type=&after_id=]`: a page of a business's current
/// records, the answer to a 409 `resnapshot_required` (`Docs/wire-feed.md`).
///
/// Records are live ones only, in the order of their type's bytes then their id's; the next page
/// starts after the last record's type and id. `position` is the feed's fence when the page was
/// read: the first page's is where the feed goes on once every page is applied.
///
/// ```json
/// {"business":"pharmacy-7","position":"3-43-0","has_more":true,"count":500,"digest":"<hex>","limits":{...},
///  "records":[{"type":"product","id":"p1","revision":19,"record":{...}}, ...]}
/// ```
public struct SnapshotPage: Sendable, Equatable {
    public static let path = "/sync/snapshot"

    public var business: String
    public var position: FeedPosition
    /// Whether records follow the last one; `false`: the page reached the last record.
    public var hasMore: Bool
    public var count: Int
    /// ``FeedDigest/page(_:)`` over the records in order, as for a feed page.
    public var digest: SHA256Digest
    public var limits: FeedLimits?
    /// Each a live record: ``FeedChange/record`` never `nil`.
    public var records: [FeedChange]

    public init(business: String, position: FeedPosition, hasMore: Bool, count: Int, digest: SHA256Digest, limits: FeedLimits? = nil,
                records: [FeedChange]) {
        self.business = business
        self.position = position
        self.hasMore = hasMore
        self.count = count
        self.digest = digest
        self.limits = limits
        self.records = records
    }

    public var computedDigest: SHA256Digest { FeedDigest.page(records.map(\.digestInput)) }

    /// Reads a snapshot body as strictly as ``FeedPage/decoded(from:)`` a feed page; a record
    /// marked deleted is refused (a snapshot holds live records only).
    /// - Throws: ``FeedPage/Invalid`` naming the first field at fault.
    public static func decoded(from body: Data) throws(FeedPage.Invalid) -> SnapshotPage {
        var (reading, root) = try FeedReading.read(body, keepingRecordsOf: WireBodyField.records)
        reading.shape = #"expected {"business","position","has_more","count","digest","limits" (optional),"#
            + #""records":[{"type","id","revision","record"}, ...]}"#
        guard case .object = root else { throw FeedReading.invalid(.root, "the body must be an object, not \(root.kind); " + reading.shape) }
        let business = try reading.string(WireBodyField.business, of: root, at: .root)
        let position = try reading.position(WireBodyField.position, of: root, at: .root)
        let hasMore = try reading.bool(WireBodyField.hasMore, of: root, at: .root)
        let count = try Int(reading.whole(WireBodyField.count, of: root, at: .root, upTo: UInt64(Int.max)))
        let digest = try reading.digest(WireBodyField.digest, of: root, at: .root)
        let limits = try reading.optional(WireBodyField.limits, of: root, at: .root).map { node throws(FeedPage.Invalid) in
            try reading.limits(node, at: JSONPath.root.member(WireBodyField.limits))
        }
        let records = try reading.list(WireBodyField.records, of: root)
        if let index = records.firstIndex(where: \.isDelete) {
            let path = JSONPath.root.member(WireBodyField.records).index(index)
            throw FeedReading.invalid(path.member(WireBodyField.deleted), "\(path) is a tombstone: a snapshot holds live records only")
        }
        return SnapshotPage(business: business, position: position, hasMore: hasMore, count: count, digest: digest, limits: limits,
                            records: records)
    }

    public func encoded() -> Data {
        FeedReading.object([
            (WireBodyField.business, FeedReading.quoted(business)), (WireBodyField.position, FeedReading.quoted(position.text)),
            (WireBodyField.hasMore, hasMore ? "true" : "false"), (WireBodyField.count, String(count)),
            (WireBodyField.digest, FeedReading.quoted(digest.hex)),
        ] + (limits.map { [(WireBodyField.limits, $0.json)] } ?? []), list: WireBodyField.records, records)
    }
}

/// `GET /sync/summary?type=`: what the server holds of one record type, stamped with its feed
/// position, so the engine can compare its copy without any value crossing the wire.
///
/// ```json
/// {"business":"pharmacy-7","type":"product","position":"3-43-0","count":1200,"digest":"<hex>"}
/// ```
public struct FeedSummary: Sendable, Equatable {
    public static let path = "/sync/summary"

    public var business: String
    public var type: String
    /// The feed's fence when the summary was taken: it holds every change visible there.
    public var position: FeedPosition
    /// How many live records of the type, and ``FeedDigest/summary(_:)`` over their ids and revisions.
    public var count: Int
    public var digest: SHA256Digest

    public init(business: String, type: String, position: FeedPosition, count: Int, digest: SHA256Digest) {
        self.business = business
        self.type = type
        self.position = position
        self.count = count
        self.digest = digest
    }

    /// - Throws: ``FeedPage/Invalid`` naming the first field at fault.
    public static func decoded(from body: Data) throws(FeedPage.Invalid) -> FeedSummary {
        var (reading, root) = try FeedReading.read(body, keepingRecordsOf: "")
        reading.shape = #"expected {"business","type","position","count","digest"}"#
        guard case .object = root else { throw FeedReading.invalid(.root, "the body must be an object, not \(root.kind); " + reading.shape) }
        return FeedSummary(
            business: try reading.string(WireBodyField.business, of: root, at: .root),
            type: try reading.string(WireBodyField.type, of: root, at: .root),
            position: try reading.position(WireBodyField.position, of: root, at: .root),
            count: try Int(reading.whole(WireBodyField.count, of: root, at: .root, upTo: UInt64(Int.max))),
            digest: try reading.digest(WireBodyField.digest, of: root, at: .root))
    }

    public func encoded() -> Data {
        Data(("{" + [
            (WireBodyField.business, FeedReading.quoted(business)), (WireBodyField.type, FeedReading.quoted(type)),
            (WireBodyField.position, FeedReading.quoted(position.text)), (WireBodyField.count, String(count)),
            (WireBodyField.digest, FeedReading.quoted(digest.hex)),
        ].map { FeedReading.quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}").utf8)
    }
}
