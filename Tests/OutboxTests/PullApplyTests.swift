import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A page of a change feed applied to the journal: one commit for its changes and its cursor,
/// the base only by newer revisions, a tombstone's questions to the writes still waiting.
@Suite("Pulled pages in the journal", .timeLimit(.minutes(5)))
struct PullApplyTests {
    static let business = "pharmacy-7"
    static func key(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }
    static func value(_ price: Double) -> Data { Data(#"{"name":"Antiseptic","price":\#(price)}"#.utf8) }
    static func at(_ major: UInt64) -> FeedPosition { FeedPosition(epoch: 1, major: major) }

    static func page(from: FeedPosition, to: FeedPosition, hasMore: Bool = false, _ changes: [FeedChange]) -> FeedPage {
        FeedPage(business: business, from: from, cursor: to, hasMore: hasMore, count: changes.count,
                 digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
    }
    static func put(_ id: String, _ revision: UInt64, _ price: Double) -> FeedChange {
        FeedChange(type: "product", id: id, revision: revision, record: value(price))
    }
    static func tombstone(_ id: String, _ revision: UInt64) -> FeedChange {
        FeedChange(type: "product", id: id, revision: revision, record: nil)
    }

    func edit(_ id: String, _ number: Int) -> OutboxRequest {
        var request = productRequest(number, entityID: nil)
        request.operationType = "product.update"
        request.method = "PUT"
        request.endpoint = "/products/\(id)"
        return request
    }

    @Test func aPageLandsItsChangesAndItsCursorInOneCommitAndEnqueuesNothing() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let before = try outbox.store.read { txn in try outbox.store.schema.lastSeq(in: txn) }
        let outcome = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(2), [Self.put("p1", 3, 14), Self.tombstone("p2", 5)]),
                                             requested: nil, limit: 500)
        guard case .applied(let applied) = outcome else { Issue.record("\(outcome)"); return }
        #expect(applied.confirmations.map(\.revision) == [3, 5] && applied.reachedEnd)
        let after = try outbox.store.read { txn in try outbox.store.schema.lastSeq(in: txn) }
        #expect(after.rawValue == before.rawValue + 1, "one event, the page's")
        #expect(try outbox.feedCursor(business: Self.business) == Self.at(2))
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.value == Self.value(14) && record.server?.revision == 3 && record.server?.seq == after)
        #expect(try outbox.record(Self.key("p2"))?.value == nil)
        #expect(try outbox.ledger().entries.isEmpty, "applying a pull never enqueues a write")
        #expect(try outbox.verify().isClean, "the pulled bases have their trail")
        let history = try outbox.recordHistory(Self.key("p1"), showingValues: false)
        #expect(history.entries.map(\.kind) == [.pageApplied] && history.entries.first?.revision == 3)
    }

    @Test func theBaseMovesOnlyToANewerRevision() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(1), [Self.put("p1", 7, 14)]), requested: nil, limit: 500)
        // A feed whose order is not commit order may carry an older revision later, and the
        // same revision again.
        _ = try await outbox.apply(Self.page(from: Self.at(1), to: Self.at(2), [Self.put("p1", 6, 99), Self.put("p1", 7, 14)]),
                                   requested: Self.at(1), limit: 500)
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.value == Self.value(14) && record.server?.revision == 7)
        #expect(try outbox.feedCursor(business: Self.business) == Self.at(2), "the cursor moves past changes it did not take")
        #expect(try outbox.verify().isClean)
    }

    @Test func aPageAskedFromACursorTheJournalNoLongerHoldsAppliesNothing() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(4), [Self.put("p1", 2, 14)]), requested: nil, limit: 500)
        // Another pull asked from the start too and comes back late.
        await #expect {
            try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(3), [Self.put("p9", 1, 1)]), requested: nil, limit: 500)
        } throws: { error in
            guard case OutboxError.feedMoved(let business, nil, "1-4-0") = error else { return false }
            return business == Self.business
        }
        #expect(try outbox.record(Self.key("p9")) == nil)
        #expect(try outbox.feedCursor(business: Self.business) == Self.at(4))
    }

    @Test func aRefusedPageWritesNothingAndAnotherEpochAsksForTheWholeBase() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var wrong = Self.page(from: .start(of: 1), to: Self.at(2), [Self.put("p1", 3, 14)])
        wrong.count = 2
        #expect(try await outbox.apply(wrong, requested: nil, limit: 500) == .refused(.countMismatch(said: 2, held: 1)))
        let refusals = try outbox.events(from: .zero, limit: .max).compactMap { event -> PageRefused? in
            if case .pageRefused(let refused) = event.body { return refused }
            return nil
        }
        #expect(refusals == [PageRefused(business: Self.business, from: nil, code: "count_mismatch", detail: "the page says it holds 2 changes and holds 1")],
                "journaled, so support sees what the server got wrong")
        let restored = Self.page(from: .start(of: 1), to: FeedPosition(epoch: 2, major: 1), [Self.put("p1", 3, 14)])
        #expect(try await outbox.apply(restored, requested: nil, limit: 500) == .resnapshot(epoch: 2))
        #expect(try outbox.record(Self.key("p1")) == nil && outbox.feedCursor(business: Self.business) == nil)
        // An empty first page keeps the position it gave; an empty page at that position writes nothing.
        guard case .applied = try await outbox.apply(Self.page(from: .start(of: 1), to: .start(of: 1), []), requested: nil, limit: 500) else {
            Issue.record("an empty first page must be applied, its position kept")
            return
        }
        #expect(try outbox.feedCursor(business: Self.business) == .start(of: 1))
        #expect(try await outbox.apply(Self.page(from: .start(of: 1), to: .start(of: 1), []), requested: .start(of: 1), limit: 500) == .unchanged)
    }

    @Test func aBodyThatIsNotAPageIsRefusedAndJournaledAndTheCursorStays() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"business":"pharmacy-7","from":"1-0-0","cursor":"1-2-0","has_more":false,"count":1,"digest":"00","changes":[{"type":"product","id":"p1","revision":"three"}]}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.pull = PullConfiguration(businesses: [Self.business]) }
        defer { outbox.close() }
        let report = try await outbox.pull().feed(Self.business)
        guard case .refused(.malformed(let problem))? = report?.stoppedBy else { Issue.record("\(String(describing: report))"); return }
        #expect(!problem.isEmpty)
        #expect(try outbox.events(from: .zero, limit: .max).contains { $0.kind == .pageRefused })
        #expect(try outbox.feedCursor(business: Self.business) == nil)
        #expect(transport.requests.first?.endpoint == "/sync/changes?limit=500" && transport.requests.first?.method == "GET")
        #expect(transport.requests.first?.headers["X-Business-ID"] == Self.business)
    }

    @Test func aPulledChangeGoesBeneathAPendingEditWhichStaysOnScreen() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(1), [Self.put("p1", 1, 14)]), requested: nil, limit: 500)
        _ = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(13.5))])
        await outbox.drain()   // offline: it stays queued
        _ = try await outbox.apply(Self.page(from: Self.at(1), to: Self.at(2), [Self.put("p1", 2, 15)]), requested: Self.at(1), limit: 500)
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.value == Self.value(13.5), "the member's change until its write settles")
        #expect(record.server?.value == Self.value(15) && record.server?.revision == 2, "the server's beneath it")
        #expect(record.sync.pending.count == 1)
    }

    @Test func aTombstoneAsksTheMemberAboutEachEditStillWaitingAndLeavesADeleteAlone() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(1), [Self.put("p1", 1, 14), Self.put("p2", 1, 9)]),
                                   requested: nil, limit: 500)
        let edited = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(13.5))])
        var deletion = edit("p2", 2)
        deletion.method = "DELETE"
        let deleting = try await outbox.enqueue(deletion, changing: [.delete(Self.key("p2"))])
        await outbox.drain()   // offline: both stay queued
        guard case .applied = try await outbox.apply(Self.page(from: Self.at(1), to: Self.at(3), [Self.tombstone("p1", 2), Self.tombstone("p2", 2)]),
                                                     requested: Self.at(1), limit: 500) else { Issue.record("not applied"); return }
        let conflicted = try #require(try outbox.operation(edited))
        #expect(conflicted.status == .conflicted && conflicted.lastErrorCode == ErrorCode.deletedOnServer)
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.value == Self.value(13.5), "the member's value kept on screen")
        #expect(record.server?.isDeleted == true && record.sync.conflict?.operation == edited)
        #expect(try outbox.operation(deleting)?.status == .queued, "a delete agrees with the tombstone")
        #expect(try outbox.verify().isClean)
    }

    @Test func anEditOnItsWayWhenItsRecordIsDeletedIsAskedAboutOnceItComesBackQueued() async throws {
        let outboxBox = Mutex<Outbox?>(nil)
        // The edit's request meets the tombstone's page on the phone, then no answer.
        let transport = ScriptedTransport(otherwise: .handle { request in
            if request.method == "PUT", let outbox = outboxBox.withLock({ $0 }) {
                _ = try await outbox.apply(Self.page(from: Self.at(1), to: Self.at(2), [Self.tombstone("p1", 2)]), requested: Self.at(1), limit: 500)
                #expect(try outbox.operation(outbox.ledger().entries.first!.operationID)?.status == .syncing, "on its way: it settles first")
            }
            throw URLError(.notConnectedToInternet)
        })
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(1), [Self.put("p1", 1, 14)]), requested: nil, limit: 500)
        outboxBox.withLock { $0 = outbox }
        let edited = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(13.5))])
        await outbox.drain()
        let state = try #require(try outbox.operation(edited))
        #expect(state.status == .conflicted && state.lastErrorCode == ErrorCode.deletedOnServer,
                "back in the queue, it is asked about in the commit that brought it back")
        #expect(try outbox.record(Self.key("p1"))?.value == Self.value(13.5))
        #expect(try outbox.verify().isClean)
    }

    @Test func aChangeTheEnginePassesOverIsNamedWithWhyAndCounted() async throws {
        let journal = TestJournal()
        let outbox = try journal.open {
            $0.pull = PullConfiguration(types: ["product": PullConfiguration.PulledType(), "draft": PullConfiguration.PulledType()], businesses: [Self.business])
            $0.recordTypes = ["draft": .localOnly]
        }
        defer { outbox.close() }
        let huge = Data(("{\"blob\":\"" + String(repeating: "x", count: OutboxRequest.defaultMaxPayloadBytes) + "\"}").utf8)
        let changes = [FeedChange(type: "invoice", id: "i-1", revision: 4, record: Data("{}".utf8)),
                       FeedChange(type: "product", id: "huge", revision: 9, record: huge),
                       FeedChange(type: "draft", id: "d-1", revision: 1, record: Data("{}".utf8)),
                       Self.put("p1", 2, 14)]
        guard case .applied(let applied) = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(2), changes), requested: nil, limit: 500)
        else { Issue.record("not applied"); return }
        #expect(applied.skipped == [SkippedChange(type: "invoice", id: "i-1", revision: 4, reason: .unknownType),
                                    SkippedChange(type: "product", id: "huge", revision: 9, reason: .overLimit),
                                    SkippedChange(type: "draft", id: "d-1", revision: 1, reason: .localOnly)])
        #expect(applied.confirmations.map(\.key) == [Self.key("p1")])
        #expect(try outbox.record(Self.key("huge")) == nil && outbox.feedCursor(business: Self.business) == Self.at(2), "the feed moves past them")
    }
}
