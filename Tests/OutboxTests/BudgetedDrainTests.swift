import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A drain within the time the system gave the app in the background: what starts with the
/// budget left, what an expiry does to a request in flight or between a feed's pages, and what
/// the worker does afterwards. Each case runs on the manual clock; a request takes time only
/// where the transport moves the clock, and a request in flight is one the transport holds.
@Suite("Budgeted drains", .timeLimit(.minutes(5)))
struct BudgetedDrainTests {
    static let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    /// A transport that answers every write 201, each answer taking `seconds` of the clock.
    static func server(_ clock: ManualClock, seconds: TimeInterval) -> ScriptedTransport {
        ScriptedTransport(otherwise: .handle { _ in
            clock.advance(by: seconds)
            return .json(201, #"{"id":"p"}"#)
        })
    }

    // MARK: The rule

    struct BudgetRow: Sendable, CustomTestStringConvertible {
        var name: String
        var budget: DrainBudget
        var secondsAfterStart: TimeInterval
        var stop: DrainBudget.Stop?
        var testDescription: String { name }
    }

    static let budgetRows: [BudgetRow] = [
        BudgetRow(name: "outside a budgeted drain", budget: DrainBudget(), secondsAfterStart: 0, stop: nil),
        BudgetRow(name: "a whole request left", budget: DrainBudget(deadline: t0.addingTimeInterval(30)), secondsAfterStart: 0, stop: nil),
        BudgetRow(name: "less than a request left", budget: DrainBudget(deadline: t0.addingTimeInterval(30)), secondsAfterStart: 0.5, stop: .budgetSpent),
        BudgetRow(name: "past the deadline", budget: DrainBudget(deadline: t0), secondsAfterStart: 5, stop: .budgetSpent),
        BudgetRow(name: "expired, time left", budget: DrainBudget(deadline: t0.addingTimeInterval(600), expired: true), secondsAfterStart: 0, stop: .expired),
        BudgetRow(name: "expired outside a drain", budget: DrainBudget(expired: true), secondsAfterStart: 0, stop: .expired),
    ]

    @Test(arguments: budgetRows)
    func aRequestStartsOnlyWhenTheTimeLeftCoversIt(_ row: BudgetRow) {
        #expect(row.budget.stop(at: Self.t0.addingTimeInterval(row.secondsAfterStart), requestSeconds: 30) == row.stop)
    }

    @Test func anInterruptedAttemptIsDueAtOnceAndNeverNearerGivingUp() {
        let id = OperationID()
        var policy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 2, multiplier: 2, maxDelaySeconds: 60)
        policy.maxAttempts = 3
        for (failure, dueAtOnce, givesUp) in [(TransportRequest.Failure.cancelled, true, false), (.offline, false, true)] {
            let facts = OutcomePlanner.Facts(operation: id, attempt: AttemptNumber(rawValue: 3), retryEpochAttempts: 0, retryEpochAgeSeconds: 10,
                                             rebaseCount: 0, replay: .idempotent, conflictRule: .askMember, retryPolicy: policy, now: Self.t0)
            let plan = OutcomePlanner.plan(.transport(.noResponse(failure)), facts)
            #expect((plan.classification.disposition == .gaveUp) == givesUp, "\(failure)")
            #expect((plan.finished.nextAttemptAt == Self.t0) == dueAtOnce, "\(failure)")
        }
    }

    // MARK: The budget left

    struct LeftRow: Sendable, CustomTestStringConvertible {
        var name: String
        /// Seconds from the drain's start to its deadline.
        var budget: TimeInterval
        /// Seconds each answer takes.
        var perRequest: TimeInterval
        var attempts: Int
        var ending: Outbox.DrainReport.Ending
        var testDescription: String { name }
    }

