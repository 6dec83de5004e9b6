import Foundation
import TestHarness
import IdempotencyClaims
import OutboxCrypto
import OutboxTestServer
import OutboxTestServerPostgres
import OutboxWire
import Testing

private let gauze = #"{"id":"p-1","name":"Gauze","price":12.5}"#

/// The storages whose feed numbers each business's changes `(epoch, n, 0)`, one writer at a
/// time: the same pages, position for position.
private let numberedStorages: [ServerStorageKind] = [.memory, .lmdb]

/// A server with product p-1 created (revision 1, the feed's first change, `1-1-0`).
private final class FeedRig: Sendable {
    let server: TestServer
    private let cleanUp: @Sendable () -> Void

    init(_ storage: ServerStorageKind = .memory, limits: FeedLimits = FeedHandling.defaultLimits) async throws {
        (server, cleanUp) = try await onThread { try storage.start(feedLimits: limits) }
        let created = try await exchange(server.port, request(key: "create-1", body: gauze))
        #expect(created.status == 201)
        #expect(created.header(WireHeader.visibleAt) == "1-1-0")
    }

    deinit {
        server.stop()
        cleanUp()
    }

    var port: UInt16 { server.port }

    /// `GET /sync/changes` with the query as given.
    func feed(_ query: String = "", business: String? = nil) async throws -> RawResponse {
        try await exchange(port, request("GET", FeedPage.path + (query.isEmpty ? "" : "?" + query),
                                         headers: business.map { ["X-Business-ID: \($0)"] } ?? []))
    }

    /// The page the query answers, checked to be one whose count and digest are its changes'.
    func page(_ query: String = "", business: String? = nil) async throws -> FeedPage {
        let response = try await feed(query, business: business)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(response.header("Content-Type") == "application/json")
        let page = try FeedPage.decoded(from: response.body)
        #expect(page.count == page.changes.count)
        #expect(page.digest == page.computedDigest, "the server's digest is the one the engine computes from the bytes")
        return page
    }

