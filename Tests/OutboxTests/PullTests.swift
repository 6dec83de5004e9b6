import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A change feed served from memory, as the contract answers it: `count` products at positions
/// `1-1-0` to `1-count-0`, a page holding at most the `limit` asked (and `maxLimit`), each
/// page's limits published. Records every feed request's query.
final class ScriptedFeed: Sendable {
    let business: String
    let count: Int
    let maxLimit: Int
    private let asked = Mutex<[String]>([])

    init(business: String = PullTests.business, count: Int, maxLimit: Int = 1_000) {
        self.business = business
        self.count = count
        self.maxLimit = maxLimit
    }

    /// The queries of the feed requests answered, in order (`limit=500&cursor=1-2-0`).
    var queries: [String] { asked.withLock { $0 } }

    static func isFeedRequest(_ request: TransportRequest) -> Bool {
        request.method == "GET" && request.endpoint.hasPrefix(FeedPage.path)
    }

    /// The page the request asks for.
    func answer(_ request: TransportRequest) -> TransportResponse {
        let query = String(request.endpoint.split(separator: "?", maxSplits: 1).last ?? "")
        asked.withLock { $0.append(query) }
        var limit = 500
        var after = 0
        for part in query.split(separator: "&") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.first == "limit" { limit = Int(pair[1]) ?? limit }
            if pair.first == "cursor" { after = Int(pair[1].split(separator: "-")[1]) ?? 0 }
        }
        let last = min(count, after + min(limit, maxLimit))
        let changes = (after < last ? Array(after + 1...last) : []).map { number in
            FeedChange(type: "product", id: "p\(number)", revision: 1, record: Data(#"{"id":"p\#(number)","price":\#(number)}"#.utf8))
        }
        let page = FeedPage(business: business, from: FeedPosition(epoch: 1, major: UInt64(after)), cursor: FeedPosition(epoch: 1, major: UInt64(last)),
                            hasMore: last < count, count: changes.count, digest: FeedDigest.page(changes.map(\.digestInput)),
                            limits: FeedLimits(maxLimit: maxLimit, maxPageBytes: 1 << 20, tombstoneRetentionSeconds: 86_400), changes: changes)
        return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: page.encoded())
    }
}

/// A session signed in until its `signedOutFrom`-th question (counting from 1), signed out from
/// then on: a pass asks once as it starts, then the pull before each request and again before
/// each page is applied.
final class CountedSession: OutboxSession {
    let account: String
    let signedOutFrom: Int
    private let asked = Mutex(0)

    init(account: String = "member-42", signedOutFrom: Int) {
        self.account = account
        self.signedOutFrom = signedOutFrom
    }

    func currentAccount() async -> String? {
        let call = asked.withLock { count in
            count += 1
            return count
        }
        return call < signedOutFrom ? account : nil
    }

    /// The question before feed request `index` of a pass's first feed.
    static func beforeRequest(_ index: Int) -> Int { 2 + 2 * index }
}

/// `pull()` and the worker's pulls, case by case over a scripted transport and a manual clock:
/// what stops a feed, what it does to the feed's schedule, and what an app reads afterwards.
@Suite("Pulling feeds", .timeLimit(.minutes(5)))
struct PullTests {
    static let business = "pharmacy-7"
    static let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    static func configured(_ configuration: inout OutboxConfiguration, _ pull: PullConfiguration = PullConfiguration(businesses: [business])) {
        configuration.pull = pull
    }

    // MARK: What stops a feed

