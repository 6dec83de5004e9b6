import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire
import Testing

/// `summary` names each change feed the journal pulled: where it stands and which page set it.
@Suite("The summary of a journal that pulls", .hangGuard)
struct FeedSummaryTests {
    let directory = TemporaryDirectory()
    static let pulledAt = Date(timeIntervalSince1970: 1_800_000_000)

    private func writeJournal(pulling: Bool) async throws {
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "member-42", clock: ManualClock(now: Self.pulledAt), defaultPolicy: .idempotent))
        defer { outbox.close() }
        guard pulling else { return }
        let change = FeedChange(type: "product", id: "p1", revision: 2, record: Data(#"{"price":14}"#.utf8))
        let page = FeedPage(business: "pharmacy-7", from: .start(of: 3), cursor: FeedPosition(epoch: 3, major: 9), hasMore: false, count: 1,
                            digest: FeedDigest.page([change.digestInput]), changes: [change])
        guard case .applied = try await outbox.apply(page, requested: nil, limit: 500) else { Issue.record("not applied"); return }
    }

    @Test func eachFeedIsNamedWithItsCursorAndThePageThatSetIt() async throws {
        try await writeJournal(pulling: true)
        let now = ["--now", "2027-01-15T10:00:00Z"]
        let text = inspect([directory.url.path, "summary"] + now)
        #expect(text.code == .success, "\(text.errors)")
        let line = try #require(text.output.split(separator: "\n").first { $0.hasPrefix("Feed") })
        #expect(line.contains("pharmacy-7 at 3-9-0, set by the event at seq"), "\(line)")
        let json = inspect([directory.url.path, "summary", "--json"] + now)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let feeds = try #require(document["feeds"] as? [[String: Any]])
        #expect(feeds.count == 1 && feeds[0]["business"] as? String == "pharmacy-7" && feeds[0]["cursor"] as? String == "3-9-0")
        #expect(feeds[0]["ageSeconds"] as? Double == Date(timeIntervalSince1970: 1_800_000_000).distance(to: ISO8601DateFormatter().date(from: "2027-01-15T10:00:00Z")!))
    }

    /// The lag counts from the last page that reached the feed's end: a later page of a pull
    /// still under way leaves the feed as far behind as it was.
    @Test func theLagCountsFromTheLastPageThatReachedTheEnd() async throws {
        let clock = ManualClock(now: Self.pulledAt)
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent))
        func page(_ from: UInt64, _ to: UInt64, more: Bool) -> FeedPage {
            let change = FeedChange(type: "product", id: "p\(to)", revision: 1, record: Data(#"{"price":1}"#.utf8))
            return FeedPage(business: "pharmacy-7", from: FeedPosition(epoch: 3, major: from), cursor: FeedPosition(epoch: 3, major: to),
                            hasMore: more, count: 1, digest: FeedDigest.page([change.digestInput]), changes: [change])
        }
        guard case .applied = try await outbox.apply(page(0, 1, more: false), requested: nil, limit: 500) else { Issue.record("first"); return }
        clock.advance(by: 3_600)
        guard case .applied = try await outbox.apply(page(1, 2, more: true), requested: FeedPosition(epoch: 3, major: 1), limit: 500) else {
            Issue.record("second")
            return
        }
        outbox.close()
        let now = Self.pulledAt.addingTimeInterval(7_200)
        let json = inspect([directory.url.path, "summary", "--json", "--now", ISO8601DateFormatter().string(from: now)])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let feed = try #require((document["feeds"] as? [[String: Any]])?.first)
        #expect(feed["cursor"] as? String == "3-2-0")
        #expect(feed["ageSeconds"] as? Double == 7_200, "from the page that reached the end, not the later one: \(feed)")
        let text = inspect([directory.url.path, "summary", "--now", ISO8601DateFormatter().string(from: now)]).output
        #expect(text.contains("caught up 2027-01-15T08:00:00Z (2 h behind now)"), "\(text)")
    }

    @Test func aJournalThatNeverPulledSaysNothingOfFeeds() async throws {
        try await writeJournal(pulling: false)
        let text = inspect([directory.url.path, "summary"])
        #expect(!text.output.contains("Feed"))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(inspect([directory.url.path, "summary", "--json"]).output.utf8)) as? [String: Any])
        #expect(document["feeds"] == nil)
    }
}
