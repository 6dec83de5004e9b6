import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import OutboxWire
import Testing

/// The records' status-change table (`RecordRule`, Docs/records.md), row by row through the
/// engine: each status change a write can make, from the state that lets it happen, and what the
/// member's record is after it: the value shown, the base, the sync state.
@Suite("The records' status-change table, through the engine", .timeLimit(.minutes(5)))
struct RecordStatusTableTests {
    static let key = RecordTests.key
    static func value(_ price: Double) -> Data { RecordTests.value(price) }
    static func json(_ status: Int, _ body: String) -> ScriptedTransport.Step { .respond(.json(status, body)) }

    /// What the record says after the change.
    enum Sync: Equatable, CustomStringConvertible {
        case synced
        case pending(count: Int)
        case confirmed
        case conflict(serverRevision: String?)
        case rolledBack(code: String)
        case held
        /// The journal keeps nothing of the record.
        case none

        init(_ record: LocalRecord?) {
            guard let record else { self = .none; return }
            let sync = record.sync
            if let back = sync.rolledBack { self = .rolledBack(code: back.code) }
            else if let conflict = sync.conflict { self = .conflict(serverRevision: conflict.serverRevision) }
            else if !sync.held.isEmpty { self = .held }
            else if !sync.pending.isEmpty { self = .pending(count: sync.pending.count) }
            else if !sync.confirmed.isEmpty { self = .confirmed }
            else { self = .synced }
        }

        var description: String {
            switch self {
            case .synced: "synced"
            case .pending(let count): "pending (\(count))"
            case .confirmed: "confirmed"
            case .conflict(let revision): "conflict (server at \(revision ?? "-"))"
            case .rolledBack(let code): "rolled back (\(code))"
            case .held: "held"
            case .none: "no record"
            }
        }
    }

    /// One row: the status change, made on a fresh journal, and what the record must say.
    struct Row: Sendable, CustomTestStringConvertible {
        var change: String
        var script: [ScriptedTransport.Step] = []
        var configure: @Sendable (inout OutboxConfiguration) -> Void = { _ in }
        var make: @Sendable (Outbox) async throws -> Void
        /// The value the member sees (`nil`: none).
        var shows: Data?
        var baseRevision: UInt64?
        var sync: Sync
        var testDescription: String { change }
    }