    func create(_ id: String, key: String) async throws -> RawResponse {
        try await exchange(port, request(key: key, body: #"{"id":"\#(id)"}"#))
    }
}

/// One kind of write and the change it must put in the feed after p-1's create.
struct FeedWrite: Sendable, CustomStringConvertible {
    var description: String
    var text: String
    var status: Int
    var change: FeedChange
    /// Whether the answer is one to a write of the client's (a change made elsewhere is not).
    var answersWithPosition = true

    static let all: [FeedWrite] = [
        FeedWrite(description: "a create", text: request(key: "w", body: #"{"id":"p-2", "name":"Lint"}"#), status: 201,
                  change: FeedChange(type: "product", id: "p-2", revision: 1, record: Data(#"{"id":"p-2", "name":"Lint","revision":1}"#.utf8))),
        FeedWrite(description: "a PUT", text: request("PUT", "/products/p-1", key: "w", body: #"{"id":"p-1","price":13}"#, headers: ifMatch(#""1""#)),
                  status: 200, change: FeedChange(type: "product", id: "p-1", revision: 2, record: Data(#"{"id":"p-1","price":13,"revision":2}"#.utf8))),
        FeedWrite(description: "a PATCH", text: request("PATCH", "/products/p-1", key: "w", body: #"{"price":14}"#), status: 200,
                  change: FeedChange(type: "product", id: "p-1", revision: 2,
                                     record: Data(#"{"id":"p-1","name":"Gauze","price":14,"revision":2}"#.utf8))),
        FeedWrite(description: "a DELETE", text: request("DELETE", "/products/p-1", key: "w", headers: ifMatch(#""1""#)), status: 200,
                  change: FeedChange(type: "product", id: "p-1", revision: 2, record: nil)),
        FeedWrite(description: "a stock movement", text: request("POST", "/stock-movements", key: "w",
                                                                      body: #"{"id":"m-1","product_id":"p-1","quantity":-2}"#),
                  status: 201, change: FeedChange(type: "stock_movement", id: "m-1", revision: 1,
                                                  record: Data(#"{"id":"m-1","product_id":"p-1","quantity":-2,"revision":1}"#.utf8))),
        FeedWrite(description: "a change made elsewhere", text: request("POST", "/_control/records/product/p-1", body: #"{"price":9}"#),
                  status: 200, change: FeedChange(type: "product", id: "p-1", revision: 2,
                                                  record: Data(#"{"id":"p-1","name":"Gauze","price":9,"revision":2}"#.utf8)),
                  answersWithPosition: false),
    ]
}

@Suite("The test server's change feed", .timeLimit(.minutes(10)))
struct TestServerFeedTests {
    @Test(arguments: numberedStorages, FeedWrite.all)
    func eachWriteIsOneChangeWithItsRevisionAndRecordOrTombstone(_ storage: ServerStorageKind, _ write: FeedWrite) async throws {
        let rig = try await FeedRig(storage)
        let answer = try await exchange(rig.port, write.text)
        #expect(answer.status == write.status)
        #expect(answer.header(WireHeader.visibleAt) == (write.answersWithPosition ? "1-2-0" : nil))
        let page = try await rig.page("cursor=1-1-0")
        #expect(page.changes == [write.change], "one row, the record's bytes as the answer shows them")
        #expect(page.from == FeedPosition(epoch: 1, major: 1))
        #expect(page.cursor == FeedPosition(epoch: 1, major: 2), "the position the answer named")
        #expect(!page.hasMore)
        let first = try await rig.page()
        #expect(first.changes.first == FeedChange(type: "product", id: "p-1", revision: 1, record: Data(#"{"id":"p-1","name":"Gauze","price":12.5,"revision":1}"#.utf8)))
        #expect(first.changes.count == 2 && first.from == .start(of: 1))
    }

    @Test(arguments: numberedStorages)
    func aRefusedOrParkedWriteAddsNoChange(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        let stale = try await exchange(rig.port, request("PATCH", "/products/p-1", key: "stale", body: #"{"price":1}"#, headers: ifMatch(#""7""#)))
        #expect(stale.status == 412)
        #expect(stale.header(WireHeader.visibleAt) == nil)
        rig.server.addFaults([Fault(.pendingApproval, endpoint: "/products")])
        let parked = try await exchange(rig.port, request(key: "parked", body: #"{"id":"p-3"}"#))
        #expect(parked.status == 202)
        #expect(parked.header(WireHeader.visibleAt) == nil)
        let page = try await rig.page("cursor=1-1-0")
        #expect(page.changes.isEmpty && page.cursor == FeedPosition(epoch: 1, major: 1))
    }

    @Test(arguments: numberedStorages)
    func aReplayCarriesTheSamePositionAndAddsNoChange(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        let first = try await rig.create("p-2", key: "create-2")
        let copy = try await rig.create("p-2", key: "create-2")
        #expect(first.header(WireHeader.visibleAt) == "1-2-0")
        #expect(copy.header("Idempotent-Replayed") == "true")
        #expect(copy.header(WireHeader.visibleAt) == "1-2-0", "stored with the claim")
        let page = try await rig.page()
        #expect(page.changes.map(\.id) == ["p-1", "p-2"])
    }

    @Test(arguments: numberedStorages)
    func batchAnswersCarryEachOperationsPositionAndTheirReplaysTheSame(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        func operation(_ id: String, _ method: String, _ endpoint: String, payload: String) -> BatchOperation {
            BatchOperation(operationID: id, idempotencyKey: id, businessID: "default", operationType: "product", method: method,
                           endpoint: endpoint, payloadVersion: 1, baseRevision: nil, payload: Data(payload.utf8))
        }
        let single = try await rig.create("p-9", key: "op-single")
        #expect(single.header(WireHeader.visibleAt) == "1-2-0")
        let operations = [
            operation("op-new", "POST", "/products", payload: #"{"id":"p-2"}"#),
            operation("op-edit", "PATCH", "/products/p-1", payload: #"{"price":13}"#),
            operation("op-single", "POST", "/products", payload: #"{"id":"p-9"}"#),
        ]
        let body = String(decoding: try BatchRequest(operations: operations).encoded(), as: UTF8.self)
        var answers: [[BatchResult]] = []
        for _ in 0..<2 {
            let response = try await exchange(rig.port, request("POST", BatchRequest.path, body: body))
            #expect(response.status == 200)
            answers.append(try JSONDecoder().decode(BatchResponse.self, from: response.body).results)
        }
        #expect(answers[0].map { $0.headers[WireHeader.visibleAt] } == ["1-3-0", "1-4-0", "1-2-0"],
                "each operation's own change; the single request's, replayed")
        #expect(answers[1].map { $0.headers[WireHeader.visibleAt] } == answers[0].map { $0.headers[WireHeader.visibleAt] })
        #expect(answers[1].map(\.outcome) == [.replayed, .replayed, .replayed])
        let page = try await rig.page()
        #expect(page.changes.map(\.id) == ["p-1", "p-9", "p-2", "p-1"])
        #expect(page.cursor == FeedPosition(epoch: 1, major: 4))
    }

    @Test(arguments: numberedStorages, [1, 2, 3, 7, 8, 50])
    func pagesOfALimitNeverSkipAChangeAndSayWhetherMoreFollow(_ storage: ServerStorageKind, _ limit: Int) async throws {
        let rig = try await FeedRig(storage)
        for number in 2...8 { #expect(try await rig.create("p-\(number)", key: "create-\(number)").status == 201) }
        var cursor: FeedPosition?
        var ids: [String] = []
        var pages = 0
        while true {
            let page = try await rig.page("limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? ""))
            pages += 1
            #expect(page.from == cursor ?? .start(of: 1))
            #expect(page.changes.count == min(limit, 8 - ids.count))
            ids += page.changes.map(\.id)
            #expect(page.cursor == FeedPosition(epoch: 1, major: UInt64(ids.count)), "the last change's position")
            #expect(page.hasMore == (ids.count < 8))
            cursor = page.cursor
            if !page.hasMore { break }
            #expect(pages < 20)
        }
        #expect(ids == (1...8).map { "p-\($0)" })
        #expect(pages == (8 + limit - 1) / limit)
        let end = try await rig.page("limit=\(limit)&cursor=1-8-0")
        #expect(end.changes.isEmpty && end.cursor == FeedPosition(epoch: 1, major: 8) && !end.hasMore)
    }

    @Test(arguments: numberedStorages)
    func aWriteMadeWhilePagingComesOnALaterPage(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        #expect(try await rig.create("p-2", key: "create-2").status == 201)
        let first = try await rig.page("limit=1")
        #expect(first.changes.map(\.id) == ["p-1"] && first.hasMore)
        #expect(try await exchange(rig.port, request("DELETE", "/products/p-1", key: "delete-1")).status == 200)
        let second = try await rig.page("limit=5&cursor=\(first.cursor)")
        #expect(second.changes.map(\.id) == ["p-2", "p-1"])
        #expect(second.changes.map(\.isDelete) == [false, true])
        #expect(!second.hasMore && second.cursor == FeedPosition(epoch: 1, major: 3))
    }

    @Test(arguments: numberedStorages)
    func theLimitIsClampedAndAPageKeepsUnderItsBytesUnlessItHoldsOneChange(_ storage: ServerStorageKind) async throws {
        let clamped = try await FeedRig(storage, limits: FeedLimits(maxLimit: 2, maxPageBytes: 1 << 20, tombstoneRetentionSeconds: 60))
        for number in 2...3 { _ = try await clamped.create("p-\(number)", key: "create-\(number)") }
        let page = try await clamped.page("limit=100")
        #expect(page.changes.count == 2 && page.hasMore)
        #expect(page.limits == FeedLimits(maxLimit: 2, maxPageBytes: 1 << 20, tombstoneRetentionSeconds: 60))
        #expect(try await clamped.page().changes.count == 2, "no limit: the most the server serves")

        let small = try await FeedRig(storage, limits: FeedLimits(maxLimit: 100, maxPageBytes: 1, tombstoneRetentionSeconds: 60))
        _ = try await small.create("p-2", key: "create-2")
        let one = try await small.page()
        #expect(one.changes.map(\.id) == ["p-1"] && one.hasMore && one.cursor == FeedPosition(epoch: 1, major: 1))
        let next = try await small.page("cursor=\(one.cursor)")
        #expect(next.changes.map(\.id) == ["p-2"] && !next.hasMore)
    }

    @Test(arguments: numberedStorages)
    func untilBoundsAPageAtItsPosition(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        for number in 2...4 { _ = try await rig.create("p-\(number)", key: "create-\(number)") }
        let page = try await rig.page("cursor=1-1-0&until=1-3-0")
        #expect(page.changes.map(\.id) == ["p-2", "p-3"])
        #expect(page.cursor == FeedPosition(epoch: 1, major: 3) && !page.hasMore, "it reached what it was asked for")
        let empty = try await rig.page("cursor=1-3-0&until=1-3-0")
        #expect(empty.changes.isEmpty && !empty.hasMore, "an empty page never says more follow")
        #expect(try await rig.page("cursor=1-3-0").changes.map(\.id) == ["p-4"])
    }

    @Test(arguments: numberedStorages)
    func eachBusinessHasItsOwnFeed(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        let other = try await exchange(rig.port, request(key: "create-1", body: #"{"id":"q-1"}"#, headers: ["X-Business-ID: pharmacy-7"]))
        #expect(other.header(WireHeader.visibleAt) == "1-1-0", "its business's first change")
        let page = try await rig.page(business: "pharmacy-7")
        #expect(page.business == "pharmacy-7" && page.changes.map(\.id) == ["q-1"])
        #expect(try await rig.page().changes.map(\.id) == ["p-1"])
    }

    enum Stale: String, CaseIterable, Sendable {
        case expired, unknown, foreignEpoch, ahead, noCursorAfterAPurge
    }

    @Test(arguments: numberedStorages, Stale.allCases)
    func aCursorTheFeedCannotServeIs409ResnapshotRequiredWithItsReason(_ storage: ServerStorageKind, _ stale: Stale) async throws {
        let rig = try await FeedRig(storage)
        for number in 2...3 { _ = try await rig.create("p-\(number)", key: "create-\(number)") }
        let query: String
        let reason: FeedResnapshot.Reason
        var epoch: UInt64 = 1
        switch stale {
        case .expired, .noCursorAfterAPurge:
            let purged = try await exchange(rig.port, request("POST", "/_control/feed/purge", body: #"{"through":"1-2-0"}"#))
            #expect(purged.status == 200)
            #expect(purged.json?["floor"] as? String == "1-2-0" && purged.json?["purged"] as? Int == 2)
            query = stale == .expired ? "cursor=1-1-0" : ""
            reason = .expired
            let served = try await rig.page("cursor=1-2-0")
            #expect(served.changes.map(\.id) == ["p-3"], "a cursor at the floor is served")
        case .unknown:
            query = "cursor=yesterday"
            reason = .unknown
        case .foreignEpoch:
            #expect(try await exchange(rig.port, request("POST", "/_control/reset")).status == 200)
            query = "cursor=1-1-0"
            reason = .foreignEpoch
            epoch = 2
        case .ahead:
            query = "cursor=1-4-0"
            reason = .ahead
        }
        let refused = try await rig.feed(query)
        #expect(refused.status == 409)
        let body = try FeedResnapshot.decoded(from: refused.body)
        #expect(body.reason == reason)
        #expect(body.epoch == epoch)
        #expect(!body.message.isEmpty)
    }

    @Test(arguments: numberedStorages)
    func aResetRaisesTheEpochAndTheFeedStartsAgain(_ storage: ServerStorageKind) async throws {
        let rig = try await FeedRig(storage)
        #expect(try await exchange(rig.port, request("POST", "/_control/reset")).status == 200)
        let created = try await rig.create("p-2", key: "create-2")
        #expect(created.header(WireHeader.visibleAt) == "2-1-0")
        let page = try await rig.page()
        #expect(page.from == .start(of: 2) && page.changes.map(\.id) == ["p-2"])
    }

    @Test(arguments: numberedStorages, ["limit=0", "limit=x", "limit=-1", "limit=", "cursor=1-1-0&cursor=1-1-0", "until=soon", "until=9-1-0", "cursor=1-1-0&until=1-0-0"])
    func aParameterThatIsNotOneIs400NamingIt(_ storage: ServerStorageKind, _ query: String) async throws {
        let rig = try await FeedRig(storage)
        let refused = try await rig.feed(query)
        #expect(refused.status == 400)
        #expect(refused.code == WireErrorCode.feedRequestInvalid)
    }

    @Test(arguments: numberedStorages, [#"{"through":"2-1-0"}"#, #"{"through":"1-9-0"}"#, #"{"through":"x"}"#, #"{}"#])
    func aPurgeOfAnotherEpochOrPastTheEndIsRefused(_ storage: ServerStorageKind, _ body: String) async throws {
        let rig = try await FeedRig(storage)
        let refused = try await exchange(rig.port, request("POST", "/_control/feed/purge", body: body))
        #expect(refused.status == 400)
        #expect(try await rig.page().changes.count == 1, "nothing forgotten")
    }

}

@Suite("The LMDB storage's change feed", .timeLimit(.minutes(10)))
struct LMDBFeedDurabilityTests {
    @Test func aRestartedServerServesTheSameFeedAndNumbersOnAfterItsLastChangeAndEpoch() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = TestServer.Configuration(storage: .lmdb(directory: directory.url))
        let first = try TestServer(configuration)
        #expect(try await exchange(first.port, request(key: "create-1", body: gauze)).header(WireHeader.visibleAt) == "1-1-0")
        #expect(try await exchange(first.port, request("POST", "/_control/reset")).status == 200)
        #expect(try await exchange(first.port, request(key: "create-2", body: #"{"id":"p-2"}"#)).header(WireHeader.visibleAt) == "2-1-0")
        let purged = try await exchange(first.port, request("POST", "/_control/feed/purge", body: #"{"through":"2-1-0"}"#))
        #expect(purged.json?["floor"] as? String == "2-1-0")
        first.stop()

        let second = try TestServer(configuration)
        defer { second.stop() }
        #expect(try await exchange(second.port, request(key: "create-3", body: #"{"id":"p-3"}"#)).header(WireHeader.visibleAt) == "2-2-0",
                "the epoch, the counter and the floor were kept")
        let page = try FeedPage.decoded(from: try await exchange(second.port, request("GET", FeedPage.path + "?cursor=2-1-0")).body)
        #expect(page.changes.map(\.id) == ["p-3"] && page.cursor == FeedPosition(epoch: 2, major: 2))
        #expect(try await exchange(second.port, request("GET", FeedPage.path + "?cursor=2-0-0")).status == 409, "below the kept floor")
    }
}

@Suite("The change feed's command-line options")
struct FeedCommandLineTests {
    func limits(_ arguments: [String]) throws -> FeedLimits {
        guard case .run(let configuration) = try ServerCommandLine.parse(arguments).get() else { throw CancellationError() }
        return configuration.feedLimits
    }

    @Test func theDefaultsServeAThousandChangesAndKeepTombstonesAsLongAsClaims() throws {
        #expect(try limits([]) == FeedLimits(maxLimit: 1_000, maxPageBytes: 4 << 20, tombstoneRetentionSeconds: 30 * 86_400))
        #expect(try limits(["--retention-days", "45"]).tombstoneRetentionSeconds == 45 * 86_400)
    }

    @Test func theOptionsSetThePageSizeAndTheTombstoneRetention() throws {
        let set = try limits(["--max-page-changes", "50", "--tombstone-retention-days=2", "--retention-days", "45"])
        #expect(set.maxLimit == 50)
        #expect(set.tombstoneRetentionSeconds == 2 * 86_400)
    }

    @Test(arguments: [["--max-page-changes", "0"], ["--max-page-changes", "100001"], ["--tombstone-retention-days", "0"],
                      ["--tombstone-retention-days", "nan"], ["--max-page-changes"]])
    func aValueOutOfItsRangeIsAUsageError(_ arguments: [String]) {
        guard case .failure(let error) = ServerCommandLine.parse(arguments) else {
            Issue.record("expected a usage error for \(arguments)")
            return
        }
        #expect(error.message.contains(arguments[0]))
    }
}

/// The head and the body of bytes read until the server closed, and the length the head promised.
private func cutResponse(_ bytes: [UInt8]) throws -> (head: String, body: [UInt8], promised: Int) {
    let end = try #require(bytes.indices.dropLast(3).first { bytes[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) })
    let head = String(decoding: bytes[..<end], as: UTF8.self)
    let line = try #require(head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") })
    let promised = try #require(Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)))
    return (head, Array(bytes[(end + 4)...]), promised)
}

@Suite("Faults on the change feed", .timeLimit(.minutes(10)))
struct TestServerFeedFaultTests {
    @Test(arguments: [(Fault.Kind.unavailable, 503), (.rateLimited, 429), (.unauthorized, 401), (.serverError, 500)])
    func aFaultNamingTheFeedIsAnsweredInsteadOfTheNextPage(_ kind: Fault.Kind, _ status: Int) async throws {
        let rig = try await FeedRig()
        rig.server.addFaults([Fault(kind, endpoint: FeedPage.path)])
        #expect(try await rig.feed().status == status)
        #expect(try await rig.page().changes.count == 1, "consumed: the next read is served")
    }

    @Test func aFaultThatNamesNoEndpointIsTheNextWritesNotAFeedRead() async throws {
        let rig = try await FeedRig()
        rig.server.addFaults([Fault(.unavailable)])
        #expect(try await rig.feed().status == 200)
        #expect(try await rig.create("p-2", key: "create-2").status == 503)
    }

    @Test func cutBodySendsTheHeadAndHalfThePageThenCloses() async throws {
        let rig = try await FeedRig()
        rig.server.addFaults([Fault(.cutBody, endpoint: FeedPage.path)])
        let bytes = try await exchangeUntilClosed(rig.port, request("GET", FeedPage.path))
        let (head, body, promised) = try cutResponse(bytes)
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(body.count == promised / 2, "half the body the head announced")
        #expect(throws: FeedPage.Invalid.self) { try FeedPage.decoded(from: Data(body)) }
        #expect(try await rig.page().changes.count == 1)
    }

    @Test func dropAfterCommitOnTheFeedClosesWithoutAnAnswer() async throws {
        let rig = try await FeedRig()
        rig.server.addFaults([Fault(.dropAfterCommit, endpoint: FeedPage.path)])
        #expect(try await exchangeUntilClosed(rig.port, request("GET", FeedPage.path)).isEmpty)
    }

    @Test func cutBodyOnAWriteCommitsItAndItsReplayIsWhole() async throws {
        let rig = try await FeedRig()
        rig.server.addFaults([Fault(.cutBody, endpoint: "/products")])
        let bytes = try await exchangeUntilClosed(rig.port, request(key: "create-2", body: #"{"id":"p-2"}"#))
        let (head, body, promised) = try cutResponse(bytes)
        #expect(head.hasPrefix("HTTP/1.1 201") && head.contains("Outbox-Visible-At: 1-2-0"))
        #expect(body.count < promised)
        let replay = try await rig.create("p-2", key: "create-2")
        #expect(replay.header("Idempotent-Replayed") == "true" && replay.header(WireHeader.visibleAt) == "1-2-0")
        #expect(try await rig.page().changes.map(\.id) == ["p-1", "p-2"])
    }
}

@Suite("The test server's snapshot and summary", .timeLimit(.minutes(10)))
struct TestServerSnapshotTests {
    /// p-1 to p-5 and e-1, then p-3 deleted and p-2 changed elsewhere: 8 changes.
    private func rig(_ storage: ServerStorageKind) async throws -> FeedRig {
        let rig = try await FeedRig(storage)
        for number in 2...5 { #expect(try await rig.create("p-\(number)", key: "create-\(number)").status == 201) }
        #expect(try await exchange(rig.port, request("POST", "/employees", key: "e", body: #"{"id":"e-1","name":"Ana"}"#)).status == 201)
        #expect(try await exchange(rig.port, request("DELETE", "/products/p-3", key: "d")).status == 200)
        _ = try rig.server.changeRecord(type: "product", id: "p-2", patch: Data(#"{"price":3}"#.utf8))
        return rig
    }

    private func snapshot(_ rig: FeedRig, _ query: String) async throws -> SnapshotPage {
        let response = try await exchange(rig.port, request("GET", SnapshotPage.path + "?" + query))
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let page = try SnapshotPage.decoded(from: response.body)
        #expect(page.count == page.records.count && page.digest == page.computedDigest)
        return page
    }

    @Test(arguments: numberedStorages, [1, 2, 5, 10])
    func pagesHoldEveryLiveRecordOnceInTypeThenIdOrderAtTheFence(_ storage: ServerStorageKind, _ limit: Int) async throws {
        let rig = try await rig(storage)
        var records: [FeedChange] = []
        var after = ""
        while true {
            let page = try await snapshot(rig, "limit=\(limit)" + after)
            #expect(page.position == FeedPosition(epoch: 1, major: 8), "the fence of the moment read")
            #expect(page.records.count <= limit)
            records += page.records
            guard page.hasMore, let last = page.records.last else { break }
            after = "&after_type=\(last.type)&after_id=\(last.id)"
            #expect(records.count < 10)
        }
        #expect(records.map { "\($0.type)/\($0.id)" } == ["employee/e-1", "product/p-1", "product/p-2", "product/p-4", "product/p-5"])
        #expect(records.allSatisfy { !$0.isDelete })
        let p2 = try #require(records.first { $0.id == "p-2" })
        #expect(p2.revision == 2 && p2.record == Data(#"{"id":"p-2","price":3,"revision":2}"#.utf8), "as the feed carries it")
    }

    @Test(arguments: numberedStorages)
    func aSnapshotOfOneType(_ storage: ServerStorageKind) async throws {
        let rig = try await rig(storage)
        let page = try await snapshot(rig, "type=employee")
        #expect(page.records.map(\.id) == ["e-1"] && !page.hasMore)
    }

    @Test(arguments: numberedStorages)
    func aSummaryCountsLiveRecordsAndDigestsTheirIdsAndRevisions(_ storage: ServerStorageKind) async throws {
        let rig = try await rig(storage)
        let response = try await exchange(rig.port, request("GET", FeedSummary.path + "?type=product"))
        #expect(response.status == 200)
        let summary = try FeedSummary.decoded(from: response.body)
        #expect(summary.business == "default" && summary.type == "product" && summary.position == FeedPosition(epoch: 1, major: 8))
        #expect(summary.count == 4)
        #expect(summary.digest == FeedDigest.summary([("p-1", 1), ("p-2", 2), ("p-4", 1), ("p-5", 1)].map { (id: $0.0, revision: UInt64($0.1)) }))
    }

    @Test(arguments: [
        "\(SnapshotPage.path)?after_type=product", "\(SnapshotPage.path)?after_id=p-1", "\(SnapshotPage.path)?type=",
        "\(SnapshotPage.path)?limit=0", "\(FeedSummary.path)", "\(FeedSummary.path)?type=",
    ])
    func aRequestThatIsNotOneIs400(_ target: String) async throws {
        let rig = try await FeedRig()
        let refused = try await exchange(rig.port, request("GET", target))
        #expect(refused.status == 400 && refused.code == WireErrorCode.feedRequestInvalid)
    }

}
