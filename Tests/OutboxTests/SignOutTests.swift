import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCrypto
import OutboxTesting
import Synchronization
import Testing

/// A product with a price, named for the member: "Antiseptic <n>", "price <n>.20".
private func pricedProduct(_ number: Int, id: OperationID? = nil, baseRevision: String? = nil,
                           dependsOn: [OperationID] = []) -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products",
        payload: Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number)","price":\#(number).20}"#.utf8),
        entityID: "product-\(number)", category: "Products", entityLabel: "Antiseptic \(number)",
        summary: "price \(number).20", operationID: id, baseRevision: baseRevision, dependsOn: dependsOn
    )
}

private func recordKey(_ number: Int) -> RecordKey { RecordKey(business: "pharmacy-7", type: "product", id: "product-\(number)") }
private func recordValue(_ number: Int) -> Data { Data(#"{"name":"Antiseptic \#(number)","price":\#(number).20}"#.utf8) }

/// Leaves one row of `status` in `outbox`, answered by `server`'s scripted faults: "Antiseptic
/// <number>", changing record `number`. A `syncing` row is one whose attempt started and whose
/// outcome was never recorded, with nothing of this process sending it: what a crash mid-send
/// leaves until the attempt is abandoned.
private func leaveRow(_ status: OutboxStatus, number: Int, in outbox: Outbox, on server: InMemoryServer) async throws -> OperationID {
    let id = OperationID()
    let key = id.idempotencyKey
    switch status {
    case .queued, .syncing: server.inject(.noResponse(.offline), forKey: key)
    case .failed: server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")), forKey: key)
    case .blocked: server.inject(.respond(.error(403, code: "forbidden", message: "Not allowed")), forKey: key)
    case .conflicted:
        server.inject(.respond(TransportResponse(statusCode: 412, headers: ["ETag": "\"r2\"", "Content-Type": "application/json"],
                                                 body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere"}"#.utf8))), forKey: key)
    case .pendingApproval: server.inject(.holdForApproval(requestID: "apr-\(number)"), forKey: key)
    default: Issue.record("no recipe for \(status)")
    }
    let request = pricedProduct(number, id: id, baseRevision: status == .conflicted ? "r1" : nil)
    _ = try await outbox.enqueue(request, changing: [.put(recordKey(number), recordValue(number))])
    await outbox.drain()
    await outbox.settle()
    if status == .syncing {
        let attempt = try #require(try outbox.operation(id)).attemptCount + 1
        _ = try await outbox.writer.append([JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: AttemptNumber(rawValue: attempt), trigger: .drain)))])
    }
    #expect(try outbox.operation(id)?.status == status)
    return id
}

/// A transport that answers through `server` and remembers which answers were replays.
private final class ReplayWatch: OutboxTransport {
    let server: InMemoryServer
    private let replayedKeys = Mutex<[String]>([])

    init(_ server: InMemoryServer) { self.server = server }

    var replayed: [String] { replayedKeys.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await server.send(request)
        if response.headers["Idempotent-Replayed"] == "true", let key = request.headers[OutboxHeader.idempotencyKey] {
            replayedKeys.withLock { $0.append(key) }
        }
        return response
    }
}

extension OutboxRequest {
    /// The request with the app's stable id left out: an import gives every write its id.
    fileprivate var withoutID: OutboxRequest {
        var copy = self
        copy.operationID = nil
        return copy
    }
}

private func exportURL() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("outbox-export-\(UUID().uuidString).pending", isDirectory: false)
}

@Suite("Sign-out: every unsettled row discarded, the refusal naming them", .timeLimit(.minutes(10)))
struct SignOutTests {
    @Test(arguments: [OutboxStatus.queued, .syncing, .failed, .blocked, .conflicted])
    func signOutDiscardsEveryRowTheBadgeCountsAndKeepsTheApprovalRow(_ status: OutboxStatus) async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let approval = try await leaveRow(.pendingApproval, number: 9, in: outbox, on: server)
        let id = try await leaveRow(status, number: 1, in: outbox, on: server)
        #expect(try outbox.badgeCount() == 1)

        let named = PendingWrite(operationID: id, category: "Products", entityLabel: "Antiseptic 1", summary: "price 1.20", status: status)
        await #expect(throws: OutboxError.pendingWork(count: 1, writes: [named])) { try await outbox.signOut(discardPending: false) }
        #expect(try outbox.operation(id)?.status == status, "a refused sign-out changes nothing")

        try await outbox.signOut(discardPending: true)
        let kinds = try outbox.journalEvents(of: id).map(\.kind)
        #expect(kinds.suffix(status == .syncing ? 2 : 1) == (status == .syncing ? [.attemptAbandoned, .discarded] : [.discarded]))
        guard case .discarded(let discarded) = try outbox.journalEvents(of: id).last?.body else { Issue.record("no discard recorded"); return }
        #expect(discarded.reason == .signOut)
        #expect(try outbox.operation(id)?.status == .discarded)
        #expect(try outbox.badgeCount() == 0)
        #expect(try outbox.operation(approval)?.status == .pendingApproval, "the server holds it")
        #expect(try outbox.projectionMismatches() == [])
    }

    @Test(arguments: [(rows: 2, listed: 2), (rows: 57, listed: OutboxError.pendingWorkListLimit)])
    func theRefusalNamesTheWritesOldestFirstAndCountsThoseItDoesNotList(rows: Int, listed: Int) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 1...rows { ids.append(try await outbox.enqueue(pricedProduct(number))) }
        do {
            try await outbox.signOut(discardPending: false)
            Issue.record("sign-out was not refused")
        } catch let error as OutboxError {
            guard case .pendingWork(let count, let writes) = error else { Issue.record("refused with \(error)"); return }
            #expect(count == rows)
            #expect(writes.map(\.operationID) == Array(ids.prefix(listed)))
            #expect(writes.map(\.entityLabel) == (1...listed).map { "Antiseptic \($0)" })
            if rows == 2 {
                #expect(error.description == "2 changes have not synced: Products · Antiseptic 1 (price 1.20), Products · Antiseptic 2 (price 2.20)."
                    + " Sync them first, export them (exportPending), or sign out with discardPending: true to drop them")
            } else {
                #expect(error.description.contains("Products · Antiseptic 5 (price 5.20), and \(rows - 5) more."))
            }
        }
        #expect(try outbox.badgeCount() == rows)
    }

    @Test func aRowThatNeedsAPersonSaysWhyInTheRefusal() {
        let id = OperationID()
        let words = [OutboxStatus.queued, .syncing, .failed, .blocked, .conflicted].map {
            PendingWrite(operationID: id, category: "Products", entityLabel: "Antiseptic 500 ml", summary: "price 4.20", status: $0).description
        }
        #expect(words == [
            "Products · Antiseptic 500 ml (price 4.20)", "Products · Antiseptic 500 ml (price 4.20)",
            "Products · Antiseptic 500 ml (price 4.20, refused by the server)", "Products · Antiseptic 500 ml (price 4.20, blocked)",
            "Products · Antiseptic 500 ml (price 4.20, changed elsewhere meanwhile)",
        ])
    }
}