    static let serversRecord = Data(#"{"name":"Antiseptic","price":14}"#.utf8)

    static let rows: [Row] = [
        Row(change: "success, the answer's record at a revision", script: [json(200, #"{"record":{"name":"Antiseptic","price":14},"revision":3}"#)],
            make: { outbox in try await enqueueAndDrain(outbox, 13.5) }, shows: serversRecord, baseRevision: 3, sync: .synced),
        Row(change: "success, a revision without a record", script: [json(200, #"{"revision":3}"#)],
            make: { outbox in try await enqueueAndDrain(outbox, 13.5) }, shows: value(13.5), baseRevision: 3, sync: .synced),
        Row(change: "success without a revision", script: [json(200, "{}")],
            make: { outbox in try await enqueueAndDrain(outbox, 13.5) }, shows: value(13.5), baseRevision: nil, sync: .confirmed),
        Row(change: "failed: the server refused it", script: [json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#)],
            make: { outbox in try await enqueueAndDrain(outbox, -1) }, shows: nil, baseRevision: nil, sync: .rolledBack(code: "validation_failed")),
        Row(change: "blocked: not allowed", script: [json(403, #"{"code":"not_owner","message":"Only the owner may change prices."}"#)],
            make: { outbox in try await enqueueAndDrain(outbox, 99) }, shows: nil, baseRevision: nil, sync: .rolledBack(code: "not_owner")),
        Row(change: "withdrawn: an inline save refused", script: [json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#)],
            make: { outbox in _ = try await outbox.save(RecordTests.edit(), changing: [.put(key, value(-1))]) }, shows: nil, baseRevision: nil, sync: .none),
        Row(change: "discarded by the member",
            make: { outbox in
                let id = try await outbox.enqueue(RecordTests.edit(), changing: [.put(key, value(13.5))])
                try await outbox.discard(id)
            }, shows: nil, baseRevision: nil, sync: .rolledBack(code: ErrorCode.discarded)),
        Row(change: "gave up past the retry policy", script: [json(503, "{}")],
            configure: { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 1) },
            make: { outbox in try await enqueueAndDrain(outbox, 13.5) }, shows: nil, baseRevision: nil, sync: .rolledBack(code: ErrorCode.gaveUp)),
        Row(change: "conflicted: changed elsewhere", script: [json(412, #"{"current":{"name":"Antiseptic","price":14},"revision":"4"}"#)],
            make: { outbox in try await enqueueAndDrain(outbox, 13.5) }, shows: value(13.5), baseRevision: 4, sync: .conflict(serverRevision: "4")),
        Row(change: "superseded by a correction (revise)", script: [json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#)],
            make: { outbox in
                try await enqueueAndDrain(outbox, -1)
                let failed = try #require(try outbox.record(key)?.sync.rolledBack?.operation)
                _ = try await outbox.revise(failed, payload: Data(#"{"price":15}"#.utf8), changing: [.put(key, value(15))])
            }, shows: value(15), baseRevision: nil, sync: .pending(count: 1)),
        Row(change: "resolved keeping the server's version", script: [json(412, #"{"current":{"name":"Antiseptic","price":14},"revision":"4"}"#)],
            make: { outbox in
                try await enqueueAndDrain(outbox, 13.5)
                let conflicted = try #require(try outbox.record(key)?.sync.conflict?.operation)
                _ = try await outbox.resolveConflict(conflicted, keeping: .theirs)
            }, shows: serversRecord, baseRevision: 4, sync: .synced),
        Row(change: "resolved keeping the member's version", script: [json(412, #"{"current":{"name":"Antiseptic","price":14},"revision":"4"}"#)],
            make: { outbox in
                try await enqueueAndDrain(outbox, 13.5)
                let conflicted = try #require(try outbox.record(key)?.sync.conflict?.operation)
                _ = try await outbox.resolveConflict(conflicted, keeping: .mine(payload: Data(#"{"price":13.5}"#.utf8), baseRevision: "4"))
            }, shows: value(13.5), baseRevision: 4, sync: .pending(count: 1)),
        Row(change: "superseded by coalescing",
            configure: { $0.operationPolicies = ["product.update": OperationTypePolicy.idempotent.coalescing()] },
            make: { outbox in
                var first = RecordTests.edit(1)
                first.entityID = "7d0c3a52"
                var second = RecordTests.edit(2)
                second.entityID = "7d0c3a52"
                _ = try await outbox.enqueue(first, changing: [.put(key, value(13))])
                _ = try await outbox.enqueue(second, changing: [.put(key, value(13.5))])
            }, shows: value(13.5), baseRevision: nil, sync: .pending(count: 1)),
        Row(change: "approval decided: approved", script: [json(202, #"{"request_id":"apr-1","status":"pending_approval"}"#)],
            make: { outbox in
                try await enqueueAndDrain(outbox, 13.5)
                let waiting = try #require(try outbox.record(key)?.sync.pending.first?.operation)
                try await outbox.recordApprovalDecision(waiting, approved: true)
            }, shows: value(13.5), baseRevision: nil, sync: .confirmed),
        Row(change: "approval decided: refused", script: [json(202, #"{"request_id":"apr-1","status":"pending_approval"}"#)],
            make: { outbox in
                try await enqueueAndDrain(outbox, 13.5)
                let waiting = try #require(try outbox.record(key)?.sync.pending.first?.operation)
                try await outbox.recordApprovalDecision(waiting, approved: false)
            }, shows: nil, baseRevision: nil, sync: .rolledBack(code: ErrorCode.approvalRejected)),
        Row(change: "deleted on the server while it waited",
            make: { outbox in
                _ = try await outbox.apply(page(from: .start(of: 1), to: FeedPosition(epoch: 1, major: 2), revision: 3, value: value(12)), requested: nil, limit: 500)
                _ = try await outbox.enqueue(RecordTests.edit(), changing: [.put(key, value(13.5))])
                _ = try await outbox.apply(page(from: FeedPosition(epoch: 1, major: 2), to: FeedPosition(epoch: 1, major: 3), revision: 4, value: nil),
                                           requested: FeedPosition(epoch: 1, major: 2), limit: 500)
            }, shows: value(13.5), baseRevision: 4, sync: .conflict(serverRevision: "4")),
    ]

    static func enqueueAndDrain(_ outbox: Outbox, _ price: Double) async throws {
        _ = try await outbox.enqueue(RecordTests.edit(), changing: [.put(key, value(price))])
        await outbox.drain()
    }

    static func page(from: FeedPosition, to: FeedPosition, revision: UInt64, value: Data?) -> FeedPage {
        let changes = [FeedChange(type: key.type, id: key.id, revision: revision, record: value)]
        return FeedPage(business: key.business, from: from, cursor: to, hasMore: false, count: 1,
                        digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
    }

    @Test(arguments: rows)
    func eachStatusChangeLeavesTheRecordAsTheTableSays(_ row: Row) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        for step in row.script { transport.script(step) }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open(row.configure)
        defer { outbox.close() }
        try await row.make(outbox)
        let record = try outbox.record(Self.key)
        #expect(record?.value == row.shows, "\(row.change): shows \(record?.value.map { String(decoding: $0, as: UTF8.self) } ?? "nothing")")
        #expect(record?.server?.revision == row.baseRevision, "\(row.change): base at \(String(describing: record?.server?.revision))")
        #expect(Sync(record) == row.sync, "\(row.change): says \(Sync(record)), the table \(row.sync)")
        #expect(try outbox.verify().isClean, "\(row.change): the journal verifies")
    }

    /// The rule itself, for every status: where the write's change stands over its record.
    @Test func theRuleCoversEveryStatus() {
        let expected: [OutboxStatus: RecordRule.Overlay] = [
            .queued: .pending, .syncing: .pending, .pendingApproval: .pending, .conflicted: .conflicted,
            .synced: .confirmed, .failed: .rolledBack, .blocked: .rolledBack, .discarded: .rolledBack,
            .withdrawn: .gone, .superseded: .gone,
        ]
        for status in OutboxStatus.allCases {
            #expect(RecordRule.overlay(status: status, held: false, rolledBack: true, retired: false) == expected[status], "\(status)")
        }
        #expect(RecordRule.overlay(status: .queued, held: true, rolledBack: false, retired: false) == .held)
        #expect(RecordRule.overlay(status: .synced, held: false, rolledBack: false, retired: true) == .gone)
        #expect(RecordRule.overlay(status: .failed, held: false, rolledBack: false, retired: false) == .gone, "acknowledged")
        #expect(RecordRule.rollsBack(from: .syncing, to: .failed) && !RecordRule.rollsBack(from: .failed, to: .failed))
        #expect(RecordRule.baseTakes(incoming: 4, over: 3) && !RecordRule.baseTakes(incoming: 3, over: 3) && RecordRule.baseTakes(incoming: 1, over: nil))
    }
}
