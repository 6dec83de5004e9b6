import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// Where the pull sits in the worker's passes: after the sends, giving way to writes, on the
/// timer by freshness, and at once on the wakes the member causes.
@Suite("The worker's pulls", .timeLimit(.minutes(5)))
struct PullWorkerTests {
    static let business = PullTests.business
    static let t0 = PullTests.t0

    /// The outbox a transport handler reaches, set once it is open.
    final class Holder: Sendable {
        let outbox = Mutex<Outbox?>(nil)
    }

    /// Answers feed requests from `feed` and every write with 201.
    static func server(_ feed: ScriptedFeed, feedAnswer: (@Sendable (TransportRequest) async throws -> TransportResponse)? = nil) -> ScriptedTransport {
        ScriptedTransport(otherwise: .handle { request in
            guard ScriptedFeed.isFeedRequest(request) else { return .json(201, #"{"id":"product-1"}"#) }
            return try await feedAnswer?(request) ?? feed.answer(request)
        })
    }

    @Test func aPassWhosePullFailsStillSendsItsWritesFirst() async throws {
        let transport = Self.server(ScriptedFeed(count: 0)) { _ in .json(503, "{}") }
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { PullTests.configured(&$0) }
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1))
        let report = try await outbox.pull()
        #expect(report.feed(Self.business)?.stoppedBy == .backingOff(until: Self.t0.addingTimeInterval(2)))
        #expect(try outbox.operation(first)?.status == .synced)
        #expect(transport.requests.map(\.method) == ["POST", "GET"], "the pass's writes go before its pull")
        // The feed backing off holds back no later write.
        let second = try await outbox.enqueue(productRequest(2))
        await outbox.settle()
        #expect(try outbox.operation(second)?.status == .synced)
        #expect(transport.requests.map(\.method) == ["POST", "GET", "POST"], "the feed is not asked again before its backoff")
    }