@Suite("The export of pending work, and its import on the same account", .timeLimit(.minutes(10)))
struct PendingExportTests {
    /// Encrypted at rest or not: the export carries the plaintext a sealed journal keeps.
    @Test(arguments: [false, true])
    func theExportHoldsEveryRowTheBadgeCountsWithItsOverlayAndTheImportKeepsTheirIDs(encryptedAtRest: Bool) async throws {
        let server = InMemoryServer()
        let before = TestJournal()
        let outbox = try before.open(server: server) { $0.encryptionKey = encryptedAtRest ? SealingKey.random() : nil }
        _ = try await leaveRow(.pendingApproval, number: 9, in: outbox, on: server)
        // The syncing row last: the next pass would abandon it and send it again.
        let statuses: [OutboxStatus] = [.queued, .failed, .blocked, .conflicted, .syncing]
        var ids: [OperationID] = []
        for (number, status) in statuses.enumerated() { ids.append(try await leaveRow(status, number: number + 1, in: outbox, on: server)) }
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()

        let exported = try outbox.exportPending(to: url, key: key)
        #expect(exported.map(\.operationID) == ids, "the approval row stays with the server")
        #expect(exported.map(\.status) == statuses)
        let requests = try ids.map { try #require(try outbox.operation($0)).request }
        try await outbox.signOut(discardPending: true)
        outbox.close()
        try Outbox.wipeJournal(at: before.directory)

        let after = TestJournal()
        server.setOnline(false)
        let fresh = try after.open(server: server) { $0.encryptionKey = encryptedAtRest ? SealingKey.random() : nil }
        defer { fresh.close() }
        let report = try await fresh.importPending(from: url, key: key)
        #expect(report.imported.map(\.operationID) == ids && report.alreadyInJournal.isEmpty && report.refused.isEmpty)
        #expect(report.account == after.account)
        for (number, id) in ids.enumerated() {
            let row = try #require(try fresh.operation(id))
            #expect(row.status == .queued)
            #expect(row.request.withoutID == requests[number].withoutID, "exactly as enqueued: payload, presentation, base revision")
            #expect(try fresh.record(recordKey(number + 1))?.value == recordValue(number + 1), "the member's overlay came back")
            #expect(try fresh.record(recordKey(number + 1))?.sync.pending.map(\.operation) == [id])
        }
        #expect(try fresh.badgeCount() == ids.count)
        #expect(try fresh.projectionMismatches() == [])
    }

    @Test func anExportImportedTwiceAppliesOnce() async throws {
        let server = InMemoryServer()
        server.setOnline(false)
        let before = TestJournal()
        let outbox = try before.open(server: server)
        let first = try await outbox.enqueue(pricedProduct(1), changing: [.put(recordKey(1), recordValue(1))])
        let second = try await outbox.enqueue(pricedProduct(2, dependsOn: [first]))
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        try await outbox.signOut(discardPending: true)
        outbox.close()
        try Outbox.wipeJournal(at: before.directory)

        let after = TestJournal()
        let fresh = try after.open(server: server)
        defer { fresh.close() }
        let once = try await fresh.importPending(from: url, key: key)
        #expect(once.imported.map(\.operationID) == [first, second])
        #expect(try fresh.operation(second)?.request.dependsOn == [first])
        let seq = try fresh.lastSeq()
        let twice = try await fresh.importPending(from: url, key: key)
        #expect(twice.imported.isEmpty && twice.alreadyInJournal.map(\.operationID) == [first, second])
        #expect(try fresh.lastSeq() == seq, "the second import writes nothing")

        server.setOnline(true)
        await fresh.drain()
        #expect(try [first, second].map { try fresh.operation($0)?.status } == [.synced, .synced])
        #expect(server.appliedCount(first.idempotencyKey) == 1 && server.appliedCount(second.idempotencyKey) == 1)
        #expect(server.records.count == 2)
        let sent = server.requests.count
        let late = try await fresh.importPending(from: url, key: key)
        await fresh.drain()
        #expect(late.alreadyInJournal.count == 2 && server.requests.count == sent, "an import after the sync sends nothing")
    }

    /// An inline save in flight when the member signs out is not discarded under it: its outcome
    /// is recorded first, so a write that landed is never called discarded.
    @Test func aSaveInFlightAtSignOutIsRecordedNotDiscarded() async throws {
        let transport = ScriptedTransport(otherwise: .respond(TransportResponse.json(201, #"{"id":"p"}"#)))
        transport.script(.hold)
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let saving = Task { try await outbox.save(pricedProduct(1)) }
        await transport.waitUntilHolding()
        let signingOut = Task { try await outbox.signOut(discardPending: true) }
        // Sign-out waits for the save's outcome (a sign-out that did not would never wait here,
        // and the suite's time limit fails it); then the server answers.
        while outbox.attempts.inFlight.waiting == 0 { await Task.yield() }
        #expect(transport.answerHeld(.respond(TransportResponse.json(201, #"{"id":"p"}"#))))
        _ = try await saving.value
        try await signingOut.value
        let rows = try outbox.ledger().entries
        #expect(rows.count == 1 && rows.first?.status == .synced, "landed, and recorded as landed")
        #expect(try outbox.journalEvents(of: rows[0].operationID).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
        #expect(try outbox.badgeCount() == 0)
    }

    /// The import into the journal that discarded the writes at sign-out (no wipe between) says
    /// so for each, instead of passing them off as already imported.
    @Test func anImportIntoTheJournalThatDiscardedTheWritesRefusesThemNamingTheWipe() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let ids = [try await outbox.enqueue(pricedProduct(1)), try await outbox.enqueue(pricedProduct(2))]
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        try await outbox.signOut(discardPending: true)
        let report = try await outbox.importPending(from: url, key: key)
        #expect(report.imported.isEmpty && report.alreadyInJournal.isEmpty)
        #expect(report.refused.map(\.write.operationID) == ids)
        for refused in report.refused {
            guard case .invalidRequest(let field, let problem) = refused.error else { Issue.record("refused with \(refused.error)"); continue }
            #expect(field == "operationID" && problem.contains("discarded") && problem.contains("wipeJournal"))
        }
    }

    /// An imported write that was sent from the journal it came from is never coalesced away by
    /// the member's next edit: it may have landed, and its key must be replayed.
    @Test func anImportedWriteSentBeforeIsNeverCoalescedAway() async throws {
        let before = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let outbox = try before.open()
        let id = try await outbox.enqueue(pricedProduct(1))
        await outbox.drain()
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        outbox.close()

        let after = TestJournal()
        let fresh = try after.open { $0.operationPolicies["product.create"] = .idempotent.coalescing() }
        defer { fresh.close() }
        _ = try await fresh.importPending(from: url, key: key)
        #expect(try fresh.operation(id)?.attemptCount == 0 && fresh.operation(id)?.state.firstAttemptAt != nil)
        let newer = try await fresh.enqueue(pricedProduct(1))
        #expect(try fresh.operation(id)?.status == .queued, "not superseded")
        #expect(try fresh.operation(newer)?.supersedes == nil)
    }

    /// The age of the server's claim travels with the write: imported, a write first sent 28 days
    /// before is sent the day after, and blocked (not replayed blindly) two days after.
    @Test(arguments: [(daysAfterImport: 0.5, blocked: false), (daysAfterImport: 2, blocked: true)])
    func anImportedWriteKeepsItsClaimsAge(daysAfterImport: Double, blocked: Bool) async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let before = TestJournal(transport: transport)
        let outbox = try before.open()
        let id = try await outbox.enqueue(pricedProduct(1))
        await outbox.drain()
        let firstSent = try #require(try outbox.operation(id)?.state.firstAttemptAt)
        before.clock.advance(by: 28 * 86_400)
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        outbox.close()

        let server = ScriptedTransport(otherwise: .respond(TransportResponse.json(201, #"{"id":"p"}"#)))
        let after = TestJournal(transport: server)
        after.clock.set(to: before.clock.now())
        let fresh = try after.open()
        defer { fresh.close() }
        _ = try await fresh.importPending(from: url, key: key)
        // The export's JSON keeps whole seconds of ISO 8601: the age, not the instant, is what counts.
        let imported = try #require(try fresh.operation(id)?.state.firstAttemptAt)
        #expect(abs(imported.timeIntervalSince(firstSent)) < 1, "the claim is as old as its first attempt")
        after.clock.advance(by: daysAfterImport * 86_400)
        await fresh.drain()
        let row = try #require(try fresh.operation(id))
        if blocked {
            #expect(row.status == .blocked && row.lastErrorCode == ErrorCode.claimMayBeForgotten && server.requests.isEmpty)
        } else {
            #expect(row.status == .synced && server.requests.count == 1)
        }
    }

    @Test func aWriteThisAppNoLongerQueuesIsRefusedAloneAndTheWritesDependingOnItWithIt() async throws {
        let before = TestJournal()
        let outbox = try before.open()
        let product = try await outbox.enqueue(pricedProduct(1))
        var note = pricedProduct(2)
        note.operationType = "note.create"
        let kept = try await outbox.enqueue(note)
        var noteOnTheProduct = pricedProduct(3, dependsOn: [product])
        noteOnTheProduct.operationType = "note.create"
        let dependent = try await outbox.enqueue(noteOnTheProduct)
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        outbox.close()

        let after = TestJournal()
        let fresh = try after.open {
            $0.defaultPolicy = nil
            $0.operationPolicies = ["note.create": .idempotent]
        }
        defer { fresh.close() }
        let report = try await fresh.importPending(from: url, key: key)
        #expect(report.imported.map(\.operationID) == [kept])
        #expect(report.refused.map(\.write.operationID) == [product, dependent])
        let fields = report.refused.map { refused -> String? in
            if case .invalidRequest(let field, _) = refused.error { field } else { nil }
        }
        #expect(fields == ["operationType", "dependsOn"])
        #expect(try fresh.operation(product) == nil && fresh.operation(dependent) == nil)
        #expect(try fresh.projectionMismatches() == [])
    }

    /// How a write reached the server before the wipe without the device learning it.
    enum Landing: String, CaseIterable, CustomTestStringConvertible {
        /// The server applied it and its answer was lost: the row queued, to be replayed.
        case answerLost
        /// The process ended mid-attempt after the server applied it: the row was syncing.
        case processEnded

        var testDescription: String { rawValue }
    }

    @Test(arguments: Landing.allCases)
    func aWriteThatLandedBeforeTheWipeIsAnsweredAsAReplayAndAppliedOnce(_ landing: Landing) async throws {
        let server = InMemoryServer()
        let before = TestJournal()
        let id: OperationID
        switch landing {
        case .answerLost:
            id = OperationID()
            server.inject(.applyThenDropResponse, forKey: id.idempotencyKey)
            let outbox = try before.open(server: server)
            _ = try await outbox.enqueue(pricedProduct(1, id: id))
            await outbox.drain()
            await outbox.settle()
            outbox.close()
        case .processEnded:
            id = try await before.interruptAnAttempt(on: server, applied: true)
        }
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        server.setOnline(false)
        let outbox = try before.open(server: server)
        #expect(try outbox.operation(id)?.status == .queued)
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        try await outbox.signOut(discardPending: true)
        outbox.close()
        try Outbox.wipeJournal(at: before.directory)

        server.setOnline(true)
        let watch = ReplayWatch(server)
        let after = TestJournal()
        let fresh = try after.open(server: watch)
        defer { fresh.close() }
        #expect(try await fresh.importPending(from: url, key: key).imported.map(\.operationID) == [id])
        await fresh.drain()
        #expect(try fresh.operation(id)?.status == .synced)
        #expect(watch.replayed == [id.idempotencyKey], "the server's claim answered it")
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    /// What is wrong with an export given to an import.
    enum Refusal: String, CaseIterable, CustomTestStringConvertible {
        case wrongKey, tamperedContents, tamperedHeader, cutShort, otherAccount, newerVersion, notAnExport

        var testDescription: String { rawValue }
    }

    @Test(arguments: Refusal.allCases)
    func anImportIsRefusedNamingTheProblemAndWritesNothing(_ refusal: Refusal) async throws {
        let before = TestJournal()
        let outbox = try before.open()
        _ = try await outbox.enqueue(pricedProduct(1), changing: [.put(recordKey(1), recordValue(1))])
        let url = exportURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let key = SealingKey.random()
        try outbox.exportPending(to: url, key: key)
        outbox.close()

        var bytes = Array(try Data(contentsOf: url))
        var importKey = key
        var account = before.account
        switch refusal {
        case .wrongKey: importKey = SealingKey.random()
        case .tamperedContents: bytes[bytes.count - 20] ^= 0x01
        case .tamperedHeader: bytes[14] ^= 0x01
        case .cutShort: bytes.removeLast(bytes.count / 3)
        case .otherAccount: account = "member-7"
        case .newerVersion: bytes[9] = UInt8(PendingExport.formatVersion + 1)
        case .notAnExport: bytes = Array(#"{"writes":[]}"#.utf8)
        }
        try Data(bytes).write(to: url)
        let after = TestJournal(account: account)
        let fresh = try after.open()
        defer { fresh.close() }
        let seq = try fresh.lastSeq()
        let path = url.path
        do {
            _ = try await fresh.importPending(from: url, key: importKey)
            Issue.record("the import was not refused")
        } catch let error as OutboxError {
            switch (refusal, error) {
            case (.wrongKey, .exportWrongKey(path)): break
            case (.tamperedContents, .exportDamaged(path, let reason)): #expect(reason.contains("sealed contents"))
            case (.tamperedHeader, .exportDamaged(path, let reason)): #expect(reason.contains("checksum"))
            case (.cutShort, .exportDamaged(path, _)): break
            case (.otherAccount, .exportOtherAccount(path, "member-42", "member-7")):
                #expect(error.description.contains("\"member-42\"") && error.description.contains("\"member-7\""))
            case (.newerVersion, .exportNewerFormat(path, PendingExport.formatVersion + 1, PendingExport.formatVersion)):
                #expect(error.description.contains("version \(PendingExport.formatVersion + 1)"))
            case (.notAnExport, .exportDamaged(path, let reason)): #expect(reason.contains("not an export"))
            default: Issue.record("\(refusal) refused with \(error)")
            }
            #expect(error.description.contains("Nothing was imported"))
        }
        #expect(try fresh.lastSeq() == seq, "nothing was written")
        #expect(try fresh.badgeCount() == 0)
    }

    @Test func anExportReplacesTheFileWholeAndLeavesNoPartOfItBehind() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-exports-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("pending.outbox")
        let key = SealingKey.random()
        _ = try await outbox.enqueue(pricedProduct(1))
        try outbox.exportPending(to: url, key: key)
        _ = try await outbox.enqueue(pricedProduct(2))
        #expect(try outbox.exportPending(to: url, key: key).count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["pending.outbox"])
        #expect(try PendingExport.open(Array(Data(contentsOf: url)), key: key, account: journal.account, path: url.path).contents.writes.count == 2)

        let nowhere = folder.appendingPathComponent("missing/pending.outbox")
        #expect(throws: OutboxError.self) { try outbox.exportPending(to: nowhere, key: key) }
        #expect(!FileManager.default.fileExists(atPath: nowhere.path))
    }
}
