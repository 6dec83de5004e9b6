import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Testing

/// A record and a query say how fresh the server base is: when the business's feed last caught up,
/// how long ago by the device's clocks, and whether that is older than the type's freshness.
@Suite("How fresh a pulled record is", .timeLimit(.minutes(5)))
struct RecordFreshnessTests {
    static let business = PullApplyTests.business

    /// A journal pulling products (fresh for 600 s) whose feed answers one page with p1.
    static func journal() throws -> (TestJournal, Outbox, ScriptedTransport) {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            $0.pull = PullConfiguration(types: ["product": PullConfiguration.PulledType(freshnessSeconds: 600)], businesses: [business])
            $0.recordTypes = ["draft": .localOnly]
        }
        return (journal, outbox, transport)
    }

    static func pageAnswer() -> TransportResponse {
        let page = PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(3), [PullApplyTests.put("p1", 2, 14)])
        return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: page.encoded())
    }

    @Test func aPulledRecordIsFreshUntilItsTypesFreshnessRunsOutAndStaysStaleAcrossAReboot() async throws {
        let (journal, outbox, transport) = try Self.journal()
        defer { outbox.close() }
        transport.script(.respond(Self.pageAnswer()))
        let report = try await outbox.pull()
        #expect(report.feed(Self.business)?.reachedEnd == true)
        let caughtUp = journal.clock.now()
        let fresh = try #require(try outbox.record(PullApplyTests.key("p1"))?.freshness)
        #expect(fresh.caughtUpAt == caughtUp && fresh.ageSeconds == 0 && !fresh.isStale)

        journal.clock.advance(by: 599)
        #expect(try outbox.record(PullApplyTests.key("p1"))?.freshness?.isStale == false)
        journal.clock.advance(by: 2)
        let stale = try #require(try outbox.record(PullApplyTests.key("p1"))?.freshness)
        #expect(stale.isStale && stale.ageSeconds == 601)
        let page = try outbox.records(RecordQuery(business: Self.business, type: "product"))
        #expect(page.freshness == stale && page.records.first?.freshness == stale, "a query says the same for its page")
    }

    @Test func aPhoneOffForDaysNeverLooksFresh() async throws {
        let (journal, outbox, transport) = try Self.journal()
        defer { outbox.close() }
        transport.script(.respond(Self.pageAnswer()))
        _ = try await outbox.pull()
        // Off for three days: the uptime starts again, the wall clock carries the gap, uncapped.
        journal.clock.reboot(downtime: 3 * 86_400)
        let freshness = try #require(try outbox.record(PullApplyTests.key("p1"))?.freshness)
        #expect(freshness.isStale && (freshness.ageSeconds ?? 0) >= 3 * 86_400)
    }

    @Test func aFeedNeverCaughtUpIsStaleAndALocalOnlyRecordHasNoFreshness() async throws {
        let (_, outbox, _) = try Self.journal()
        defer { outbox.close() }
        _ = try await outbox.enqueue(PullApplyTests().edit("p5", 1), changing: [.put(PullApplyTests.key("p5"), PullApplyTests.value(3))])
        let never = try #require(try outbox.record(PullApplyTests.key("p5"))?.freshness)
        #expect(never.caughtUpAt == nil && never.ageSeconds == nil && never.isStale)
        let draft = RecordKey(business: Self.business, type: "draft", id: "d1")
        try await outbox.writeLocal([.put(draft, Data(#"{"n":1}"#.utf8))])
        #expect(try outbox.record(draft)?.freshness == nil, "the server never holds a local-only record")
    }
}
