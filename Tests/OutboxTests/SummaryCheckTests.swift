import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// The invariant check: a type's summary on the server compared with the base at the same
/// position, journaled whatever it finds; a mismatch fetches that type again, never repairs it
/// in place.
@Suite("A type's summary against the base", .timeLimit(.minutes(5)))
struct SummaryCheckTests {
    static let business = PullApplyTests.business
    static let json = ["Content-Type": "application/json"]

    /// A server whose feed holds `feed` up to 1-3-0 and whose summary of products, taken at
    /// `summaryAt`, holds `summarized`; its snapshot of products holds `snapshot`.
    static func server(feed: [FeedChange], summaryAt: FeedPosition = PullApplyTests.at(3), summarized: [(String, UInt64)],
                       snapshot: [FeedChange] = [], feedEndsAt: FeedPosition = PullApplyTests.at(3)) -> ScriptedTransport {
        ScriptedTransport(otherwise: .handle { request in
            if request.endpoint.hasPrefix(FeedSummary.path) {
                // Products as `summarized` says; every other type as the feed holds it.
                let type = request.endpoint.hasSuffix("type=product") ? "product" : "employee"
                let records = type == "product" ? summarized : feed.filter { $0.type == type }.map { ($0.id, $0.revision) }
                let summary = FeedSummary(business: business, type: type, position: summaryAt, count: records.count,
                                          digest: FeedDigest.summary(records.map { (id: $0.0, revision: $0.1) }))
                return TransportResponse(statusCode: 200, headers: json, body: summary.encoded())
            }
            if request.endpoint.hasPrefix(SnapshotPage.path) {
                let page = SnapshotPage(business: business, position: PullApplyTests.at(4), hasMore: false, count: snapshot.count,
                                        digest: FeedDigest.page(snapshot.map(\.digestInput)), records: snapshot)
                return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
            }
            let from = request.endpoint.contains("cursor=") ? feedEndsAt : .start(of: 1)
            let changes = request.endpoint.contains("cursor=") ? [] : feed
            let page = FeedPage(business: business, from: from, cursor: feedEndsAt, hasMore: false, count: changes.count,
                                digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
            return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
        })
    }

    static func open(_ transport: ScriptedTransport) throws -> (TestJournal, Outbox) {
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            $0.pull = PullConfiguration(types: ["product": PullConfiguration.PulledType(), "employee": PullConfiguration.PulledType()], businesses: [business])
        }
        return (journal, outbox)
    }

    static func checks(_ outbox: Outbox) throws -> [SummaryChecked] {
        try outbox.events(from: .zero, limit: .max).compactMap { event in
            if case .summaryChecked(let checked) = event.body { return checked }
            return nil
        }
    }

    @Test func aBaseThatHoldsWhatTheServerSummarizesMatches() async throws {
        let (_, outbox) = try Self.open(Self.server(feed: [PullApplyTests.put("p1", 2, 14), PullApplyTests.put("p2", 5, 9)],
                                                    summarized: [("p2", 5), ("p1", 2)]))
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.summaries == ["employee": .matched, "product": .matched])
        let checked = try #require(try Self.checks(outbox).last)
        #expect(checked.verdict == .matched && checked.localCount == 2 && checked.serverCount == 2 && checked.position == PullApplyTests.at(3))
        #expect(try outbox.metrics().summariesChecked == 2 && outbox.metrics().summaryMismatches == 0)
        // Once per interval: the next pull does not ask again.
        _ = try await outbox.pull()
        #expect(try Self.checks(outbox).count == 2)
    }

    @Test func aMismatchFetchesThatTypeAgainAndLeavesTheOthersAsTheyWere() async throws {
        // The feed lost p2's change; the employee e1 is another type of the same business.
        let employee = FeedChange(type: "employee", id: "e1", revision: 3, record: Data(#"{"name":"Ngozi"}"#.utf8))
        let transport = Self.server(feed: [employee, PullApplyTests.put("p1", 2, 14)], summarized: [("p1", 2), ("p2", 5)],
                                    snapshot: [PullApplyTests.put("p1", 2, 14), PullApplyTests.put("p2", 5, 9)])
        let (_, outbox) = try Self.open(transport)
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.summaries["product"] == .mismatched && report.pagesStaged == 1)
        let checked = try #require(try Self.checks(outbox).last)
        #expect(checked.type == "product" && checked.localCount == 1 && checked.serverCount == 2)
        #expect(try outbox.record(PullApplyTests.key("p2"))?.server?.revision == 5, "the type fetched again holds what the server does")
        let e1 = try #require(try outbox.record(RecordKey(business: Self.business, type: "employee", id: "e1")))
        #expect(e1.server?.revision == 3, "the other types carried over as they were")
        #expect(try outbox.feedCursor(business: Self.business) == PullApplyTests.at(3), "one type fetched again keeps the feed's cursor")
        let started = try outbox.events(from: .zero, limit: .max).compactMap { event -> ResnapshotStarted? in
            if case .resnapshotStarted(let started) = event.body { return started }
            return nil
        }
        #expect(started.map(\.type) == ["product"] && started.map(\.reason) == ["summary_mismatch"])
        #expect(try outbox.verify().isClean)
        #expect(try outbox.metrics().summaryMismatches == 1 && outbox.metrics().resnapshots == 1)
    }

    @Test func aFeedThatDoesNotStopAtTheSummarysPositionIsInconclusive() async throws {
        // The server ignores `until`: its page ends past the summary's position.
        let (_, outbox) = try Self.open(Self.server(feed: [PullApplyTests.put("p1", 2, 14)], summaryAt: PullApplyTests.at(2),
                                                    summarized: [("p1", 2)], feedEndsAt: PullApplyTests.at(3)))
        defer { outbox.close() }
        _ = try await outbox.pull()
        let checked = try #require(try Self.checks(outbox).last)
        #expect(checked.verdict == .inconclusive && checked.localCount == nil, "never a guess")
        #expect(try outbox.events(from: .zero, limit: .max).contains { $0.kind == .resnapshotStarted } == false)
    }
}
