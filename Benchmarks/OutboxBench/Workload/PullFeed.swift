import Foundation
import Outbox
import OutboxAudit
import IdempotencyClaims
import OutboxWire

/// The change feed the pull scenarios read: a pharmacy's catalogue of products as the server
/// holds it (each 287 to 396 bytes of JSON as served), served by the loopback test server or
/// built here as pages of the same shape.
enum PullFeed {
    /// The changes a page asks for, as the engine's pull asks by default.
    static let pageSize = 500

    /// The `number`th product of the catalogue, as the member's counter created it (`edit` 0) or
    /// changed it since: 274 to 383 bytes of JSON (287 to 396 as served, with its `"revision"`),
    /// the description's length varying by product.
    static func product(_ number: Int, edit: Int = 0) -> Data {
        let words = ["Sterile", "single use", "latex free", "for external use only", "store in a dry place",
                     "keep out of reach of children", "hypoallergenic"]
        let description = (0..<(number % 6)).map { words[($0 + number) % words.count] }.joined(separator: ", ")
        let json = """
            {"id":"\(Workload.stableID(number))","name":"Antiseptic solution 500 ml #\(number)","sku":"SKU-\(100_000 + number)",\
            "barcode":"\(5_012_345_000_000 + number)","category":"First aid","unit":"bottle",\
            "price":{"amount":"\(4 + (number + edit) % 40).\(10 + edit % 90)","currency":"EUR"},"stock":\((number * 7 + edit) % 300),\
            "supplier":"Medipharm Ltd","description":"\(description)","edit":\(edit)}
            """
        return Data(json.utf8)
    }

    /// A page's body as the server sends it: `changes` after the position `from`, numbered one by
    /// one after it as a feed with one writer at a time numbers them (the test server's memory and
    /// LMDB stores).
    static func body(from: FeedPosition, _ changes: [FeedChange], hasMore: Bool) -> Data {
        let cursor = FeedPosition(epoch: from.epoch, major: from.major + UInt64(changes.count))
        return FeedPage(business: Workload.businessID, from: from, cursor: cursor, hasMore: hasMore, count: changes.count,
                        digest: FeedDigest.page(changes.map(\.digestInput)), limits: FeedHandling.defaultLimits, changes: changes).encoded()
    }

    /// The record as the server serves it: its stored body with `"revision"` added last.
    static func served(_ body: Data, revision: UInt64) -> Data {
        var record = body.dropLast()
        record += Data(#","revision":\#(revision)}"#.utf8)
        return Data(record)
    }

    /// The `index`th page of changes (from 0) over a catalogue of `records` products already
    /// pulled, the feed then at `from`: 300 edits of existing products, 50 deletes of existing
    /// ones and 150 new products, mixed as a feed in commit order mixes them. The products touched
    /// are spread across the catalogue, and each change is at a revision newer than any the
    /// product had (the `n`th time a product is touched in a run, revision `n + 1`).
    static func changePage(index: Int, records: Int, from: FeedPosition) -> Data {
        let existing = 350
        let created = pageSize - existing
        var changes: [FeedChange] = []
        changes.reserveCapacity(pageSize)
        var nextExisting = 0
        var nextCreated = 0
        for slot in 0..<pageSize {
            if [3, 7, 9].contains(slot % 10), nextCreated < created {
                let number = records + index * created + nextCreated
                nextCreated += 1
                changes.append(FeedChange(type: Workload.productType, id: Workload.stableID(number), revision: 1,
                                          record: served(product(number), revision: 1)))
            } else {
                let touch = index * existing + nextExisting
                nextExisting += 1
                // 7,919 is prime, so `touch * 7_919 % records` visits every product once before any twice.
                let number = touch * 7_919 % records
                let revision = UInt64(2 + touch / records)
                let record = nextExisting % 7 == 0 ? nil : served(product(number, edit: index + 1), revision: revision)
                changes.append(FeedChange(type: Workload.productType, id: Workload.stableID(number), revision: revision, record: record))
            }
        }
        return body(from: from, changes, hasMore: false)
    }

    /// A page as a file of pages holds it, laid end to end with the others: a u32 big-endian
    /// length, then its bytes.
    static func framed(_ page: Data) -> Data {
        Data(UInt32(page.count).bigEndianByteArray) + page
    }

    /// The pages of a file of ``framed(_:)`` pages, mapped rather than read: the file's pages stay
    /// the page cache's, never the reader's heap, until a page is taken.
    static func pages(in url: URL) throws -> [Data] {
        let file = try Data(contentsOf: url, options: .alwaysMapped)
        var pages: [Data] = []
        var offset = file.startIndex
        while offset < file.endIndex {
            guard file.endIndex - offset >= 4 else { throw BenchmarkFailure(description: "\(url.lastPathComponent) is cut in a page's length") }
            let length = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard file.endIndex - offset >= length else { throw BenchmarkFailure(description: "\(url.lastPathComponent) is cut in a page") }
            pages.append(file[offset..<offset + length])
            offset += length
        }
        return pages
    }
}
