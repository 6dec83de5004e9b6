import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// The member's records: each status change of a write moves its record's view, base and sync
/// state as `Docs/records.md`'s table says, in the same commit.
@Suite("Local records, row by row of the status-change table", .timeLimit(.minutes(10)))
struct RecordTests {
    static let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
    static func value(_ price: Double) -> Data { Data(#"{"name":"Antiseptic","price":\#(price)}"#.utf8) }

    static func edit(_ number: Int = 1, revisionFrom: RecordKey? = nil) -> OutboxRequest {
        // A lane of its own: what orders a record's writes is the record, not the lane.
        var request = productRequest(number, entityID: nil)
        request.operationType = "product.update"
        request.method = "PUT"
        request.endpoint = "/products/7d0c3a52"
        request.revisionFrom = revisionFrom
        return request
    }

    func json(_ status: Int, _ body: String) -> ScriptedTransport.Step { .respond(.json(status, body)) }

    // MARK: Pending, then settled

    @Test func aWriteAndItsRecordChangeLandInOneCommitAndTheViewShowsTheMembersValue() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let before = try outbox.lastSeq()
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        #expect(try outbox.lastSeq().rawValue == before.rawValue + 1, "one event carries the write and its change")
        let record = try #require(try outbox.record(Self.key))
        #expect(record.value == Self.value(13.5))
        #expect(record.server == nil)
        #expect(record.sync.pending == [LocalRecord.Sync.Pending(operation: id, status: .queued, deletes: false)])
        #expect(!record.sync.isSynced)
    }

    @Test func successWithTheAnswersRecordMovesItToTheBaseAndRetiresTheOverlay() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(200, #"{"record":{"name":"Antiseptic","price":13.5,"note":"server"},"revision":3}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        let record = try #require(try outbox.record(Self.key))
        let expected = try JSONSerialization.data(withJSONObject: ["name": "Antiseptic", "price": 13.5, "note": "server"], options: [.sortedKeys])
        #expect(record.server?.revision == 3)
        #expect(record.server?.value == expected)
        #expect(record.value == expected, "the view is the server's now")
        #expect(record.sync.isSynced)
        // The trail: the outcome names the revision and the value's hash.
        let finished = try outbox.journalEvents(of: id).compactMap { if case .attemptFinished(let f) = $0.body { f } else { nil } }.last
        #expect(finished?.confirmations.first?.revision == 3)
        #expect(finished?.confirmations.first?.valueHash == SHA256Digest(of: expected))
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
    }

    @Test func successWithARevisionButNoRecordPutsTheWrittenValueInTheBase() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(200, #"{"revision":"8"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        let record = try #require(try outbox.record(Self.key))
        #expect(record.server?.revision == 8 && record.server?.value == Self.value(13.5))
        #expect(record.sync.isSynced)
    }

    @Test func successWithoutARevisionKeepsTheOverlayConfirmedUntilTheServersValueArrives() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(201, "{}"), json(200, #"{"record":{"price":15},"revision":4}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let first = try await outbox.enqueue(Self.edit(1), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        var record = try #require(try outbox.record(Self.key))
        #expect(record.value == Self.value(13.5) && record.server == nil)
        #expect(record.sync.confirmed == [first] && record.sync.pending.isEmpty)
        // A later answer brings the server's value: the confirmed change is retired beneath it.
        _ = try await outbox.enqueue(Self.edit(2), changing: [.put(Self.key, Self.value(15))])
        await outbox.drain()
        record = try #require(try outbox.record(Self.key))
        #expect(record.server?.revision == 4)
        #expect(record.sync.isSynced, "\(record.sync)")
    }

    // MARK: Rolled back

    @Test func aRefusedWriteIsRolledBackWithTheServersReasonAndARetryRestoresIt() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(-1))])
        await outbox.drain()
        var record = try #require(try outbox.record(Self.key))
        #expect(record.value == nil, "the rolled-back value never shows")
        #expect(record.sync.rolledBack == LocalRecord.Sync.RolledBack(operation: id, status: .failed, code: "validation_failed", message: "Price must be positive", serverMessage: "Price must be positive"))
        try await outbox.retry(id)
        record = try #require(try outbox.record(Self.key))
        #expect(record.value == Self.value(-1) && record.sync.rolledBack == nil)
        #expect(record.sync.pending.map(\.operation) == [id])
    }

    @Test func laterWritesMadeOnARolledBackOneAreHeldInTheSameCommitAndHidden() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(403, #"{"code":"not_owner","message":"Only owners may"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let first = try await outbox.enqueue(Self.edit(1), changing: [.put(Self.key, Self.value(13.5))])
        let second = try await outbox.enqueue(Self.edit(2), changing: [.put(Self.key, Self.value(12))])
        #expect(try outbox.operation(second)?.waitingOn == .recordWrite(first, .queued), "a record's writes go in order")
        await outbox.drain()
        #expect(try outbox.operation(first)?.status == .blocked)
        let held = try #require(try outbox.operation(second))
        #expect(held.status == .conflicted && held.state.heldOn == first)
        #expect(held.lastErrorCode == ErrorCode.builtOnRolledBack)
        let record = try #require(try outbox.record(Self.key))
        #expect(record.value == nil, "neither value shows")
        #expect(record.sync.held == [second])
        #expect(record.sync.rolledBack?.operation == first)
        // The hold landed with the rollback: one commit, adjacent events.
        let blocked = try outbox.journalEvents(of: first).last!.seq
        #expect(try outbox.journalEvents(of: second).last!.seq == blocked.next)
        #expect(transport.requests.count == 1, "the held write was never sent")
    }

    @Test func aDiscardRollsBackAndAnAcknowledgementEndsTheNotice() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        try await outbox.discard(id)
        var record = try #require(try outbox.record(Self.key))
        #expect(record.value == nil && record.sync.rolledBack?.code == "discarded")
        try await outbox.acknowledgeRollback(of: Self.key)
        record = try outbox.record(Self.key) ?? LocalRecord(key: Self.key, value: nil, schemaVersion: nil, server: nil, isLocalOnly: false, sync: LocalRecord.Sync())
        #expect(record.sync.rolledBack == nil)
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
        await #expect(throws: OutboxError.self) { try await outbox.acknowledgeRollback(of: Self.key) }
    }

    // MARK: Conflicts, replacements, approvals

    @Test func aConflictKeepsTheMembersValueWithTheServersBesideItAndInTheBase() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"5","current":{"price":14}}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        let record = try #require(try outbox.record(Self.key))
        let server = Data(#"{"price":14}"#.utf8)
        #expect(record.value == Self.value(13.5))
        #expect(record.server?.revision == 5 && record.server?.value == server)
        #expect(record.sync.conflict == LocalRecord.Sync.Conflict(operation: id, serverRevision: "5", serverValue: server))
    }

    @Test func aRevisionMovesTheOverlayToTheNewWriteEvenWhenItNamesNoChange() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(422, #"{"code":"validation_failed","message":"bad"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        let corrected = try await outbox.revise(id, payload: Data(#"{"price":13.5}"#.utf8))
        let record = try #require(try outbox.record(Self.key))
        #expect(record.value == Self.value(13.5))
        #expect(record.sync.pending.map(\.operation) == [corrected])
        #expect(record.sync.rolledBack == nil, "a later change replaces the notice")
        #expect(try outbox.operationState(corrected)?.records == [Self.key])
    }

    @Test func anApprovalKeepsTheChangeConfirmedUntilTheServersValueArrives() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(202, #"{"request_id":"apr-1","status":"pending_approval"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        #expect(try outbox.record(Self.key)?.sync.pending == [LocalRecord.Sync.Pending(operation: id, status: .pendingApproval, deletes: false)])
        try await outbox.recordApprovalDecision(id, approved: true)
        let record = try #require(try outbox.record(Self.key))
        #expect(record.value == Self.value(13.5) && record.sync.confirmed == [id])
    }

    // MARK: Revisions chained inside a record

    @Test func anEditBehindAnotherIsSentAgainstTheRevisionTheEarlierSuccessReturned() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(200, #"{"revision":3}"#), json(200, #"{"revision":4}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let first = try await outbox.enqueue(Self.edit(1, revisionFrom: Self.key), changing: [.put(Self.key, Self.value(13.5))])
        let second = try await outbox.enqueue(Self.edit(2, revisionFrom: Self.key), changing: [.put(Self.key, Self.value(12))])
        // One pass: the second goes as soon as the first's answer lands.
        await outbox.drain()
        #expect(try outbox.operation(first)?.status == .synced && outbox.operation(second)?.status == .synced)
        #expect(transport.requests.count == 2)
        #expect(transport.requests[0].headers["If-Match"] == nil, "no base yet: a create")
        #expect(transport.requests[1].headers["If-Match"] == "\"3\"")
        let started = try outbox.journalEvents(of: second).compactMap { if case .attemptStarted(let s) = $0.body { s } else { nil } }
        #expect(started.first?.sentRevision == "3", "the proof shows what was sent")
        #expect(try outbox.record(Self.key)?.server?.revision == 4)
    }

    // MARK: Local-only records

    @Test func aLocalWriteIsDurableNeverSentAndRefusedForASyncedType() async throws {
        let journal = TestJournal()
        let outbox = try journal.open { $0.recordTypes = ["draft": .localOnly] }
        defer { outbox.close() }
        let draft = RecordKey(business: "pharmacy-7", type: "draft", id: "form-1")
        try await outbox.writeLocal([.put(draft, Data(#"{"name":"Gauze"}"#.utf8))])
        let record = try #require(try outbox.record(draft))
        #expect(record.value == Data(#"{"name":"Gauze"}"#.utf8) && record.isLocalOnly && record.server == nil)
        await #expect(throws: OutboxError.self) { try await outbox.writeLocal([.put(Self.key, Self.value(1))]) }
        await #expect(throws: OutboxError.self) { _ = try await outbox.enqueue(Self.edit(), changing: [.put(draft, Data("{}".utf8))]) }
        outbox.close()
        let reopened = try journal.open { $0.recordTypes = ["draft": .localOnly] }
        defer { reopened.close() }
        #expect(try reopened.record(draft)?.value == Data(#"{"name":"Gauze"}"#.utf8), "durable across a reopening")
        #expect(journal.transport.requests.isEmpty)
    }

    // MARK: Bad input

    @Test(arguments: 0..<7)
    func aBadChangeIsRefusedNamingTheFieldAndNothingLands(_ index: Int) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let long = String(repeating: "x", count: 256)
        let cases: [(OutboxRequest, [RecordChange], String)] = [
            (Self.edit(), [.put(RecordKey(business: "pharmacy-7", type: "product", id: long), Self.value(1))], "changes[0].key.id"),
            (Self.edit(), [.put(RecordKey(business: "pharmacy-7", type: String(repeating: "t", count: 65), id: "a"), Self.value(1))], "changes[0].key.type"),
            (Self.edit(), [.put(Self.key, Data("not json".utf8))], "changes[0].value"),
            (Self.edit(), [.put(Self.key, Self.value(1)), .delete(Self.key)], "changes[1]"),
            (Self.edit(), [.put(RecordKey(business: "other", type: "product", id: "a"), Self.value(1))], "changes[0].key.business"),
            (Self.edit(revisionFrom: RecordKey(business: "pharmacy-7", type: "product", id: "other")), [.put(Self.key, Self.value(1))], "revisionFrom"),
            (Self.edit(), [.put(RecordKey(business: "pharmacy-7", type: "product", id: "a\u{0007}"), Self.value(1))], "changes[0].key.id"),
        ]
        let (request, changes, field) = cases[index]
        let before = try outbox.lastSeq()
        await #expect {
            _ = try await outbox.enqueue(request, changing: changes)
        } throws: { error in
            guard case OutboxError.invalidRequest(let named, _) = error else { return false }
            return named == field
        }
        #expect(try outbox.lastSeq() == before)
        #expect(try outbox.record(Self.key) == nil)
    }

    // MARK: Queries and streams

    @Test func aQueryListsTheViewInIDOrderWithPendingCreatesAndWithoutPendingDeletes() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        func key(_ id: String) -> RecordKey { RecordKey(business: "pharmacy-7", type: "product", id: id) }
        // p1 and p12 reach the server; p2 is created and p12 deleted offline.
        transport.script(json(200, #"{"revision":1}"#), json(200, #"{"revision":1}"#))
        _ = try await outbox.enqueue(productRequest(1), changing: [.put(key("p1"), Self.value(1))])
        _ = try await outbox.enqueue(productRequest(2), changing: [.put(key("p12"), Self.value(2))])
        await outbox.drain()
        _ = try await outbox.enqueue(productRequest(3), changing: [.put(key("p2"), Self.value(3))])
        _ = try await outbox.enqueue(productRequest(4), changing: [.delete(key("p12"))])
        _ = try await outbox.enqueue(productRequest(5), changing: [.put(RecordKey(business: "pharmacy-7", type: "employee", id: "e1"), Self.value(5))])
        let all = try outbox.records(RecordQuery(business: "pharmacy-7", type: "product"))
        #expect(all.records.map(\.key.id) == ["p1", "p2"])
        #expect(all.nextAfter == nil)
        let first = try outbox.records(RecordQuery(business: "pharmacy-7", type: "product", limit: 1))
        #expect(first.records.map(\.key.id) == ["p1"] && first.nextAfter == "p1")
        let second = try outbox.records(RecordQuery(business: "pharmacy-7", type: "product", after: "p1", limit: 1))
        #expect(second.records.map(\.key.id) == ["p2"])
    }

    @Test func aRecordStreamYieldsOnlyWhenTheViewOfItsRecordsChanged() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let query = RecordQuery(business: "pharmacy-7", type: "product")
        var pages = outbox.recordUpdates(query).makeAsyncIterator()
        #expect(await pages.next()?.records.isEmpty == true)
        _ = try await outbox.enqueue(Self.edit(), changing: [.put(Self.key, Self.value(13.5))])
        #expect(await pages.next()?.records.map(\.value) == [Self.value(13.5)])
        // A write of another type changes nothing this stream shows: no page for it. The next
        // page is the one the product's discard brings.
        _ = try await outbox.enqueue(productRequest(9), changing: [.put(RecordKey(business: "pharmacy-7", type: "employee", id: "e1"), Self.value(1))])
        let id = try #require(try outbox.record(Self.key)?.sync.pending.first?.operation)
        try await outbox.discard(id)
        #expect(await pages.next()?.records.isEmpty == true)
    }

    // MARK: Rebuilds keep the base

    @Test func aRebuildOfTheProjectionsKeepsTheBaseAndEqualsTheStoredOnes() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(json(200, #"{"record":{"price":13.5},"revision":3}"#), json(422, #"{"code":"validation_failed","message":"bad"}"#))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        _ = try await outbox.enqueue(Self.edit(1), changing: [.put(Self.key, Self.value(13.5))])
        await outbox.drain()
        _ = try await outbox.enqueue(Self.edit(2), changing: [.put(Self.key, Self.value(-2))])
        await outbox.drain()
        let before = try outbox.record(Self.key)
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
        try outbox.store.environment.write { txn in
            try txn.put(outbox.store.schema.meta, JournalSchema.MetaKey.projectionVersion, UInt32(0).bigEndianBytes)
        }
        outbox.close()
        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.record(Self.key) == before, "the rebuild folded the same view over the kept base")
        #expect(try reopened.verify().isClean)
    }

    @Test func aStableIDSavedAgainWithTheSameChangesIsOneOperationAndWithOthersIsRefused() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var request = Self.edit()
        request.operationID = OperationID()
        let first = try await outbox.enqueue(request, changing: [.put(Self.key, Self.value(13.5))])
        let again = try await outbox.enqueue(request, changing: [.put(Self.key, Self.value(13.5))])
        #expect(first == again)
        await #expect(throws: OutboxError.operationIDReused(first)) {
            _ = try await outbox.enqueue(request, changing: [.put(Self.key, Self.value(12))])
        }
        await #expect(throws: OutboxError.operationIDReused(first)) {
            _ = try await outbox.enqueue(request)
        }
    }

    @Test func aQueryPagesThroughMoreRecordsThanACursorsBatchInIDOrder() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.json(200, #"{"revision":1}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        func key(_ number: Int) -> RecordKey { RecordKey(business: "pharmacy-7", type: "product", id: "p\(number)") }
        // 90 reach the server (bases), then 80 more wait offline (overlays), 20 of them over a base.
        for number in 0..<90 { _ = try await outbox.enqueue(productRequest(number), changing: [.put(key(number), Self.value(Double(number)))]) }
        await outbox.drain()
        transport.script()
        let offline = ScriptedTransport.Step.fail(.offline)
        for _ in 0..<200 { transport.script(offline) }
        for number in 70..<150 { _ = try await outbox.enqueue(productRequest(number), changing: [.put(key(number), Self.value(Double(number) + 0.5))]) }
        var ids: [String] = []
        var query = RecordQuery(business: "pharmacy-7", type: "product", limit: 50)
        repeat {
            let page = try outbox.records(query)
            #expect(page.records.count <= 50)
            ids += page.records.map(\.key.id)
            query.after = page.nextAfter
        } while query.after != nil
        let expected = (0..<150).map { "p\($0)" }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(ids == expected)
        let over = try #require(try outbox.record(key(75)))
        #expect(over.value == Self.value(75.5) && over.server?.revision == 1, "a pending change over a base")
    }
}
