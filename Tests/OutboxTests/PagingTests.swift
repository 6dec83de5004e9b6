import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// Every listing pages one way: `after:` the previous page's `nextAfter`, `limit:` rows a page.
/// Read page by page, each visits every row once, in its order, and its last page says so.
@Suite("Paging of every listing", .timeLimit(.minutes(10)))
struct PagingTests {
    static let business = "pharmacy-7"

    /// Eleven writes a minute apart: every third has no record change and is discarded, then
    /// compacted; each other one creates record `p<n>`.
    struct Journal {
        let outbox: Outbox
        let ids: [OperationID]
        let discarded: [OperationID]
        let recordIDs: [String]
    }

    static func write(_ journal: TestJournal) async throws -> Journal {
        let outbox = try journal.open()
        var ids: [OperationID] = [], discarded: [OperationID] = [], recordIDs: [String] = []
        for number in 0..<11 {
            if number % 3 == 0 {
                let id = try await outbox.enqueue(productRequest(number))
                try await outbox.discard(id)
                ids.append(id)
                discarded.append(id)
            } else {
                let key = RecordKey(business: business, type: "product", id: "p\(number)")
                ids.append(try await outbox.enqueue(productRequest(number), changing: [.put(key, Data(#"{"n":\#(number)}"#.utf8))]))
                recordIDs.append(key.id)
            }
            journal.clock.advance(by: 60)
        }
        // The discarded writes' events leave the journal: gaps the cursors page across.
        journal.clock.advance(by: 86_400)
        let compacted = try await outbox.compact(before: journal.clock.now())
        try #require(compacted.operations == discarded.count, "every discarded write compacted")
        return Journal(outbox: outbox, ids: ids, discarded: discarded, recordIDs: recordIDs)
    }

    /// Reads every page, `after:` each one's `nextAfter`, until one says it is the last.
    /// - Returns: the rows in the order read, and how many pages it took.
    static func readAll<Row, Cursor>(_ page: (Cursor?) throws -> (rows: [Row], nextAfter: Cursor?)) throws -> (rows: [Row], pages: Int) {
        var rows: [Row] = []
        var after: Cursor?
        var pages = 0
        repeat {
            let read = try page(after)
            rows += read.rows
            after = read.nextAfter
            pages += 1
        } while after != nil && pages <= 1000
        return (rows, pages)
    }

    /// One listing: what it holds, in its order, and how to read it `limit` rows a page.
    struct Listing: Sendable {
        let name: String
        let expected: @Sendable (Journal) throws -> [String]
        /// Whether a next page always holds a row: an event page's filters are applied as it is
        /// read, so one may come back empty.
        let exactPages: Bool
        let readAll: @Sendable (Journal, Int) throws -> (rows: [String], pages: Int)
    }

    static let listings: [Listing] = [
        Listing(name: "ledger", expected: { $0.ids.map(\.description) }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.ledger(LedgerQuery(after: after, limit: limit))
                return (page.entries.map(\.operationID.description), page.nextAfter)
            }
        },
        Listing(name: "ledger, queued only", expected: { journal in
            journal.ids.filter { !journal.discarded.contains($0) }.map(\.description)
        }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.ledger(LedgerQuery(status: .queued, after: after, limit: limit))
                return (page.entries.map(\.operationID.description), page.nextAfter)
            }
        },
        Listing(name: "operations, newest first", expected: { $0.ids.reversed().map(\.description) }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.operations(matching: OperationQuery(after: after, limit: limit))
                return (page.operations.map(\.id.description), page.nextAfter)
            }
        },
        Listing(name: "operations, discarded only", expected: { $0.discarded.reversed().map(\.description) }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.operations(matching: OperationQuery(statuses: [.discarded], after: after, limit: limit))
                return (page.operations.map(\.id.description), page.nextAfter)
            }
        },
        Listing(name: "operation states", expected: { $0.ids.reversed().map(\.description) }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.operationStates(matching: OperationQuery(after: after, limit: limit))
                return (page.states.map(\.id.description), page.nextAfter)
            }
        },
        Listing(name: "events, oldest first", expected: { try $0.outbox.events(from: 1, limit: .max).map(\.seq.description) },
                exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.events(matching: EventQuery(after: after, limit: limit))
                return (page.events.map(\.seq.description), page.nextAfter)
            }
        },
        Listing(name: "events, newest first", expected: { try $0.outbox.events(from: 1, limit: .max).reversed().map(\.seq.description) },
                exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.events(matching: EventQuery(after: after, order: .newestFirst, limit: limit))
                return (page.events.map(\.seq.description), page.nextAfter)
            }
        },
        Listing(name: "events of a seq range, newest first", expected: { journal in
            try journal.outbox.events(from: 1, limit: .max).map(\.seq).filter { 3...12 ~= $0.rawValue }.reversed().map(\.description)
        }, exactPages: true) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.events(matching: EventQuery(seqFrom: 3, seqThrough: 12, after: after, order: .newestFirst, limit: limit))
                return (page.events.map(\.seq.description), page.nextAfter)
            }
        },
        Listing(name: "events of one kind", expected: { journal in
            try journal.outbox.events(from: 1, limit: .max).filter { $0.kind == .enqueued }.map(\.seq.description)
        }, exactPages: false) { journal, limit in
            try readAll { (after: JournalSequence?) in
                let page = try journal.outbox.events(matching: EventQuery(after: after, kinds: [.enqueued], limit: limit))
                return (page.events.map(\.seq.description), page.nextAfter)
            }
        },
        Listing(name: "records", expected: { $0.recordIDs.sorted() }, exactPages: true) { journal, limit in
            try readAll { (after: String?) in
                let page = try journal.outbox.records(RecordQuery(business: business, type: "product", after: after, limit: limit))
                return (page.records.map(\.key.id), page.nextAfter)
            }
        },
    ]

    @Test(arguments: listings)
    func aPagedReadVisitsEveryRowOnceInOrderAndItsLastPageSaysSo(_ listing: Listing) async throws {
        let journal = TestJournal()
        let written = try await Self.write(journal)
        defer { written.outbox.close() }
        let expected = try listing.expected(written)
        #expect(expected.count > 3, "\(listing.name): enough rows for several pages")
        for limit in [1, 2, 5, expected.count, RecordQuery.maxLimit] {
            let read = try listing.readAll(written, limit)
            #expect(read.rows == expected, "\(listing.name), \(limit) a page")
            let pages = max(1, (expected.count + limit - 1) / limit)
            if listing.exactPages {
                #expect(read.pages == pages, "\(listing.name), \(limit) a page")
            } else {
                #expect((pages...pages + 1).contains(read.pages), "\(listing.name), \(limit) a page: \(read.pages) pages")
            }
        }
    }

    @Test func aPageOfOperationsHoldsEachAsTheOperationReadAnswersIt() async throws {
        let journal = TestJournal()
        let written = try await Self.write(journal)
        let outbox = written.outbox
        defer { outbox.close() }
        let page = try outbox.operations(matching: OperationQuery(limit: 4))
        #expect(page.operations == (try written.ids.reversed().prefix(4).map { try #require(try outbox.operation($0)) }))
        #expect(page.nextAfter == page.operations.last?.firstSeq)
        #expect(try outbox.operationStates(matching: OperationQuery(limit: 4)).states.map(\.id) == page.operations.map(\.id))
    }

    @Test(arguments: [0, -1])
    func aLimitBelowOneIsRefusedNamingTheField(_ limit: Int) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let reads: [(String, () throws -> Void)] = [
            ("ledger", { _ = try outbox.ledger(LedgerQuery(limit: limit)) }),
            ("operations", { _ = try outbox.operations(matching: OperationQuery(limit: limit)) }),
            ("operation states", { _ = try outbox.operationStates(matching: OperationQuery(limit: limit)) }),
            ("events", { _ = try outbox.events(matching: EventQuery(limit: limit)) }),
            ("records", { _ = try outbox.records(RecordQuery(business: Self.business, type: "product", limit: limit)) }),
        ]
        for (name, read) in reads {
            do {
                try read()
                Issue.record("\(name): a limit of \(limit) was read")
            } catch OutboxError.invalidRequest(let field, let problem) {
                #expect(field == "limit" && problem.hasSuffix("not \(limit)"), "\(name): \(field) \(problem)")
            }
        }
    }
}

extension PagingTests.Listing: CustomTestStringConvertible {
    var testDescription: String { name }
}
