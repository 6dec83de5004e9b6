import Foundation
import OutboxTestServer
import OutboxWire
import Synchronization

/// The loopback test server (memory store) of the pull scenarios, its feed holding `records`
/// products created through `POST /sync/batch` (each its own claim and change row, as a phone's
/// creates make them), and the feed's pages read once from it, in pages of 500, into
/// `directory/pages.bin` beside `directory/feed.json` (``PullProbe/Feed``): the bytes the apply
/// path is fed, exactly as the server answers them.
final class PullFeedServer: Sendable {
    let server: TestServer
    let directory: URL
    let records: Int
    let pages: Int
    let pageBytes: Int
    /// The last page's cursor: the feed's end.
    let cursor: FeedPosition

    init(records: Int, directory: URL) throws {
        server = try TestServer()
        self.directory = directory
        self.records = records
        var created = 0
        while created < records {
            let count = min(100, records - created)
            let operations = (created..<created + count).map { number -> String in
                let key = "pull-create-\(number)"
                return #"{"operation_id":"\#(key)","idempotency_key":"\#(key)","business_id":"\#(Workload.businessID)","#
                    + #""operation_type":"product.create","method":"POST","endpoint":"/products","payload_version":1,"#
                    + #""payload":"\#(PullFeed.product(number).base64EncodedString())"}"#
            }
            let batch = HTTPRequest(method: "POST", path: "/sync/batch", headers: [("Content-Type", "application/json")],
                                    body: Data((#"{"operations":["# + operations.joined(separator: ",") + "]}").utf8))
            let answer = server.respond(to: batch)
            guard answer?.status == 200 else {
                throw BenchmarkFailure(description: "the batch of creates from \(created) was answered \(answer.map { "\($0.status)" } ?? "nothing")")
            }
            created += count
        }
        var bodies: [Data] = []
        var cursor: FeedPosition?
        var changes = 0
        while true {
            let query = "limit=\(PullFeed.pageSize)" + (cursor.map { "&cursor=\($0.text)" } ?? "")
            let answer = server.respond(to: HTTPRequest(method: "GET", path: FeedPage.path, query: query,
                                                        headers: [(WireHeader.businessID, Workload.businessID)]))
            guard let answer, answer.status == 200 else {
                throw BenchmarkFailure(description: "the feed from \(cursor?.text ?? "its start") was answered \(answer.map { "\($0.status)" } ?? "nothing")")
            }
            let page = try FeedPage.decoded(from: answer.body)
            bodies.append(answer.body)
            changes += page.changes.count
            cursor = page.cursor
            if !page.hasMore { break }
        }
        guard changes == records, let cursor else {
            throw BenchmarkFailure(description: "the feed of \(records) creates holds \(changes) changes")
        }
        self.cursor = cursor
        pages = bodies.count
        pageBytes = bodies.reduce(0) { $0 + $1.count }
        try PullFeed.write(bodies, to: directory.appendingPathComponent("pages.bin"))
        let feed = PullProbe.Feed(records: records, cursor: cursor.text, url: server.baseURL.absoluteString)
        try JSONEncoder().encode(feed).write(to: directory.appendingPathComponent("feed.json"))
    }

    /// The pages, as the apply path reads them.
    func pageBodies() throws -> [Data] {
        try PullFeed.pages(in: directory.appendingPathComponent("pages.bin"))
    }
}
