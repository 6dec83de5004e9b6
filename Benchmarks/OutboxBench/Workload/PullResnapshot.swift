import Foundation
import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxWire

/// Scenario 14.3's fixture: a loopback test server of its own (memory store) holding a catalogue
/// of `records` products, and a journal that pulled all of it, with `pending` edits of products
/// spread across the catalogue queued and never sent. The server then takes one more create and
/// forgets its feed through it (`POST /_control/feed/purge`), as tombstones past their retention
/// are forgotten, so the journal's cursor is behind the feed's floor: its next pull is answered
/// 409 and fetches the base again whole, 100,001 records, beside the pending edits.
///
/// The directory holds `feed.json` and `pages.bin` (``PullFeedServer``) and `journal`, which each
/// child copies before it pulls.
final class PullResnapshot: Sendable {
    /// The edits kept pending across the resnapshot.
    static let pendingEdits = 50

    let feed: PullFeedServer
    let journal: URL
    /// The live records the snapshot holds, and the edits kept pending.
    let records: Int
    let pending: Int

    init(records: Int, pending: Int, directory: URL) async throws {
        feed = try PullFeedServer(records: records, directory: directory)
        journal = directory.appendingPathComponent("journal")
        self.pending = pending
        // Built without a flush per commit, then flushed: the journal is the same.
        let outbox = try Workload.openOutbox(journal, durability: .processCrash, transport: WritesMeetNoSignal(inner: nil))
        var cursor: FeedPosition?
        for body in try feed.pageBodies() {
            let page = try FeedPage.decoded(from: body)
            guard case .applied = try await outbox.apply(page, requested: cursor, limit: PullFeed.pageSize) else {
                throw BenchmarkFailure(description: "the resnapshot's journal did not apply the page from \(page.from)")
            }
            cursor = page.cursor
        }
        for number in Self.editedProducts(records: records, pending: pending) {
            _ = try await outbox.enqueue(Workload.productUpdate(number, edit: 1),
                                         changing: [.put(Workload.productKey(number), Workload.productValue(number, edit: 1))])
        }
        try outbox.flush()
        outbox.close()
        // One more create moves the feed's end past the journal's cursor; forgetting the feed
        // through it raises the floor there.
        let key = "pull-create-\(records)"
        let create = #"{"operations":[{"operation_id":"\#(key)","idempotency_key":"\#(key)","business_id":"\#(Workload.businessID)","#
            + #""operation_type":"product.create","method":"POST","endpoint":"/products","payload_version":1,"#
            + #""payload":"\#(PullFeed.product(records).base64EncodedString())"}]}"#
        let created = feed.server.respond(to: HTTPRequest(method: "POST", path: "/sync/batch", headers: [("Content-Type", "application/json")],
                                                          body: Data(create.utf8)))
        guard created?.status == 200 else { throw BenchmarkFailure(description: "the extra create was answered \(created.map { "\($0.status)" } ?? "nothing")") }
        let end = feed.server.respond(to: HTTPRequest(method: "GET", path: FeedPage.path, query: "limit=1&cursor=\(feed.cursor.text)",
                                                      headers: [(WireHeader.businessID, Workload.businessID)]))
        guard let end, end.status == 200, let through = try? FeedPage.decoded(from: end.body).cursor, through > feed.cursor else {
            throw BenchmarkFailure(description: "the feed past its last page was answered \(end.map { "\($0.status)" } ?? "nothing")")
        }
        let purged = feed.server.respond(to: HTTPRequest(
            method: "POST", path: "/_control/feed/purge",
            headers: [("Content-Type", "application/json"), (WireHeader.businessID, Workload.businessID)],
            body: Data(#"{"through":"\#(through.text)"}"#.utf8)))
        guard purged?.status == 200 else { throw BenchmarkFailure(description: "the feed's purge was answered \(purged.map { "\($0.status)" } ?? "nothing")") }
        self.records = records + 1
    }

    /// The products the pending edits change: `pending` of them, spread evenly across the catalogue.
    static func editedProducts(records: Int, pending: Int) -> [Int] {
        (0..<pending).map { $0 * max(1, records / pending) }
    }
}

/// A phone whose writes meet no signal while its pulls get through: every request but a `GET` is
/// answered by no response (`notConnectedToInternet`), so the pending edits stay pending while the
/// base is fetched again. With no `inner` transport, nothing gets through.
struct WritesMeetNoSignal: OutboxTransport {
    let inner: (any OutboxTransport)?

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.method == "GET", let inner else { throw URLError(.notConnectedToInternet) }
        return try await inner.send(request)
    }
}
