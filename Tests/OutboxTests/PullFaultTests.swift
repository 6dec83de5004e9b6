import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxStorage
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// A pull and a resnapshot torn at every write they make: a failed put, delete or commit aborts
/// its transaction as a kill inside it would, so each position shows what a crash there leaves.
/// Whatever the position, the member sees the old base or the new one, never a mix; `verify` finds
/// nothing; and the next pull finishes the job with every pending write kept.
@Suite("A pull torn at every write", .timeLimit(.minutes(10)))
struct PullFaultTests {
    static let business = PullApplyTests.business
    static let restored = FeedPosition(epoch: 2, major: 4)

    /// The server after a restore: a snapshot of p1 (revision 5) then p3, and a feed with one
    /// change past the snapshot (p1 at revision 6).
    static func server(_ request: TransportRequest) throws -> TransportResponse {
        let json = ["Content-Type": "application/json"]
        if request.endpoint.hasPrefix(SnapshotPage.path) {
            let first = !request.endpoint.contains("after_id=")
            let records = first ? [PullApplyTests.put("p1", 5, 12)] : request.endpoint.hasSuffix("after_id=p1") ? [PullApplyTests.put("p3", 1, 30)] : []
            let page = SnapshotPage(business: business, position: first ? restored : FeedPosition(epoch: 2, major: 5), hasMore: first,
                                    count: records.count, digest: FeedDigest.page(records.map(\.digestInput)), records: records)
            return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
        }
        if request.endpoint.hasPrefix(FeedPage.path) {
            guard request.endpoint.contains("cursor=2-") else {
                return TransportResponse(statusCode: 409, headers: json, body: Data(#"{"code":"resnapshot_required","reason":"foreign_epoch","message":"restored","epoch":2}"#.utf8))
            }
            let from = request.endpoint.contains("cursor=2-4-0") ? restored : FeedPosition(epoch: 2, major: 7)
            let changes = from == restored ? [PullApplyTests.put("p1", 6, 13)] : []
            let page = FeedPage(business: business, from: from, cursor: FeedPosition(epoch: 2, major: 7), hasMore: false,
                                count: changes.count, digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
            return TransportResponse(statusCode: 200, headers: json, body: page.encoded())
        }
        throw URLError(.notConnectedToInternet)
    }

    /// The member's journal before the restore: p1 and p2 pulled, an edit of each and a create
    /// waiting for the network.
    static func prepare(_ outbox: Outbox) async throws -> (editOfP1: OperationID, editOfP2: OperationID, create: OperationID) {
        _ = try await outbox.apply(PullApplyTests.page(from: .start(of: 1), to: PullApplyTests.at(9),
                                                       [PullApplyTests.put("p1", 3, 10), PullApplyTests.put("p2", 4, 20)]),
                                   requested: nil, limit: 500)
        let editOfP1 = try await outbox.enqueue(PullApplyTests().edit("p1", 1), changing: [.put(PullApplyTests.key("p1"), PullApplyTests.value(11))])
        let editOfP2 = try await outbox.enqueue(PullApplyTests().edit("p2", 2), changing: [.put(PullApplyTests.key("p2"), PullApplyTests.value(21))])
        let create = try await outbox.enqueue(productRequest(3, entityID: nil), changing: [.put(PullApplyTests.key("p9"), PullApplyTests.value(90))])
        await outbox.drain()
        return (editOfP1, editOfP2, create)
    }

    /// The pull the app runs: the feed, refused with a 409, then the resnapshot, then the feed
    /// from the snapshot's position.
    static func pull(_ outbox: Outbox) async throws {
        _ = try await outbox.pull()
    }

    @Test(arguments: [LMDBCall.put, .delete, .commit])
    func aPullTornAtAnyWriteLeavesTheOldBaseOrTheNewAndFinishesNextTime(_ call: LMDBCall) async throws {
        var n = 1
        while try await run(failing: call, at: n) { n += 1 }
        #expect(n > 1, "the pull reached \(call) at least once")
        print("pull-faults: \(call): \(n - 1) positions torn, each reopened, verified and pulled to the end")
    }

    /// - Returns: whether the pull reached the `n`th `call` (so the next position needs a run).
    private func run(failing call: LMDBCall, at n: Int) async throws -> Bool {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .handle { try Self.server($0) }))
        let armed = Atomic<Bool>(false)
        let calls = Atomic<Int>(0)
        let fired = Atomic<Bool>(false)
        let hook = LMDBFaultHook { made in
            guard armed.load(ordering: .relaxed), made == call, calls.add(1, ordering: .relaxed).newValue == n else { return nil }
            fired.store(true, ordering: .relaxed)
            return .io
        }
        var configuration = journal.configuration()
        configuration.pull = PullConfiguration(businesses: [Self.business])
        let first = try Outbox(directory: journal.directory, transport: journal.transport, configuration: configuration, faultHook: hook)
        let writes = try await Self.prepare(first)
        armed.store(true, ordering: .relaxed)
        try? await Self.pull(first)
        armed.store(false, ordering: .relaxed)
        first.close()
        let reached = fired.load(ordering: .relaxed)

        // What the tear left: the old base or the new, whole.
        let outbox = try journal.open { $0.pull = PullConfiguration(businesses: [Self.business]) }
        defer { outbox.close() }
        #expect(try outbox.verify().isClean, "\(call) \(n)")
        let p1 = try outbox.record(PullApplyTests.key("p1"))?.server?.revision
        let p3 = try outbox.record(PullApplyTests.key("p3"))
        #expect([3, 5, 6].contains(p1 ?? 0), "\(call) \(n): p1 at \(String(describing: p1))")
        #expect((p1 == 3) == (p3 == nil), "\(call) \(n): the old base or the new, never a mix")
        #expect(try outbox.record(PullApplyTests.key("p9"))?.value == PullApplyTests.value(90), "\(call) \(n): a pending create never vanishes")

        // The next pull finishes the job.
        try await Self.pull(outbox)
        #expect(try outbox.feedCursor(business: Self.business) == FeedPosition(epoch: 2, major: 7), "\(call) \(n)")
        let after = try #require(try outbox.record(PullApplyTests.key("p1")))
        #expect(after.server?.revision == 6 && after.value == PullApplyTests.value(11), "\(call) \(n)")
        #expect(try outbox.record(PullApplyTests.key("p3"))?.value == PullApplyTests.value(30), "\(call) \(n)")
        let p2edit = try outbox.operation(writes.editOfP2)
        let p2record = try outbox.events(from: .zero, limit: .max).filter { $0.operationID == writes.editOfP2 || $0.operationID == nil }.map { "\($0.seq):\($0.kind)" }
        #expect(p2edit?.lastErrorCode == "deleted_on_server", "\(call) \(n): \(String(describing: p2edit?.status)) \(String(describing: p2edit?.lastErrorCode)) \(String(describing: p2record))")
        #expect(try outbox.operation(writes.editOfP1)?.status == .queued && outbox.operation(writes.create)?.status == .queued, "\(call) \(n)")
        #expect(try outbox.verify().isClean, "\(call) \(n)")
        return reached
    }
}