    /// One way a feed's pull ends: the answers, what the report says, what the journal holds.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Each feed request's answer, in order; `nil`: no response.
        var answers: [TransportResponse?]
        /// Signs out before the request with this index is sent (-1: never), or during it.
        var signOutBefore = -1
        var signOutDuring = -1
        var stop: Outbox.PullStop?
        var pagesApplied = 0
        var cursor: String?
        /// A `pageRefused` journaled.
        var journalsRefusal = false
        var pauses = false
        var testDescription: String { name }
    }

    static func page(from: Int, to: Int, hasMore: Bool, count: Int? = nil) -> TransportResponse {
        let changes = (from < to ? Array(from + 1...to) : []).map { number in
            FeedChange(type: "product", id: "p\(number)", revision: 1, record: Data(#"{"id":"p\#(number)"}"#.utf8))
        }
        let page = FeedPage(business: business, from: FeedPosition(epoch: 1, major: UInt64(from)), cursor: FeedPosition(epoch: 1, major: UInt64(to)),
                            hasMore: hasMore, count: count ?? changes.count, digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
        return TransportResponse(statusCode: 200, headers: [:], body: page.encoded())
    }

    static let rows: [Row] = [
        Row(name: "reaches the end", answers: [page(from: 0, to: 2, hasMore: true), page(from: 2, to: 3, hasMore: false)],
            pagesApplied: 2, cursor: "1-3-0"),
        Row(name: "signed out before a page: nothing asked", answers: [], signOutBefore: 0, stop: .signedOut),
        Row(name: "signed out after the first page: the next is not asked", answers: [page(from: 0, to: 2, hasMore: true)], signOutBefore: 1,
            stop: .signedOut, pagesApplied: 1, cursor: "1-2-0"),
        Row(name: "signed out while a page comes: it is dropped", answers: [page(from: 0, to: 2, hasMore: true), page(from: 2, to: 3, hasMore: false)],
            signOutDuring: 1, stop: .signedOut, pagesApplied: 1, cursor: "1-2-0"),
        Row(name: "no response after a page keeps its cursor", answers: [page(from: 0, to: 2, hasMore: true), nil], stop: .offline,
            pagesApplied: 1, cursor: "1-2-0"),
        Row(name: "401 pauses", answers: [.json(401, #"{"code":"unauthorized"}"#)], stop: .unauthorized, pauses: true),
        Row(name: "429 with Retry-After backs off until then", answers: [.json(429, "{}", headers: ["Retry-After": "120"])],
            stop: .backingOff(until: t0.addingTimeInterval(120))),
        Row(name: "503 backs off by the retry policy", answers: [.json(503, "{}")], stop: .backingOff(until: t0.addingTimeInterval(2))),
        Row(name: "503 with a later Retry-After waits for it", answers: [.json(503, "{}", headers: ["Retry-After": "600"])],
            stop: .backingOff(until: t0.addingTimeInterval(600))),
        Row(name: "a page whose count is wrong is refused and journaled", answers: [page(from: 0, to: 2, hasMore: false, count: 3)],
            stop: .refused(.countMismatch(said: 3, held: 2)), journalsRefusal: true),
        Row(name: "409 fetches the base again whole: the snapshot is asked next",
            answers: [.json(409, #"{"code":"resnapshot_required","reason":"expired","message":"too old","epoch":1}"#), nil],
            stop: .offline),
    ]

    @Test(arguments: rows)
    func eachWayAFeedEndsIsReportedAndKeptAsTheRowSays(_ row: Row) async throws {
        let switchable = SwitchableSession(account: "member-42")
        let session: any OutboxSession = row.signOutBefore >= 0 ? CountedSession(signedOutFrom: CountedSession.beforeRequest(row.signOutBefore)) : switchable
        let requests = Mutex(0)
        let answers = row.answers
        let transport = ScriptedTransport(otherwise: .handle { request in
            let index = requests.withLock { count in
                defer { count += 1 }
                return count
            }
            if index == row.signOutDuring { switchable.signOut() }
            guard index < answers.count, let answer = answers[index] else { throw URLError(.notConnectedToInternet) }
            return answer
        })
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open {
            $0.session = session
            Self.configured(&$0)
        }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == row.stop)
        #expect(report.reachedEnd == (row.stop == nil))
        #expect(report.pagesApplied == row.pagesApplied)
        #expect(try outbox.feedCursor(business: Self.business)?.text == row.cursor)
        let kinds = try outbox.events(from: .zero, limit: .max).map(\.kind)
        #expect(kinds.contains(.pageRefused) == row.journalsRefusal)
        #expect(try outbox.engineState().isPaused == row.pauses)
        #expect(try outbox.metrics().pagesRefused == (row.journalsRefusal ? 1 : 0))
        if row.signOutBefore >= 0 || row.signOutDuring >= 0 {
            #expect(kinds.contains(.sessionChanged), "the sign-out is recorded")
            #expect(requests.withLock { $0 } == row.answers.count, "nothing asked once signed out")
        }
        if case .backingOff(let until)? = row.stop {
            #expect(try outbox.feedState(business: Self.business)?.nextPullAt == until)
        }
    }

    @Test func eachFeedsPullIsLoggedByItsCodeNeverTheServersWords() async throws {
        let handler = InMemoryLogHandler()
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(404, #"{"code":"not_found","message":"secret detail"}"#)))
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open {
            $0.logger = OutboxLogger(label: "outbox", handler: handler)
            Self.configured(&$0)
        }
        defer { outbox.close() }
        _ = try await outbox.pull()
        let logged = try #require(handler.records.first { $0.message == "feed pulled" })
        #expect(logged.level == .info, "a pull that backs off is told at info")
        #expect(logged.metadata[EngineLog.Key.reason] == "status_404")
        #expect(logged.metadata[EngineLog.Key.nextAttemptAt] == EngineLog.moment(Self.t0.addingTimeInterval(2)))
        #expect(!handler.records.contains { $0.text.contains("secret detail") })
    }

    // MARK: The session

    @Test func a401PausesWritesAndPullsUntilTheSessionIsResumed() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let feed = ScriptedFeed(count: 1)
        transport.script(.respond(.json(401, #"{"code":"unauthorized"}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { Self.configured(&$0) }
        defer { outbox.close() }
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .unauthorized)
        let paused = try outbox.events(from: .zero, limit: .max).compactMap { event -> SessionPaused? in
            if case .sessionPaused(let paused) = event.body { return paused }
            return nil
        }
        #expect(paused == [SessionPaused(reason: "unauthorized", triggeredBy: nil)])
        // Paused: a write waits, and a pull asks nothing.
        let id = try await outbox.enqueue(productRequest())
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .unauthorized)
        #expect(transport.requests.count == 1)
        #expect(try outbox.operation(id)?.status == .queued)
        // The session refreshed: the write goes, then the feed is pulled.
        transport.setOtherwise(.handle { request in
            ScriptedFeed.isFeedRequest(request) ? feed.answer(request) : .json(201, #"{"id":"product-1"}"#)
        })
        try await outbox.resumeSession()
        await outbox.settle()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-1-0")
        #expect(transport.requests.dropFirst().map(\.method) == ["POST", "GET"], "the write before the pull")
    }

    // MARK: Backoff

    @Test func aFeedBackingOffIsNotAskedBeforeItsRetryAfterAndIsAfter() async throws {
        let feed = ScriptedFeed(count: 1)
        let transport = ScriptedTransport(otherwise: .handle { feed.answer($0) })
        transport.script(.respond(.json(429, "{}", headers: ["Retry-After": "600"])))
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { Self.configured(&$0) }
        defer { outbox.close() }
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .backingOff(until: Self.t0.addingTimeInterval(600)))
        // Past the retry policy's longest backoff (300 s): a feed still waits for the server's moment.
        #expect(outbox.nextWake == Self.t0.addingTimeInterval(600), "the timer follows the feed's backoff")
        journal.clock.advance(by: 599)
        await outbox.settle()
        // Not even pull() asks before the server's moment.
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .backingOff(until: Self.t0.addingTimeInterval(600)))
        #expect(transport.requests.count == 1)
        journal.clock.advance(by: 1)
        await outbox.settle()
        #expect(transport.requests.count == 2, "the timer pulled at the moment")
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-1-0")
        #expect(try outbox.feedState(business: Self.business)?.failures == 0)
    }

    @Test func aPullWithNoResponseBacksOffAndAWakeForTheNetworkAsksAtOnce() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { Self.configured(&$0) }
        defer { outbox.close() }
        #expect(try await outbox.pull().feed(Self.business)?.stoppedBy == .offline)
        let state = try #require(try outbox.feedState(business: Self.business))
        #expect(state.failures == 1 && state.nextPullAt == Self.t0.addingTimeInterval(2) && state.cursor == nil)
        let feed = ScriptedFeed(count: 2)
        transport.setOtherwise(.handle { feed.answer($0) })
        outbox.wake(.connectivityRegained)
        await outbox.settle()
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-2-0")
        #expect(feed.queries == ["limit=500"], "asked from the feed's start, the cursor untouched by the failure")
    }

    // MARK: Limits

    @Test func thePassStopsAtItsPageLimitAndTheNextPassGoesOn() async throws {
        let feed = ScriptedFeed(count: 5)
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { feed.answer($0) }))
        let outbox = try journal.open { Self.configured(&$0, PullConfiguration(pageSize: 1, businesses: [Self.business], maxPagesPerPass: 2)) }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.stoppedBy == .pageLimit && report.pagesApplied == 2)
        // The next pass goes on at once, on the worker: the clock never moves here, so only a
        // pass due now reaches the feed's end. (The cursor and `nextWake` right after the pull
        // are not asserted: that pass may already be under way, under load it often is.)
        await outbox.settle()
        #expect(try outbox.feedCursor(business: Self.business)?.text == "1-5-0", "the next passes went on without the clock moving")
        #expect(feed.queries == ["limit=1", "limit=1&cursor=1-1-0", "limit=1&cursor=1-2-0", "limit=1&cursor=1-3-0", "limit=1&cursor=1-4-0"])
    }

    @Test func thePageSizeIsClampedToTheServersPublishedLimit() async throws {
        let feed = ScriptedFeed(count: 5, maxLimit: 2)
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { feed.answer($0) }))
        let outbox = try journal.open { Self.configured(&$0) }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.reachedEnd && report.pagesApplied == 3 && report.changesApplied == 5)
        #expect(feed.queries == ["limit=500", "limit=2&cursor=1-2-0", "limit=2&cursor=1-4-0"])
        #expect(try outbox.feedState(business: Self.business)?.limits?.maxLimit == 2)
    }

    // MARK: Which feeds, which types

    @Test func theJournalsBusinessesArePulledBesidesTheConfiguredOnes() async throws {
        let asked = Mutex<[String]>([])
        let transport = ScriptedTransport(otherwise: .handle { request in
            guard ScriptedFeed.isFeedRequest(request) else { throw URLError(.notConnectedToInternet) }
            let business = request.headers[WireHeader.businessID] ?? ""
            asked.withLock { $0.append(business) }
            return ScriptedFeed(business: business, count: 0).answer(request)
        })
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { Self.configured(&$0, PullConfiguration(businesses: ["clinic-2"])) }
        defer { outbox.close() }
        // A record write of pharmacy-7 (its base is learnt from the server only).
        var request = productRequest()
        request.entityID = "product-1"
        _ = try await outbox.enqueue(request, changing: [.put(RecordKey(business: Self.business, type: "product", id: "product-1"), Data(#"{"id":"product-1"}"#.utf8))])
        let report = try await outbox.pull()
        #expect(report.feeds.map(\.business) == ["clinic-2", "pharmacy-7"])
        #expect(asked.withLock { $0 } == ["clinic-2", "pharmacy-7"])
        #expect(try outbox.feedStates().map(\.business) == ["clinic-2", "pharmacy-7"])
    }

    @Test func aTypeThePullDoesNotListIsPassedOverAndCounted() async throws {
        let changes = [FeedChange(type: "product", id: "p1", revision: 1, record: Data("{}".utf8)),
                       FeedChange(type: "invoice", id: "i1", revision: 1, record: Data("{}".utf8))]
        let page = FeedPage(business: Self.business, from: .start(of: 1), cursor: FeedPosition(epoch: 1, major: 2), hasMore: false, count: 2,
                            digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(TransportResponse(statusCode: 200, headers: [:], body: page.encoded())))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { Self.configured(&$0, PullConfiguration(types: ["product": PullConfiguration.PulledType()], businesses: [Self.business])) }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.reachedEnd && report.changesApplied == 1 && report.skipped == 1)
        #expect(try outbox.record(RecordKey(business: Self.business, type: "product", id: "p1")) != nil)
        #expect(try outbox.record(RecordKey(business: Self.business, type: "invoice", id: "i1")) == nil)
        #expect(try outbox.metrics().pulledChangesSkipped == 1)
    }

    @Test func aPulledRecordOverTheConfiguredPayloadLimitIsPassedOverAndCounted() async throws {
        let small = Data(#"{"price":1}"#.utf8)
        let large = Data(("{\"note\":\"" + String(repeating: "x", count: 2_000) + "\"}").utf8)
        let changes = [FeedChange(type: "product", id: "p1", revision: 1, record: small),
                       FeedChange(type: "product", id: "p2", revision: 1, record: large)]
        let page = FeedPage(business: Self.business, from: .start(of: 1), cursor: FeedPosition(epoch: 1, major: 2), hasMore: false, count: 2,
                            digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(TransportResponse(statusCode: 200, headers: [:], body: page.encoded())))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            Self.configured(&$0)
            $0.maxPayloadBytes = 1_024
        }
        defer { outbox.close() }
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.changesApplied == 1 && report.skipped == 1, "2,000 bytes is under 1 MiB but over the configured 1,024")
        #expect(try outbox.record(RecordKey(business: Self.business, type: "product", id: "p2")) == nil)
        let skipped = try outbox.events().compactMap { event -> [SkippedChange]? in
            if case .pageApplied(let applied) = event.body { return applied.skipped }
            return nil
        }.flatMap { $0 }
        #expect(skipped.map(\.id) == ["p2"] && skipped.first?.reason == .overLimit)
    }

    // MARK: What an app reads

    @Test func feedStateAndMetricsSayWhereTheFeedIsAndHowFarBehind() async throws {
        let feed = ScriptedFeed(count: 3)
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { feed.answer($0) }))
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { Self.configured(&$0, PullConfiguration(pageSize: 2, types: ["product": PullConfiguration.PulledType(freshnessSeconds: 900)],
                                                                               businesses: [Self.business])) }
        defer { outbox.close() }
        #expect(try outbox.feedState(business: Self.business) == Outbox.FeedState(business: Self.business, nextPullAt: Self.t0))
        #expect(try outbox.feedState(business: "elsewhere") == nil)
        _ = try await outbox.pull()
        journal.clock.advance(by: 60)
        let state = try #require(try outbox.feedState(business: Self.business))
        #expect(state.epoch == 1 && state.cursor == "1-3-0")
        #expect(state.lastPageAt == Self.t0 && state.caughtUpAt == Self.t0)
        #expect(state.lagSeconds == 60)
        #expect(state.nextPullAt == Self.t0.addingTimeInterval(900), "the freshness of the types pulled")
        #expect(state.limits?.maxLimit == 1_000 && state.failures == 0 && state.lastStop == nil)
        let metrics = try outbox.metrics()
        #expect(metrics.pulls == 1 && metrics.pagesApplied == 2 && metrics.pagesRefused == 0 && metrics.pulledChangesSkipped == 0)
        #expect(metrics.cursorLagSeconds == [Self.business: 60])
    }

    @Test func aFirstPullOfAnEmptyFeedKeepsThePositionItWasGiven() async throws {
        let feed = ScriptedFeed(count: 0)
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { feed.answer($0) }))
        journal.clock.set(to: Self.t0)
        let outbox = try journal.open { Self.configured(&$0) }
        defer { outbox.close() }
        _ = try await outbox.pull()
        let state = try #require(try outbox.feedState(business: Self.business))
        #expect(state.cursor == "1-0-0" && state.caughtUpAt == Self.t0, "\(state)")
        journal.clock.advance(by: 3_600)
        _ = try await outbox.pull()
        #expect(feed.queries.count == 2 && feed.queries[1].contains("cursor=1-0-0"), "the next pull asks from it: \(feed.queries)")
        #expect(try outbox.events().filter { $0.kind == .pageApplied }.count == 1, "only the first empty page is recorded")
    }

    @Test func afterARestartTheFeedsLastCatchUpIsReadFromTheJournal() async throws {
        let feed = ScriptedFeed(count: 1)
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { feed.answer($0) }))
        journal.clock.set(to: Self.t0)
        do {
            let outbox = try journal.open { Self.configured(&$0) }
            _ = try await outbox.pull()
            outbox.close()
        }
        journal.clock.advance(by: 30)
        let outbox = try journal.open()
        defer { outbox.close() }
        let state = try #require(try outbox.feedState(business: Self.business), "read from the journal without a pull configuration")
        #expect(state.cursor == "1-1-0" && state.caughtUpAt == Self.t0 && state.lagSeconds == 30 && state.nextPullAt == nil)
        #expect(try outbox.feedStates().map(\.business) == [Self.business])
    }

    // MARK: Configuration

    @Test func aPullWithoutAConfigurationThrowsAndAClosedOutboxThrowsClosed() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        await #expect(throws: OutboxError.invalidConfiguration(field: "pull", problem: "is nil: set OutboxConfiguration.pull to a PullConfiguration to pull")) {
            try await outbox.pull()
        }
        outbox.close()
        let configured = try TestJournal().open { Self.configured(&$0) }
        configured.close()
        await #expect(throws: OutboxError.closed) { try await configured.pull() }
    }

    struct BadSetting: Sendable, CustomTestStringConvertible {
        var field: String
        var configure: @Sendable (inout PullConfiguration) -> Void
        var testDescription: String { field }
    }

    static let badSettings: [BadSetting] = [
        BadSetting(field: "pull.pageSize") { $0.pageSize = 0 },
        BadSetting(field: "pull.pageSize") { $0.pageSize = PullConfiguration.maximumPageSize + 1 },
        BadSetting(field: "pull.maxPagesPerPass") { $0.maxPagesPerPass = 0 },
        BadSetting(field: "pull.changesEndpoint") { $0.changesEndpoint = "sync/changes" },
        BadSetting(field: "pull.changesEndpoint") { $0.changesEndpoint = "/sync/changes?since=0" },
        BadSetting(field: "pull.snapshotEndpoint") { $0.snapshotEndpoint = "//elsewhere/snapshot" },
        BadSetting(field: "pull.types[\"product\"].freshnessSeconds") { $0.types = ["product": PullConfiguration.PulledType(freshnessSeconds: -1)] },
        BadSetting(field: "pull.types[\"\"]") { $0.types = ["": PullConfiguration.PulledType()] },
        BadSetting(field: "pull.businesses[1]") { $0.businesses = ["pharmacy-7", ""] },
    ]

    @Test(arguments: badSettings)
    func aSettingOutOfRangeIsRefusedAtOpenNamingItsField(_ bad: BadSetting) throws {
        var pull = PullConfiguration()
        bad.configure(&pull)
        let journal = TestJournal()
        do {
            let outbox = try journal.open { $0.pull = pull }
            outbox.close()
            Issue.record("opened with \(bad.field) out of range")
        } catch OutboxError.invalidConfiguration(let field, let problem) {
            #expect(field == bad.field)
            #expect(!problem.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: journal.directory.path), "nothing opened")
    }
}
