import Foundation
import OutboxTestServer
import OutboxWire
import Synchronization

/// The loopback test server (memory store) of the pull scenarios, its feed holding `records`
/// records created through `POST /sync/batch` (each its own claim and change row, as a phone's
/// creates make them), and the feed's pages read once from it, in pages of 500, into
/// `directory/pages.bin` beside `directory/feed.json` (``PullProbe/Feed``): the bytes the apply
/// path is fed, exactly as the server answers them.
///
/// The records are products (``PullFeed/product(_:edit:)``, scenarios 14.1 to 14.3) or a
/// business's records of several types (``BusinessFeed``, scenario 14.5).
final class PullFeedServer: Sendable {
    /// What the feed holds.
    enum Catalogue: Sendable {
        case products
        case business
    }

    let server: TestServer
    let directory: URL
    let records: Int
    let pages: Int
    let pageBytes: Int
    /// The served records' bytes (each with its `"revision"`), all pages together.
    let recordBytes: Int
    /// The last page's cursor: the feed's end.
    let cursor: FeedPosition

    init(records: Int, catalogue: Catalogue = .products, directory: URL) throws {
        server = try TestServer()
        self.directory = directory
        self.records = records
        var created = 0
        while created < records {
            let count = min(100, records - created)
            let operations = (created..<created + count).map { number -> String in
                let key = "pull-create-\(number)"
                let create = catalogue == .products
                    ? BusinessFeed.Create(type: Workload.productType, operationType: "product.create", endpoint: "/products",
                                          payload: PullFeed.product(number))
                    : BusinessFeed.create(number)
                return #"{"operation_id":"\#(key)","idempotency_key":"\#(key)","business_id":"\#(Workload.businessID)","#
                    + #""operation_type":"\#(create.operationType)","method":"POST","endpoint":"\#(create.endpoint)","payload_version":1,"#
                    + #""payload":"\#(create.payload.base64EncodedString())"}"#
            }
            let batch = HTTPRequest(method: "POST", path: "/sync/batch", headers: [("Content-Type", "application/json")],
                                    body: Data((#"{"operations":["# + operations.joined(separator: ",") + "]}").utf8))
            let answer = server.respond(to: batch)
            guard answer?.status == 200 else {
                throw BenchmarkFailure(description: "the batch of creates from \(created) was answered \(answer.map { "\($0.status)" } ?? "nothing")")
            }
            created += count
        }
        // Written page by page: a million records' pages are some 400 MB.
        let file = directory.appendingPathComponent("pages.bin")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw BenchmarkFailure(description: "could not create \(file.path)")
        }
        let writer = try FileHandle(forWritingTo: file)
        defer { try? writer.close() }
        var cursor: FeedPosition?
        var changes = 0
        var pages = 0
        var pageBytes = 0
        var recordBytes = 0
        while true {
            let query = "limit=\(PullFeed.pageSize)" + (cursor.map { "&cursor=\($0.text)" } ?? "")
            let answer = server.respond(to: HTTPRequest(method: "GET", path: FeedPage.path, query: query,
                                                        headers: [(WireHeader.businessID, Workload.businessID)]))
            guard let answer, answer.status == 200 else {
                throw BenchmarkFailure(description: "the feed from \(cursor?.text ?? "its start") was answered \(answer.map { "\($0.status)" } ?? "nothing")")
            }
            let page = try FeedPage.decoded(from: answer.body)
            try writer.write(contentsOf: PullFeed.framed(answer.body))
            pages += 1
            pageBytes += answer.body.count
            recordBytes += page.changes.reduce(0) { $0 + ($1.record?.count ?? 0) }
            changes += page.changes.count
            cursor = page.cursor
            if !page.hasMore { break }
        }
        guard changes == records, let cursor else {
            throw BenchmarkFailure(description: "the feed of \(records) creates holds \(changes) changes")
        }
        self.cursor = cursor
        self.pages = pages
        self.pageBytes = pageBytes
        self.recordBytes = recordBytes
        let feed = PullProbe.Feed(records: records, cursor: cursor.text, url: server.baseURL.absoluteString,
                                  types: catalogue == .business ? BusinessFeed.counts(records: records) : nil)
        try JSONEncoder().encode(feed).write(to: directory.appendingPathComponent("feed.json"))
    }

    /// A pull probe over this feed in a fresh child process: its measurement, once it applied
    /// every page (or all but the last, which an engine's pull may find empty).
    func measure(_ kind: Probe.Kind) throws -> PullProbe.Measurement {
        let measured = try Probe.measure(kind, path: directory, as: PullProbe.Measurement.self)
        guard measured.pages >= pages - 1 else {
            throw BenchmarkFailure(description: "the \(kind.rawValue) probe applied \(measured.pages) of \(pages) pages")
        }
        return measured
    }

    /// The pages, as the apply path reads them.
    func pageBodies() throws -> [Data] {
        try PullFeed.pages(in: directory.appendingPathComponent("pages.bin"))
    }
}
