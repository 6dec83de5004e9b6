import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Testing

/// What each answer to a feed request does to a pull, row by row: nothing of a page that stops
/// it is applied, and the next pull asks from the same cursor.
@Suite("A pull's answers", .timeLimit(.minutes(5)))
struct PullResponseTests {
    static let business = "pharmacy-7"
    static let pull = PullConfiguration(businesses: [business])

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var response: TransportResponse?
        var stop: Outbox.PullStop
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "no response", response: nil, stop: .offline),
        Row(name: "401", response: .json(401, #"{"code":"unauthorized","message":"token expired"}"#), stop: .unauthorized),
        // A 409 fetches the base again whole: the snapshot asked next meets no response here.
        Row(name: "409 resnapshot_required", response: .json(409, #"{"code":"resnapshot_required","reason":"expired","message":"cursor older than the tombstones kept","epoch":3}"#),
            stop: .offline),
        Row(name: "429 with Retry-After", response: .json(429, "{}", headers: ["Retry-After": "120"]),
            stop: .backingOff(until: Date(timeIntervalSince1970: 1_900_000_120))),
        // Without Retry-After, the retry policy's first backoff (2 s, no jitter in the standard policy).
        Row(name: "503 without Retry-After", response: .json(503, "{}"), stop: .backingOff(until: Date(timeIntervalSince1970: 1_900_000_002))),
        Row(name: "404", response: .json(404, #"{"code":"not_found"}"#), stop: .invalidResponse(status: 404, problem: #"{"code":"not_found"}"#)),
        Row(name: "a page of another epoch", response: .json(200, Self.pageBody(from: "1-0-0", to: "2-1-0")), stop: .offline),
    ]

    /// A correct page of one change, from `from` to `to`.
    static func pageBody(from: String, to: String) -> String {
        let record = Data(#"{"id":"p1","price":14,"revision":1}"#.utf8)
        let change = FeedChange(type: "product", id: "p1", revision: 1, record: record)
        let page = FeedPage(business: business, from: try! FeedPosition(text: from), cursor: try! FeedPosition(text: to), hasMore: false,
                            count: 1, digest: FeedDigest.page([change.digestInput]), changes: [change])
        return String(decoding: page.encoded(), as: UTF8.self)
    }

    @Test(arguments: rows)
    func eachAnswerStopsThePullAsTheTableSaysAndAppliesNothing(_ row: Row) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(row.response.map { .respond($0) } ?? .fail(.offline))
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Date(timeIntervalSince1970: 1_900_000_000))
        let outbox = try journal.open { $0.pull = Self.pull }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == row.stop)
        #expect(report.pagesApplied == 0 && !report.reachedEnd)
        #expect(try outbox.feedCursor(business: Self.business) == nil)
        #expect(try outbox.record(RecordKey(business: Self.business, type: "product", id: "p1")) == nil)
    }

    @Test func aCorrectPageAppliesAndTheNextRequestCarriesItsCursor() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, Self.pageBody(from: "1-0-0", to: "1-1-0"))))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.pull = Self.pull }
        defer { outbox.close() }
        #expect(try await outbox.pull().feed(Self.business)?.reachedEnd == true)
        _ = try await outbox.pull()   // offline now
        #expect(transport.requests.map(\.endpoint) == ["/sync/changes?limit=500", "/sync/changes?limit=500&cursor=1-1-0"])
    }

    @Test func aPageThatSpansASignOutIsDroppedAndNothingIsAskedForAnotherAccount() async throws {
        let session = SwitchableSession(account: "member-42")
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.handle { _ in
            session.signOut()
            return .json(200, Self.pageBody(from: "1-0-0", to: "1-1-0"))
        })
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            $0.session = session
            $0.pull = Self.pull
        }
        defer { outbox.close() }
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .signedOut)
        #expect(try outbox.feedCursor(business: Self.business) == nil)
        session.signIn("member-7")
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .otherAccount)
        #expect(transport.requests.count == 1, "nothing asked under another account")
    }
}