    @Test func aWriteEnqueuedDuringALongPullIsSentBeforeThePullFinishes() async throws {
        let feed = ScriptedFeed(count: 5)
        let holder = Holder()
        let enqueued = Mutex<OperationID?>(nil)
        let transport = Self.server(feed) { request in
            // The second page is on its way when the member saves.
            if feed.queries.count == 1, let outbox = holder.outbox.withLock({ $0 }) {
                let id = try await outbox.enqueue(productRequest(1))
                enqueued.withLock { $0 = id }
            }
            return feed.answer(request)
        }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [Self.business])) }
        defer { outbox.close() }
        holder.outbox.withLock { $0 = outbox }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == .writesWaiting && report.pagesApplied == 2, "it gives way after the page in hand")
        await outbox.settle()
        let id = try #require(enqueued.withLock { $0 })
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(transport.requests.map(\.method) == ["GET", "GET", "POST", "GET", "GET", "GET"], "the write went at once, then the pull went on")
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-5-0")
        #expect(try outbox.feedState(business: Self.business)?.lastStop == nil)
    }

    /// A save while a long pull commits waits behind at most the one page whose commit is under
    /// way, counted by commits: the pull holds the writer for a page at a time, never for the pull.
    @Test func aSaveDuringALongPullWaitsBehindAtMostOnePagesCommit() async throws {
        let feed = ScriptedFeed(count: 20)
        let holder = Holder()
        let held = Mutex(false)
        let transport = Self.server(feed) { request in
            // The third page's commit is held in the writer's queue, as if its disk were slow.
            if feed.queries.count == 2, let outbox = holder.outbox.withLock({ $0 }) {
                outbox.writer.hold()
                held.withLock { $0 = true }
            }
            return feed.answer(request)
        }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [Self.business])) }
        defer { outbox.close() }
        holder.outbox.withLock { $0 = outbox }
        let pulling = Task { try await outbox.pull() }
        // The page is queued, its commit not made; then the member saves behind it.
        while !held.withLock({ $0 }) || outbox.writer.pendingCount < 1 { await Task.yield() }
        let pagesCommitted = try outbox.events(from: 1, limit: 10_000).filter { $0.kind == .pageApplied }.count
        let transactionsBefore = try outbox.store.environment.info().lastTransactionID
        let saving = Task { try await outbox.enqueue(productRequest(1)) }
        while outbox.writer.pendingCount < 2 { await Task.yield() }
        outbox.writer.release()
        let saved = try await saving.value
        let transactionsToSave = try outbox.store.environment.info().lastTransactionID - transactionsBefore
        _ = try await pulling.value

        let events = try outbox.events(from: 1, limit: 10_000)
        let savedSeq = try #require(events.first { $0.operationID == saved }?.seq)
        let pagesBeforeSave = events.filter { $0.kind == .pageApplied && $0.seq < savedSeq }.count
        #expect(pagesCommitted >= 1, "the pull was under way")
        #expect(pagesBeforeSave == pagesCommitted + 1, "the pages committed before, and the one whose commit was under way")
        #expect(transactionsToSave <= 2, "the page's commit and the save's (or one they share): \(transactionsToSave)")
        #expect(events.filter { $0.kind == .pageApplied }.count >= 3)
    }

    /// A progress bar reads a long pull's pages, changes and bytes as each page lands, from
    /// memory (no commit per record), and an observation hears it, the pull's end included.
    @Test func aLongPullsProgressIsReadAndObservedPageByPage() async throws {
        let feed = ScriptedFeed(count: 6)
        let holder = Holder()
        let seen = Mutex<[Outbox.FeedState.PullProgress]>([])
        let transport = Self.server(feed) { request in
            if let outbox = holder.outbox.withLock({ $0 }), let progress = try outbox.feedState(business: Self.business)?.pull {
                seen.withLock { $0.append(progress) }
            }
            return feed.answer(request)
        }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [Self.business])) }
        defer { outbox.close() }
        holder.outbox.withLock { $0 = outbox }
        #expect(try outbox.feedState(business: Self.business)?.pull == nil, "no pull yet since the journal opened")
        var running = outbox.observe(OutboxObservation { try $0.feedState(business: Self.business)?.pull?.isRunning }).makeAsyncIterator()
        #expect(await running.next() == .some(nil))

        let report = try #require(try await outbox.pull().feed(Self.business))
        let asked = seen.withLock { $0 }
        #expect(asked.map(\.pagesApplied) == Array(0..<asked.count), "each page request saw the pages before it")
        #expect(asked.allSatisfy(\.isRunning) && asked.count >= report.pagesApplied)
        #expect(zip(asked, asked.dropFirst()).allSatisfy { $0.bytesApplied < $1.bytesApplied && $0.changesApplied < $1.changesApplied })
        let last = try #require(try outbox.feedState(business: Self.business)?.pull)
        #expect(!last.isRunning && last.pagesApplied == report.pagesApplied && last.changesApplied == report.changesApplied)
        #expect(last.changesApplied == 6 && last.bytesApplied > 6 * 20, "\(last)")
        #expect(last.startedAt == journal.clock.now())
        // The observation hears the pull's end, which no commit carries.
        while let value = await running.next(), value != .some(false) {}
    }

    @Test func aSignOutStopsALongPullAfterThePageInHand() async throws {
        let feed = ScriptedFeed(count: 5)
        let holder = Holder()
        let transport = Self.server(feed) { request in
            if feed.queries.count == 1, let outbox = holder.outbox.withLock({ $0 }) {
                // The member signs out while the second page comes; the worker stops at once.
                Task { try await outbox.signOut(discardPending: false) }
                while !outbox.attempts.isStopped { await Task.yield() }
            }
            return feed.answer(request)
        }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { PullTests.configured(&$0, PullConfiguration(pageSize: 1, businesses: [Self.business])) }
        defer { outbox.close() }
        holder.outbox.withLock { $0 = outbox }
        await #expect(throws: OutboxError.closed, "the worker stopped before the pass ended") { try await outbox.pull() }
        await outbox.settle()
        #expect(feed.queries.count == 2, "no page asked after the one in hand")
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-2-0", "the page in hand landed with its cursor")
    }

    /// A write synced without its record described waits for the feed to bring the server's
    /// value back: the same pass pulls that feed, not the freshness period's end. One whose
    /// answer described it needs no pull.
    @Test func aWriteSyncedWithoutItsRecordDescribedPullsItsFeedInTheSamePass() async throws {
        let feed = ScriptedFeed(count: 1)
        let describe = Mutex(false)
        let transport = ScriptedTransport(otherwise: .handle { request in
            if ScriptedFeed.isFeedRequest(request) { return feed.answer(request) }
            return describe.withLock { $0 }
                // Described at revision 5, and visible in the feed only at a position past the
                // cursor: read at once all the same.
                ? TransportResponse(statusCode: 200, headers: ["ETag": "\"5\"", "Outbox-Visible-At": "1-9-0", "Content-Type": "application/json"],
                                    body: Data("{}".utf8))
                : .json(200, "{}")
        })
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { PullTests.configured(&$0) }
        defer { outbox.close() }
        _ = try await outbox.pull()
        #expect(feed.queries.count == 1, "caught up")
        journal.clock.advance(by: 60)
        let key = RecordKey(business: Self.business, type: "product", id: "p9")
        let undescribed = try await outbox.enqueue(productRequest(9), changing: [.put(key, Data(#"{"price":9}"#.utf8))])
        await outbox.drain()
        #expect(try outbox.operation(undescribed)?.status == .synced)
        #expect(feed.queries.count == 2, "the same pass pulled the feed, an hour before its freshness ran out: \(feed.queries)")
        describe.withLock { $0 = true }
        journal.clock.advance(by: 60)
        let described = try await outbox.enqueue(productRequest(10), changing: [.put(key, Data(#"{"price":10}"#.utf8))])
        await outbox.drain()
        #expect(try outbox.operation(described)?.status == .synced)
        let record = try outbox.record(key)
        #expect(record?.sync.isSynced == true && record?.server?.revision == 5 && record?.value == Data(#"{"price":10}"#.utf8),
                "read at once from the base its answer wrote, though the feed has not reached 1-9-0")
        #expect(feed.queries.count == 2, "its answer described the record: no pull")
    }

    @Test func aFeedIsNotPulledBeforeItsFreshnessAndIsOnTheTimerAfter() async throws {
        let feed = ScriptedFeed(count: 1)
        let transport = Self.server(feed)
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open {
            PullTests.configured(&$0, PullConfiguration(types: ["product": PullConfiguration.PulledType(freshnessSeconds: 900)], businesses: [Self.business]))
        }
        defer { outbox.close() }
        _ = try await outbox.pull()
        #expect(outbox.nextWake == Self.t0.addingTimeInterval(900), "nothing else scheduled: the feed's freshness arms the timer")
        journal.clock.advance(by: 899)
        await outbox.settle()
        await outbox.drain()
        #expect(feed.queries.count == 1, "a drain pulls only a feed that is due")
        journal.clock.advance(by: 1)
        await outbox.settle()
        #expect(feed.queries == ["limit=500", "limit=500&cursor=1-1-0"], "the timer pulled once the base was 900 s old")
        #expect(outbox.nextWake == Self.t0.addingTimeInterval(1_800))
    }

    @Test func theTimerTakesTheEarlierOfARetryAndAFeedDue() async throws {
        let feed = ScriptedFeed(count: 0)
        let writesAnswered = Mutex(false)
        let transport = ScriptedTransport(otherwise: .handle { request in
            if ScriptedFeed.isFeedRequest(request) { return feed.answer(request) }
            guard writesAnswered.withLock({ $0 }) else { throw URLError(.timedOut) }
            return .json(201, #"{"id":"product-1"}"#)
        })
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { PullTests.configured(&$0) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest())
        _ = try await outbox.pull()
        let retry = try #require(try outbox.operation(id)?.nextAttemptAt)
        #expect(retry < Self.t0.addingTimeInterval(3_600))
        #expect(outbox.nextWake == retry, "the write's retry comes before the feed's freshness")
        writesAnswered.withLock { $0 = true }
        // Time passes (uptime with it: the feed's age is measured by uptime).
        journal.clock.advance(by: retry.timeIntervalSince(Self.t0))
        await outbox.settle()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(outbox.nextWake == Self.t0.addingTimeInterval(3_600), "then the feed's")
    }

    struct Wake: Sendable, CustomTestStringConvertible {
        var reason: WakeReason
        var testDescription: String { reason.rawValue }
    }

    @Test(arguments: WakeReason.allCases.map(Wake.init))
    func aWakeTheMemberCausesPullsAFreshFeedAndOthersDoNot(_ wake: Wake) async throws {
        let feed = ScriptedFeed(count: 1)
        let journal = TestJournal(transport: Self.server(feed))
        let outbox = try journal.open { PullTests.configured(&$0) }
        defer { outbox.close() }
        _ = try await outbox.pull()
        outbox.wake(engine: wake.reason)
        await outbox.settle()
        let pulls: Set<WakeReason> = [.appLaunch, .connectivityRegained, .foreground, .sessionResumed, .pullRequested]
        #expect(feed.queries.count == (pulls.contains(wake.reason) ? 2 : 1))
    }
}