    /// Three writes queued; the configuration's attempt budget is 30 seconds.
    static let leftRows: [LeftRow] = [
        LeftRow(name: "time for all three", budget: 600, perRequest: 20, attempts: 3, ending: .finished),
        LeftRow(name: "time for two", budget: 60, perRequest: 20, attempts: 2, ending: .budgetSpent),
        LeftRow(name: "exactly one request's time", budget: 30, perRequest: 20, attempts: 1, ending: .budgetSpent),
        LeftRow(name: "less than one request's time", budget: 29, perRequest: 20, attempts: 0, ending: .budgetSpent),
    ]

    @Test(arguments: leftRows)
    func noAttemptStartsWithLessTimeLeftThanOneNeeds(_ row: LeftRow) async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let transport = Self.server(journal.clock, seconds: row.perRequest)
        let outbox = try journal.open(server: transport)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 1...3 { ids.append(try await outbox.enqueue(productRequest(number))) }
        let report = await outbox.drain(until: Self.t0.addingTimeInterval(row.budget))
        #expect(report.ending == row.ending)
        #expect(report.attempts == row.attempts && report.cancelledAttempts == 0)
        #expect(transport.requests.count == row.attempts)
        let statuses = try ids.map { try outbox.operation($0)?.status }
        #expect(statuses == ids.indices.map { $0 < row.attempts ? .synced : .queued })
        #expect(try ids.map { try outbox.operation($0)?.attemptCount } == ids.indices.map { $0 < row.attempts ? 1 : 0 },
                "a row not started has no attempt")
        if row.attempts < 3 { #expect(report.nextWake != nil, "the rows left are the system's to schedule") }
    }

    // MARK: An expiry with a request in flight

    enum Expiry: String, CaseIterable, Sendable {
        /// The system's expiration handler calls `expire()`.
        case expireCall
        /// The drain's deadline passes on the clock.
        case deadline
        /// The task running the drain is cancelled.
        case cancellation
    }

    @Test(arguments: Expiry.allCases)
    func anExpiryMidAttemptRecordsItCancelledAndStartsNothingMore(_ expiry: Expiry) async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"id":"p"}"#)))
        transport.script(.hold)
        let outbox = try journal.open(server: transport)
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1))
        let second = try await outbox.enqueue(productRequest(2))
        let drain = Task { await outbox.drain(until: Self.t0.addingTimeInterval(120)) }
        await transport.waitUntilHolding()
        switch expiry {
        case .expireCall: outbox.expire()
        case .deadline:
            await journal.clock.waitForSleepers()
            journal.clock.advance(by: 121)
        case .cancellation: drain.cancel()
        }
        let report = await drain.value
        #expect(report.ending == .expired)
        #expect(report.attempts == 1 && report.cancelledAttempts == 1)
        let interrupted = try #require(try outbox.operation(first))
        #expect(interrupted.status == .queued && interrupted.lastErrorCode == "cancelled")
        #expect(interrupted.nextAttemptAt == journal.clock.now(), "due again at once")
        #expect(try outbox.store.queries.operationState(first)?.retryEpochAttempts == 1, "not counted toward the policy's attempts")
        #expect(try outbox.metrics().cancelledAttempts == 1)
        let finished = try outbox.journalEvents(of: first).compactMap { event -> AttemptFinished? in
            if case .attemptFinished(let finished) = event.body { return finished }
            return nil
        }
        #expect(finished.map(\.outcome) == [.noResponse(.cancelled)], "one attempt, one outcome: nothing half-written")
        #expect(try outbox.operation(second)?.attemptCount == 0, "nothing starts after the expiry")
        #expect(transport.requests.count == 1)
        #expect(report.nextWake == journal.clock.now(), "the interrupted row is the system's to schedule, now")
        // Expired, the worker's own timer runs nothing: the system decides when the app runs.
        journal.clock.advance(by: 600)
        await outbox.settle()
        #expect(transport.requests.count == 1)
        // The app comes back: the interrupted row goes again under its key, then the next.
        outbox.wake(.foreground)
        try await eventually(outbox) { try outbox.operation(second)?.status == .synced }
        #expect(try outbox.operation(first)?.status == .synced)
        let keys = transport.requests.map { $0.headers[WireHeader.idempotencyKey] }
        #expect(keys.count == 3 && keys[0] == keys[1], "the cancelled request is replayed under the same key")
    }

    @Test func aPullAfterABudgetedDrainPullsWithoutAWake() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let (transport, _) = Self.feedServer(journal.clock, seconds: 0)
        let outbox = try journal.open(server: transport) { PullTests.configured(&$0, PullConfiguration(pageSize: 5, businesses: [PullTests.business])) }
        defer { outbox.close() }
        _ = await outbox.drain(until: Self.t0.addingTimeInterval(10))
        #expect(try outbox.feedCursor(business: PullTests.business) == nil, "10 s is less than a page needs")
        let report = try await outbox.pull()
        #expect(report.feed(PullTests.business)?.pagesApplied == 1)
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-5-0")
    }

    @Test func anEnqueueAfterAnExpiryIsSentWithoutAWake() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"id":"p"}"#)))
        let outbox = try journal.open(server: transport)
        defer { outbox.close() }
        _ = await outbox.drain(until: Self.t0.addingTimeInterval(60))
        let id = try await outbox.enqueue(productRequest(1))
        try await eventually(outbox) { try outbox.operation(id)?.status == .synced }
    }

    // MARK: The pull within the budget

    /// A feed of five products, one a page; each page's answer takes `seconds`; `during` runs
    /// as the page with that index (from 0) is answered.
    static func feedServer(_ clock: ManualClock, seconds: TimeInterval, during: (index: Int, action: @Sendable () -> Void)? = nil) -> (ScriptedTransport, ScriptedFeed) {
        let feed = ScriptedFeed(count: 5)
        let transport = ScriptedTransport(otherwise: .handle { request in
            guard ScriptedFeed.isFeedRequest(request) else { return .json(201, #"{"id":"p"}"#) }
            if let during, feed.queries.count == during.index { during.action() }
            clock.advance(by: seconds)
            return feed.answer(request)
        })
        return (transport, feed)
    }

    @Test func theBudgetStopsAPullBetweenPagesAndTheNextDrainGoesOn() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let (transport, feed) = Self.feedServer(journal.clock, seconds: 25)
        let outbox = try journal.open(server: transport) { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [PullTests.business])) }
        defer { outbox.close() }
        // 60 s: a page at 60 s left, one at 35 s left, none at 10 s left.
        let report = await outbox.drain(until: Self.t0.addingTimeInterval(60))
        #expect(report.ending == .budgetSpent)
        let pulled = try #require(report.pull?.feed(PullTests.business))
        #expect(pulled.pagesApplied == 2 && pulled.stoppedBy == .budgetSpent)
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-2-0", "the cursor is where the pages applied reached")
        #expect(feed.queries.count == 2)
        // The next background time goes on from the cursor.
        let next = await outbox.drain(until: journal.clock.now().addingTimeInterval(600))
        #expect(next.ending == .finished)
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-5-0")
        #expect(Array(feed.queries.dropFirst(2)) == ["limit=1&cursor=1-2-0", "limit=1&cursor=1-3-0", "limit=1&cursor=1-4-0"])
    }

    @Test func anExpiryBetweenPagesKeepsThePagesAppliedAndDoesNotBackOff() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let holder = PullWorkerTests.Holder()
        let (transport, feed) = Self.feedServer(journal.clock, seconds: 1, during: (1, { holder.outbox.withLock { $0 }?.expire() }))
        let outbox = try journal.open(server: transport) { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [PullTests.business])) }
        defer { outbox.close() }
        holder.outbox.withLock { $0 = outbox }
        let report = await outbox.drain(until: Self.t0.addingTimeInterval(600))
        #expect(report.ending == .expired)
        let pulled = try #require(report.pull?.feed(PullTests.business))
        #expect(pulled.pagesApplied == 2 && pulled.stoppedBy == .expired, "the page answered as the expiry came still lands")
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-2-0")
        #expect(try outbox.feedState(business: PullTests.business)?.failures == 0, "an expiry is no failure of the feed")
        outbox.wake(.foreground)
        await outbox.settle()
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-5-0")
        #expect(feed.queries.count == 5)
    }

    @Test func theBudgetStopsAResnapshotBetweenStagedPagesAndTheStagingSurvives() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let clock = journal.clock
        // The feed's cursor means nothing to the server (409): the base is fetched again whole,
        // three snapshot pages of one product each, every page taking 25 s of the clock.
        let snapshotAsks = Mutex<[String]>([])
        let transport = ScriptedTransport(otherwise: .handle { request in
            if request.endpoint.hasPrefix("/sync/snapshot") {
                snapshotAsks.withLock { $0.append(request.endpoint) }
                clock.advance(by: 25)
                let after = request.endpoint.contains("after_id=p2") ? 2 : request.endpoint.contains("after_id=p1") ? 1 : 0
                let number = after + 1
                return ResnapshotTests.snapshot(at: FeedPosition(epoch: 2, major: 3), more: number < 3,
                                                [PullApplyTests.put("p\(number)", 1, Double(number))])
            }
            guard ScriptedFeed.isFeedRequest(request) else { return .json(201, #"{"id":"p"}"#) }
            if request.endpoint.contains("cursor=") {
                let page = FeedPage(business: PullTests.business, from: FeedPosition(epoch: 2, major: 3), cursor: FeedPosition(epoch: 2, major: 3),
                                    hasMore: false, count: 0, digest: FeedDigest.page([]), changes: [])
                return TransportResponse(statusCode: 200, headers: [:], body: page.encoded())
            }
            let required = FeedResnapshot(reason: .expired, message: "Too old", epoch: 2)
            return TransportResponse(statusCode: FeedResnapshot.status, headers: ["Content-Type": "application/json"], body: required.body)
        })
        let outbox = try journal.open(server: transport) { PullTests.configured(&$0) }
        defer { outbox.close() }
        // 60 s: a page with 60 s left, one with 35 s, none with 10 s.
        let report = await outbox.drain(until: Self.t0.addingTimeInterval(60))
        #expect(report.ending == .budgetSpent)
        let pulled = try #require(report.pull?.feed(PullTests.business))
        #expect(pulled.pagesStaged == 2 && pulled.stoppedBy == .budgetSpent)
        #expect(try outbox.feedState(business: PullTests.business)?.resnapshot?.pagesStaged == 2, "the staged pages are kept")
        #expect(try outbox.record(ResnapshotTests.key("p1")) == nil, "the member sees the old base until the swap")
        // The next background time goes on from the last page staged and swaps the snapshot in.
        let next = await outbox.drain(until: journal.clock.now().addingTimeInterval(600))
        #expect(next.ending == .finished)
        #expect(try outbox.feedState(business: PullTests.business)?.resnapshot == nil)
        #expect(try (1...3).allSatisfy { try outbox.record(ResnapshotTests.key("p\($0)")) != nil })
        #expect(snapshotAsks.withLock { $0 }.count == 3, "no page fetched twice")
    }

    @Test func anExpiryWithAPageInFlightAppliesNothingOfIt() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let feed = ScriptedFeed(count: 5)
        let transport = ScriptedTransport(otherwise: .handle { request in feed.answer(request) })
        transport.script(.handle { request in feed.answer(request) }, .hold)
        let outbox = try journal.open(server: transport) { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [PullTests.business])) }
        defer { outbox.close() }
        let drain = Task { await outbox.drain(until: Self.t0.addingTimeInterval(600)) }
        await transport.waitUntilHolding()
        outbox.expire()
        let report = await drain.value
        #expect(report.ending == .expired)
        #expect(report.pull?.feed(PullTests.business)?.stoppedBy == .expired)
        #expect(try outbox.feedCursor(business: PullTests.business)?.text == "1-1-0", "the page cut off applied nothing")
        #expect(try outbox.feedState(business: PullTests.business)?.failures == 0)
    }
}
