import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Testing

/// A synced write's change stays on the member's screen until the server's change feed brings it
/// back: the answer's `Outbox-Visible-At` says from which position, so a page from before it
/// (another device's older change) never makes the saved value vanish and come back.
@Suite("A saved change stays on screen until the feed brings it back", .timeLimit(.minutes(5)))
struct PullOverlayTests {
    static let business = PullApplyTests.business
    static let p1 = PullApplyTests.key("p1")
    static func at(_ major: UInt64) -> FeedPosition { PullApplyTests.at(major) }
    static func value(_ price: Double) -> Data { PullApplyTests.value(price) }

    /// A journal whose feed stands at 1-5-0 with p1 at revision 5, and the member's edit of p1
    /// to price 12 answered 200 with `answer`.
    static func editAnswered(_ answer: TransportResponse) async throws -> (TestJournal, Outbox, OperationID) {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: at(5), [PullApplyTests.put("p1", 5, 10)]), requested: nil, limit: 500)
        transport.script(.respond(answer))
        let id = try await outbox.enqueue(PullApplyTests().edit("p1", 1), changing: [.put(p1, value(12))])
        await outbox.drain()
        let state = try outbox.operation(id)
        #expect(state?.status == .synced, "\(String(describing: state?.status)) \(String(describing: state?.lastErrorMessage))")
        return (journal, outbox, id)
    }

    /// The position the write's `attemptFinished` kept.
    static func visibleAt(_ id: OperationID, in outbox: Outbox) throws -> FeedPosition? {
        try outbox.events(from: .zero, limit: .max).compactMap { event -> FeedPosition?? in
            guard event.operationID == id, case .attemptFinished(let finished) = event.body else { return nil }
            return .some(finished.visibleAt)
        }.last ?? nil
    }

    static func answer(visibleAt: String?, body: String = "{}") -> TransportResponse {
        var headers = ["Content-Type": "application/json"]
        headers[WireHeader.visibleAt] = visibleAt
        return TransportResponse(statusCode: 200, headers: headers, body: Data(body.utf8))
    }

    /// An edit that takes its `If-Match` from the base (`revisionFrom`) is sent against the
    /// revision the member made it on, or the one its conflict rule rebased it onto: a page that
    /// moves the base beneath it afterwards is another device's change the member has not seen.
    @Test(arguments: [
        (rebased: false, sent: ["\"5\""]),
        (rebased: true, sent: ["\"5\"", "\"7\"", "\"7\""]),
    ])
    func aPageBeneathAnEditLeavesItsIfMatchWhereTheMemberMadeIt(rebased: Bool, sent: [String]) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        // Rebased once at most, or never: the change at 8 is the member's to decide.
        let outbox = try journal.open { if rebased { $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 1)) } }
        defer { outbox.close() }
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: Self.at(5), [PullApplyTests.put("p1", 5, 10)]), requested: nil, limit: 500)
        var edit = PullApplyTests().edit("p1", 1)
        edit.revisionFrom = Self.p1
        let id = try await outbox.enqueue(edit, changing: [.put(Self.p1, Self.value(12))])
        if rebased {
            // Changed elsewhere at 7: rebased onto it, then the resend meets no answer.
            transport.script(.respond(.json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"7","current":{"price":11}}"#)),
                             .respond(.json(503, #"{"code":"maintenance"}"#)))
            await outbox.drain()
            // The rebased edit is sent again by a pass of its own: until its 503 is recorded.
            try await eventually(outbox) { try outbox.operation(id)?.state.attemptCount == 2 && outbox.operation(id)?.status == .queued }
            #expect(try outbox.operation(id)?.state.rebaseCount == 1)
        }
        // Another device's change at 8 reaches the phone before the edit is sent (again).
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(5), to: Self.at(9), [PullApplyTests.put("p1", 8, 13)]), requested: Self.at(5), limit: 500)
        #expect(try outbox.record(Self.p1)?.server?.revision == 8)
        transport.script(.respond(.json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"8","current":{"price":13}}"#)))
        journal.clock.advance(by: 86_400)
        await outbox.drain()
        // The retry timer's pass, when the edit waited on one, ends with the edit conflicted.
        try await eventually(outbox) { try outbox.operation(id)?.status == .conflicted }
        #expect(transport.requests.map { $0.headers["If-Match"] ?? "none" } == sent)
        #expect(transport.unscriptedRequests == 0, "every request answered by the script")
        let state = try outbox.operation(id)?.state
        #expect(state?.status == .conflicted, "the member decides about the change at 8: \(String(describing: state))")
        #expect(try outbox.verify().isClean)
    }

    @Test func anOlderChangePulledBeforeTheAnswersPositionLeavesTheMembersValueShowing() async throws {
        // The answer names no revision nor record: the member's value waits for the feed.
        let (_, outbox, id) = try await Self.editAnswered(Self.answer(visibleAt: "1-10-0"))
        defer { outbox.close() }
        #expect(try Self.visibleAt(id, in: outbox) == Self.at(10))
        #expect(try outbox.record(Self.p1)?.value == Self.value(12))
        // Another device's change, committed before the member's, arrives first.
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(5), to: Self.at(9), [PullApplyTests.put("p1", 7, 11)]), requested: Self.at(5), limit: 500)
        let between = try #require(try outbox.record(Self.p1))
        #expect(between.server?.revision == 7, "the base moves beneath the member's change")
        #expect(between.value == Self.value(12) && between.sync.confirmed == [id], "the saved value never vanishes")
        // The page that reaches the answer's position brings the member's change back.
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(9), to: Self.at(10), [PullApplyTests.put("p1", 8, 12)]), requested: Self.at(9), limit: 500)
        let after = try #require(try outbox.record(Self.p1))
        #expect(after.value == Self.value(12) && after.server?.revision == 8 && after.sync.confirmed.isEmpty)
        #expect(try outbox.verify().isClean)
    }

    /// Read your writes: an answer that carries its record at a revision retires the member's
    /// change in the outcome's commit, though the feed is behind the answer's position; an older
    /// change pulled later never moves the base back, so nothing flickers; nothing waits to be
    /// compacted.
    @Test func aDescribedRecordIsReadAtOnceAndNeverMovesBack() async throws {
        let (journal, outbox, _) = try await Self.editAnswered(Self.answer(
            visibleAt: "1-10-0", body: #"{"revision":8,"record":{"name":"Antiseptic","price":12}}"#))
        defer { outbox.close() }
        let saved = try #require(try outbox.record(Self.p1))
        #expect(saved.server?.revision == 8, "the answer lands in the base in the outcome's commit")
        #expect(saved.sync.isSynced && saved.sync.confirmed.isEmpty, "synced at once, the feed still behind 1-10-0")
        #expect(saved.value == #"{"name":"Antiseptic","price":12}"#.data(using: .utf8))
        // Another device's older change, committed before the member's, arrives after.
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(5), to: Self.at(9), [PullApplyTests.put("p1", 7, 11)]), requested: Self.at(5), limit: 500)
        let after = try #require(try outbox.record(Self.p1))
        #expect(after.server?.revision == 8 && after.value == saved.value, "the base never moves back: no flicker")
        journal.clock.advance(by: 3_600)
        let compacted = try await outbox.compact(before: journal.clock.now())
        #expect(compacted.operations == 1, "nothing shows its change: its events can go")
        #expect(try outbox.record(Self.p1)?.value == #"{"name":"Antiseptic","price":12}"#.data(using: .utf8))
        #expect(try outbox.verify().isClean)
    }

    /// The server answered its record at a revision, but too large to keep: what it holds may
    /// differ from what the member saved, so nothing is stored at that revision and the member's
    /// value shows until the pull brings the server's.
    @Test func aRecordTooLargeToKeepWaitsForThePullNotForTheMembersValue() async throws {
        let note = String(repeating: "n", count: 70_000)
        let served = Data(#"{"name":"Antiseptic","note":"\#(note)","price":12}"#.utf8)
        let (_, outbox, id) = try await Self.editAnswered(Self.answer(
            visibleAt: "1-10-0", body: #"{"revision":8,"record":"# + String(decoding: served, as: UTF8.self) + "}"))
        defer { outbox.close() }
        let waiting = try #require(try outbox.record(Self.p1))
        #expect(waiting.server?.revision == 5, "no base at 8 made from the member's value")
        #expect(waiting.value == Self.value(12) && waiting.sync.confirmed == [id], "the member's value, confirmed, waits for the feed")
        let change = FeedChange(type: "product", id: "p1", revision: 8, record: served)
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(5), to: Self.at(10), [change]), requested: Self.at(5), limit: 500)
        let pulled = try #require(try outbox.record(Self.p1))
        #expect(pulled.server?.revision == 8 && pulled.value == served, "the server's record, as it holds it")
        #expect(pulled.sync.confirmed.isEmpty)
        #expect(try outbox.verify().isClean)
    }

    @Test func anAnswerWithoutAPositionThatDescribesTheRecordNeedsNoFeed() async throws {
        let (_, outbox, id) = try await Self.editAnswered(TransportResponse(statusCode: 200, headers: ["ETag": "\"8\"", "Content-Type": "application/json"], body: Data("{}".utf8)))
        defer { outbox.close() }
        #expect(try Self.visibleAt(id, in: outbox) == nil)
        // The answer's revision described the record: the base holds the member's value at 8.
        #expect(try outbox.record(Self.p1)?.server?.revision == 8)
        #expect(try outbox.record(Self.p1)?.sync.confirmed.isEmpty == true, "described, it needs no feed to retire")
    }

    @Test func aPositionThatIsNotOneIsIgnoredAndTheEarlierRuleHolds() async throws {
        let (_, outbox, id) = try await Self.editAnswered(Self.answer(visibleAt: "soon"))
        defer { outbox.close() }
        #expect(try Self.visibleAt(id, in: outbox) == nil)
        // No revision, no position: a pulled base after the answer retires it.
        #expect(try outbox.record(Self.p1)?.sync.confirmed == [id])
        _ = try await outbox.apply(PullApplyTests.page(from: Self.at(5), to: Self.at(6), [PullApplyTests.put("p1", 6, 12)]), requested: Self.at(5), limit: 500)
        #expect(try outbox.record(Self.p1)?.sync.confirmed.isEmpty == true)
    }
}
