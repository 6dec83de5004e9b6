import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxCrypto
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A business's base fetched again whole: staged beside the base the member sees, swapped in by
/// one commit, with every pending write and overlay kept.
@Suite("Fetching the base again whole", .timeLimit(.minutes(5)))
struct ResnapshotTests {
    static let business = PullApplyTests.business
    static func key(_ id: String) -> RecordKey { PullApplyTests.key(id) }
    static func value(_ price: Double) -> Data { PullApplyTests.value(price) }

    static func snapshot(at position: FeedPosition, more: Bool, _ records: [FeedChange]) -> TransportResponse {
        let page = SnapshotPage(business: business, position: position, hasMore: more, count: records.count,
                                digest: FeedDigest.page(records.map(\.digestInput)), records: records)
        return TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: page.encoded())
    }

    /// A journal whose feed stands at 1-9-0 with p1 (revision 3) and p2 (revision 4) in its base.
    static func journal(_ transport: ScriptedTransport) async throws -> (TestJournal, Outbox) {
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(9),
                                                       [PullApplyTests.put("p1", 3, 10), PullApplyTests.put("p2", 4, 20)]),
                                   requested: nil, limit: 500)
        return (journal, outbox)
    }

    func edit(_ id: String, _ number: Int) -> OutboxRequest { PullApplyTests().edit(id, number) }

    /// ``journal(_:)`` with a resnapshot into epoch 2 half staged: its first page (p1 at revision
    /// 5, position 2-4-0) staged, then the connection lost.
    static func halfStaged(_ transport: ScriptedTransport) async throws -> Outbox {
        let (_, outbox) = try await journal(transport)
        transport.script(.respond(snapshot(at: FeedPosition(epoch: 2, major: 4), more: true, [PullApplyTests.put("p1", 5, 12)])),
                         .fail(.connectionLost))
        _ = try await outbox.resnapshot(business: business, reason: "foreign_epoch")
        return outbox
    }

    @Test func theSnapshotIsSwappedInWholeAndNoPendingWriteIsLost() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let (_, outbox) = try await Self.journal(transport)
        defer { outbox.close() }
        let editOfP1 = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(11))])
        let editOfP2 = try await outbox.enqueue(edit("p2", 2), changing: [.put(Self.key("p2"), Self.value(21))])
        let create = try await outbox.enqueue(productRequest(3, entityID: nil), changing: [.put(Self.key("p9"), Self.value(90))])
        // Offline: each waits, queued, for a retry time the manual clock never reaches.
        await outbox.drain()
        // The server was restored: epoch 2 holds p1 at revision 5 and p3; p2 is gone.
        let restored = FeedPosition(epoch: 2, major: 4)
        transport.script(.respond(Self.snapshot(at: restored, more: true, [PullApplyTests.put("p1", 5, 12)])),
                         .fail(.connectionLost))
        let first = try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch")
        #expect(first.pagesStaged == 1 && !first.swapped && first.stoppedBy == .offline)
        // Staged, not shown: the member still sees the old base, the feed still its old cursor.
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 3)
        #expect(try outbox.record(Self.key("p2"))?.value == Self.value(21))
        #expect(try outbox.feedCursor(business: Self.business) == PullApplyTests.at(9))
        #expect(try outbox.verify().isClean)

        // Resumed after the last staged record, from the same first position.
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 6), more: false, [PullApplyTests.put("p3", 1, 30)])))
        let second = try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch")
        #expect(second.swapped && second.pagesStaged == 1 && second.vanished == 1)
        #expect(transport.requests.last?.endpoint == "/sync/snapshot?limit=500&after_type=product&after_id=p1")
        #expect(try outbox.feedCursor(business: Self.business) == restored, "the feed goes on from the first page's position")

        let p1 = try #require(try outbox.record(Self.key("p1")))
        #expect(p1.server?.revision == 5 && p1.value == Self.value(11) && p1.sync.pending.map(\.operation) == [editOfP1],
                "the new base beneath, the member's edit over it")
        #expect(try outbox.record(Self.key("p3"))?.value == Self.value(30))
        #expect(try outbox.record(Self.key("p9"))?.value == Self.value(90), "a pending create never vanishes")
        #expect(try outbox.operation(create)?.status == .queued)
        let p2 = try #require(try outbox.record(Self.key("p2")))
        #expect(try outbox.operation(editOfP2)?.status == .conflicted && outbox.operation(editOfP2)?.lastErrorCode == "deleted_on_server",
                "a record gone from the server asks the member about the edit still waiting")
        #expect(p2.value == Self.value(21) && p2.server?.value == nil, "its value kept on screen")
        #expect(try outbox.ledger().entries.count == 3, "a resnapshot enqueues nothing")
        #expect(try outbox.verify().isClean, "the new base has its trail, the old one is swept")
        let kinds = try outbox.events(from: .zero, limit: .max).map(\.kind)
        #expect(kinds.filter { [.resnapshotStarted, .snapshotPageStaged, .resnapshotFinished].contains($0) }
                == [.resnapshotStarted, .snapshotPageStaged, .snapshotPageStaged, .resnapshotFinished])
        let history = try outbox.recordHistory(Self.key("p1"), showingValues: false)
        #expect(history.entries.contains { $0.kind == .snapshotPageStaged && $0.revision == 5 })
    }

    /// A conflict's server value stays beside the member's change when a restored server's base
    /// holds the record at a lower revision than the 412 named: what the conflict kept is shown,
    /// opened with the key when the journal is sealed.
    @Test(arguments: [false, true])
    func aConflictKeepsTheServersValueWhenANewEpochsBaseIsBehindIt(sealed: Bool) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { if sealed { $0.encryptionKey = SealingKey.random() } }
        defer { outbox.close() }
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(9), [PullApplyTests.put("p1", 3, 10)]),
                                   requested: nil, limit: 500)
        transport.script(.respond(.json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"5","current":{"price":14}}"#)))
        let id = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(11))])
        await outbox.drain()
        let server = Data(#"{"price":14}"#.utf8)
        #expect(try outbox.record(Self.key("p1"))?.sync.conflict == LocalRecord.Sync.Conflict(operation: id, serverRevision: "5", serverValue: server))
        // The server was restored: epoch 2 holds p1 at revision 1.
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 2), more: false, [PullApplyTests.put("p1", 1, 9)])))
        #expect(try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch").swapped)
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.server?.revision == 1 && record.value == Self.value(11))
        #expect(record.sync.conflict == LocalRecord.Sync.Conflict(operation: id, serverRevision: "5", serverValue: server))
    }

    /// A first pull over a base answers built (seed 1000449 of the simulation): a 412 put p1 at
    /// revision 3 in the base, then the server was restored from a backup holding p1 deleted at
    /// revision 2 (epoch 2) before the phone ever pulled, so the snapshot does not hold p1. Of
    /// which epoch the old base is the phone cannot tell: the swap deletes the vanished record at
    /// revision 0, so the new epoch's re-creation of p1 at revision 3 is newer and reaches the
    /// base. At the old revision 3 it was passed over, and the base kept a tombstone the server
    /// does not hold.
    @Test func aFirstPullDeletesAVanishedRecordAtRevisionZero() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        transport.script(.respond(.json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"3","current":{"price":14}}"#)))
        let id = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(11))])
        await outbox.drain()
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 3, "the 412's record, in a base no pull made")
        #expect(try outbox.feedCursor(business: Self.business) == nil)
        let start = FeedPosition(epoch: 2, major: 4)
        transport.script(.respond(Self.snapshot(at: start, more: false, [PullApplyTests.put("p2", 1, 20)])))
        let swap = try await outbox.resnapshot(business: Self.business, reason: "first_pull")
        #expect(swap.swapped && swap.vanished == 1)
        let vanished = try #require(try outbox.record(Self.key("p1"))?.server)
        #expect(vanished.value == nil && vanished.revision == 0, "\(vanished)")
        #expect(try outbox.operation(id)?.status == .conflicted)
        // The new epoch creates p1 again, at its own revision 3.
        _ = try await outbox.apply(PullApplyTests.page(from: start, to: FeedPosition(epoch: 2, major: 5), [PullApplyTests.put("p1", 3, 15)]),
                                   requested: start, limit: 500)
        let base = try #require(try outbox.record(Self.key("p1"))?.server)
        #expect(base.revision == 3 && base.value == Self.value(15), "\(base)")
        let report = try outbox.verify()
        #expect(report.isClean, "\(report.findings)")
    }

    /// At a first pull, a vanished record is deleted at its old revision only when the answer that
    /// brought its base named a feed position of the snapshot's epoch; of an older epoch, or with
    /// no position, at revision 0.
    @Test(arguments: [
        (visibleAt: "2-3-0" as String?, revision: 2 as UInt64),
        (visibleAt: "1-7-0", revision: 0),
        (visibleAt: nil, revision: 0),
    ])
    func aFirstPullKeepsAVanishedRecordsRevisionOnlyOfTheSnapshotsEpoch(visibleAt: String?, revision: UInt64) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        var headers = ["Content-Type": "application/json"]
        headers[WireHeader.visibleAt] = visibleAt
        transport.script(.respond(TransportResponse(statusCode: 200, headers: headers,
                                                    body: Data(#"{"revision":2,"record":{"name":"Antiseptic","price":12}}"#.utf8))))
        let first = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(12))])
        await outbox.drain()
        #expect(try outbox.operation(first)?.status == .synced)
        let waiting = try await outbox.enqueue(edit("p1", 2), changing: [.put(Self.key("p1"), Self.value(13))])
        await outbox.drain()
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 4), more: false, [PullApplyTests.put("p2", 1, 20)])))
        let swap = try await outbox.resnapshot(business: Self.business, reason: "first_pull")
        #expect(swap.swapped && swap.vanished == 1)
        let vanished = try #require(try outbox.record(Self.key("p1"))?.server)
        #expect(vanished.value == nil && vanished.revision == revision, "\(vanished)")
        #expect(try outbox.operation(waiting)?.lastErrorCode == "deleted_on_server")
        let report = try outbox.verify()
        #expect(report.isClean, "\(report.findings)")
    }

    @Test func anAnswerThatLandsWhileStagingGoesToBothBases() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let outbox = try await Self.halfStaged(transport)
        defer { outbox.close() }
        // The member's edit is answered with revision 9 while the snapshot is half staged.
        transport.script(.respond(TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"],
                                                    body: Data(#"{"revision":9,"record":{"name":"Antiseptic","price":13}}"#.utf8))))
        _ = try await outbox.enqueue(edit("p1", 1), changing: [.put(Self.key("p1"), Self.value(13))])
        await outbox.drain()
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 9)
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 5), more: false, [PullApplyTests.put("p2", 4, 20)])))
        let report = try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch")
        #expect(report.swapped)
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 9, "the swap never takes a record back behind an answer")
        #expect(try outbox.verify().isClean)
    }

    /// An answer that names a feed position at or before where the snapshot began is older than
    /// every page: the snapshot holds the record's state past it (here, deleted before the
    /// snapshot began), so it is not staged, and the swap leaves the record out.
    /// Past that position, or with no position, it is staged as above.
    @Test(arguments: [
        (visibleAt: "2-3-0" as String?, kept: false),
        (visibleAt: "1-20-0", kept: false),
        (visibleAt: "2-5-0", kept: true),
        (visibleAt: nil, kept: true),
    ])
    func anAnswerOlderThanTheSnapshotIsNotStaged(visibleAt: String?, kept: Bool) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let outbox = try await Self.halfStaged(transport)
        defer { outbox.close() }
        // A create answered late while the snapshot is half staged (another device deleted the
        // product before the snapshot began, when the answer names a position before 2-4-0).
        var headers = ["Content-Type": "application/json"]
        headers[WireHeader.visibleAt] = visibleAt
        transport.script(.respond(TransportResponse(statusCode: 201, headers: headers,
                                                    body: Data(#"{"revision":1,"record":{"name":"Gauze","price":3}}"#.utf8))))
        let create = try await outbox.enqueue(productRequest(3, entityID: nil), changing: [.put(Self.key("p9"), Self.value(3))])
        await outbox.drain()
        #expect(try outbox.operation(create)?.status == .synced)
        #expect(try outbox.record(Self.key("p9"))?.server?.revision == 1, "the base the member sees has the answer")
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 6), more: false, [PullApplyTests.put("p2", 4, 20)])))
        let swap = try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch")
        // The create is synced and read from its answer: no change of the member's waits on p9,
        // so nothing vanishes under a write; the record is as the snapshot holds it.
        #expect(swap.swapped && swap.vanished == 0)
        let record = try outbox.record(Self.key("p9"))
        #expect((record?.server?.value != nil) == kept && (record?.value != nil) == kept, "\(String(describing: record))")
        let report = try outbox.verify()
        #expect(report.isClean, "\(report.findings)")
    }

    @Test func aStagingTheServerChangedEpochsUnderIsAbandonedAndStartedOver() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let (_, outbox) = try await Self.journal(transport)
        defer { outbox.close() }
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 4), more: true, [PullApplyTests.put("p1", 5, 12)])),
                         .respond(Self.snapshot(at: FeedPosition(epoch: 3, major: 1), more: false, [PullApplyTests.put("p2", 1, 22)])),
                         .respond(Self.snapshot(at: FeedPosition(epoch: 3, major: 1), more: false, [PullApplyTests.put("p2", 1, 22)])))
        let report = try await outbox.resnapshot(business: Self.business, reason: "foreign_epoch")
        #expect(report.abandoned == 1 && report.swapped)
        #expect(try outbox.record(Self.key("p1")) == nil, "nothing of the abandoned staging shows")
        #expect(try outbox.record(Self.key("p2"))?.server?.revision == 1, "a new epoch's base may go back")
        #expect(try outbox.feedCursor(business: Self.business) == FeedPosition(epoch: 3, major: 1))
        #expect(try outbox.events(from: .zero, limit: .max).contains { $0.kind == .resnapshotAbandoned })
        #expect(try outbox.verify().isClean)
    }

    @Test func aPageOutOfOrderIsRefusedAndNothingOfItStaged() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let (_, outbox) = try await Self.journal(transport)
        defer { outbox.close() }
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 4), more: false,
                                                [PullApplyTests.put("p2", 5, 12), PullApplyTests.put("p1", 5, 12)])))
        let report = try await outbox.resnapshot(business: Self.business, reason: "expired")
        #expect(report.stoppedBy == .refused(.outOfOrder(type: "product", id: "p1")) && report.pagesStaged == 0)
        #expect(try outbox.events(from: .zero, limit: .max).contains { $0.kind == .pageRefused })
        #expect(try outbox.feedCursor(business: Self.business) == PullApplyTests.at(9))
    }

    @Test func aPageOfTheFeedWaitsWhileAResnapshotStages() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let (_, outbox) = try await Self.journal(transport)
        defer { outbox.close() }
        transport.script(.respond(Self.snapshot(at: FeedPosition(epoch: 2, major: 4), more: true, [PullApplyTests.put("p1", 5, 12)])),
                         .fail(.connectionLost))
        _ = try await outbox.resnapshot(business: Self.business, reason: "expired")
        await #expect(throws: OutboxError.self) {
            try await outbox.apply(PullApplyTests.page(from: PullApplyTests.at(9), to: PullApplyTests.at(10), [PullApplyTests.put("p1", 4, 1)]),
                                   requested: PullApplyTests.at(9), limit: 500)
        }
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 3)
    }

    /// A server whose feed stands at 1-9-0 with nothing new, and whose snapshot of products holds
    /// p1 at revision 4 (of any other type, nothing); each endpoint asked is kept in `asked`.
    static func typeSnapshotServer() -> (ScriptedTransport, EndpointsAsked) {
        let asked = EndpointsAsked()
        let transport = ScriptedTransport(otherwise: .handle { request in
            asked.list.withLock { $0.append(request.endpoint) }
            let json = ["Content-Type": "application/json"]
            if request.endpoint.hasPrefix(SnapshotPage.path) {
                let records = request.endpoint.contains("type=product") ? [PullApplyTests.put("p1", 4, 15)] : []
                let page = SnapshotPage(business: business, position: PullApplyTests.at(9), hasMore: false, count: records.count,
                                        digest: FeedDigest.page(records.map(\.digestInput)), records: records)
                return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
            }
            let page = PullApplyTests.page(from: PullApplyTests.at(9), to: PullApplyTests.at(9), [])
            return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
        })
        return (transport, asked)
    }

    /// The endpoints a test server was asked, in order.
    final class EndpointsAsked: Sendable {
        let list = Mutex<[String]>([])
        var all: [String] { list.withLock { $0 } }
    }

    @Test func aTypeWhoseBaseWasDroppedIsFetchedAgainByTheNextPull() async throws {
        let employee = FeedChange(type: "employee", id: "e1", revision: 3, record: Data(#"{"name":"Ngozi"}"#.utf8))
        let (transport, asked) = Self.typeSnapshotServer()
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.pull = PullConfiguration(businesses: [Self.business], summaryIntervalSeconds: nil) }
        defer { outbox.close() }
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(9), [PullApplyTests.put("p1", 3, 10), employee]),
                                   requested: nil, limit: 500)
        // An app upgrade changed products without an adapter: their base is dropped.
        try await outbox.dropRecordBase(business: Self.business, type: "product")
        #expect(try outbox.record(Self.key("p1")) == nil)
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.resnapshots == 1 && report.reachedEnd)
        #expect(asked.all.contains { $0.hasPrefix(SnapshotPage.path) && $0.contains("type=product") })
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 4, "fetched again, not left behind the cursor")
        #expect(try outbox.record(RecordKey(business: Self.business, type: "employee", id: "e1"))?.server?.revision == 3)
        #expect(try outbox.feedCursor(business: Self.business) == PullApplyTests.at(9))
        #expect(try outbox.verify().isClean)
        // Once: the next pull asks no snapshot.
        let before = asked.all.count
        _ = try await outbox.pull()
        #expect(asked.all.dropFirst(before).allSatisfy { !$0.hasPrefix(SnapshotPage.path) })
    }

    /// The cursor's scope includes each pulled type's schema version: an upgrade that changes a
    /// type with no adapter for its stored values fetches that type again whole at the first pull,
    /// never a mix of versions; an upgrade with an adapter reads the stored values through it.
    @Test func aTypeWhoseSchemaChangedWithoutAnAdapterIsFetchedAgainWhole() async throws {
        let (transport, asked) = Self.typeSnapshotServer()
        let journal = TestJournal(transport: transport)
        func open(_ product: OutboxConfiguration.RecordTypePolicy) throws -> Outbox {
            try journal.open {
                $0.pull = PullConfiguration(businesses: [Self.business], summaryIntervalSeconds: nil)
                $0.recordTypes = ["product": product]
            }
        }
        var outbox = try open(OutboxConfiguration.RecordTypePolicy(schemaVersion: 1))
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(9), [PullApplyTests.put("p1", 3, 10)]),
                                   requested: nil, limit: 500)
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 3)
        outbox.close()
        // The app's next version changed products, with no adapter for the stored values.
        outbox = try open(OutboxConfiguration.RecordTypePolicy(schemaVersion: 2))
        let report = try #require(try await outbox.pull().feed(Self.business))
        #expect(report.resnapshots == 1 && report.reachedEnd)
        #expect(asked.all.contains { $0.hasPrefix(SnapshotPage.path) && $0.contains("type=product") }, "fetched again at the first pull")
        let dropped = try outbox.events(from: .zero, limit: .max).compactMap { event -> RecordBaseDropped? in
            if case .recordBaseDropped(let dropped) = event.body { dropped } else { nil }
        }
        #expect(dropped.map(\.schemaVersion) == [2] && dropped.map(\.type) == ["product"], "recorded, with the version")
        let record = try #require(try outbox.record(Self.key("p1")))
        #expect(record.server?.revision == 4 && record.schemaVersion == 2, "the base holds the new version alone")
        #expect(try outbox.verify().isClean)
        outbox.close()
        // A later version with an adapter: the stored values are read through it, nothing fetched.
        let before = asked.all.count
        outbox = try open(OutboxConfiguration.RecordTypePolicy(schemaVersion: 3, upgrade: { value, _ in value }))
        defer { outbox.close() }
        _ = try await outbox.pull()
        #expect(asked.all.dropFirst(before).allSatisfy { !$0.hasPrefix(SnapshotPage.path) }, "no snapshot asked")
        #expect(try outbox.record(Self.key("p1"))?.server?.revision == 4)
    }
}
