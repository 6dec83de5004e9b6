import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Synchronization
import Testing

/// An edit of product `number`'s price, against `revision`.
private func priceEdit(_ number: Int = 1, price: String, revision: String? = "r1", id: OperationID? = nil,
                       type: String = "product.update", dependsOn: [OperationID] = []) -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7", operationType: type, method: "PATCH", endpoint: "/products/product-\(number)",
        payload: Data(#"{"price":\#(price)}"#.utf8), entityID: "product-\(number)", category: "Products",
        entityLabel: "Antiseptic \(number)", summary: "New price", operationID: id, baseRevision: revision, dependsOn: dependsOn
    )
}

/// A 412 answer, as a server whose record moved on sends it.
private func preconditionFailed(revision: String = "r2", current: String = #"{"price":13}"#) -> ScriptedTransport.Step {
    .respond(TransportResponse(statusCode: 412, headers: ["ETag": "\"\(revision)\"", "Content-Type": "application/json"],
                               body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere","current":\#(current)}"#.utf8)))
}

private let created = ScriptedTransport.Step.respond(TransportResponse.json(201, #"{"id":"p","revision":"r9"}"#))

@Suite("Stable operation ids", .timeLimit(.minutes(10)))
struct StableIDTests {
    @Test func theSameIDAndBytesAreOneOperationAndNothingNewIsWritten() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = OperationID()
        let first = try await outbox.enqueue(productRequest(1).with(id: id))
        let before = try outbox.lastSeq()
        let again = try await outbox.enqueue(productRequest(1).with(id: id))
        #expect(first == id && again == id)
        #expect(try outbox.lastSeq() == before, "nothing new was written")
        #expect(try outbox.ledger().entries.map(\.operationID) == [id])
        #expect(try outbox.operation(id)?.request.operationID == id, "the request keeps the app's id")
    }

    @Test func theSameIDWithOtherBytesIsRefused() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1).with(id: OperationID()))
        await #expect(throws: OutboxError.operationIDReused(id)) { _ = try await outbox.enqueue(productRequest(2).with(id: id)) }
        await #expect(throws: OutboxError.operationIDReused(id)) { _ = try await outbox.save(productRequest(2).with(id: id)) }
        #expect(try outbox.ledger().entries.count == 1)
    }

    @Test func aSecondSaveSendsNothingAndAnswersWhereTheFirstStands() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let outbox = try journal.open()
        defer { outbox.close() }
        let request = productRequest(1).with(id: OperationID())
        guard case .synced = try await outbox.save(request) else { Issue.record("the first save did not sync"); return }
        guard case .alreadySaved(let snapshot) = try await outbox.save(request) else { Issue.record("a second save was not recognised"); return }
        #expect(snapshot.status == .synced && snapshot.id == request.operationID)
        #expect(journal.transport.requests.count == 1, "the double tap sent nothing")
    }

    @Test func copiesRacingWithOneIDMakeOneOperation() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = OperationID()
        let results = try await withThrowingTaskGroup(of: OperationID.self) { group in
            for _ in 0..<8 { group.addTask { try await outbox.enqueue(productRequest(1).with(id: id)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 == id } && results.count == 8)
        #expect(try outbox.ledger().entries.count == 1)
        #expect(try outbox.journalEvents(of: id).filter { $0.kind == .enqueued }.count == 1)
    }

    @Test func compactionKeepsWhatTheCheckNeeds() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let outbox = try journal.open()
        defer { outbox.close() }
        let request = productRequest(1).with(id: OperationID())
        _ = try await outbox.save(request)
        journal.clock.advance(by: 60)
        #expect(try await outbox.compact(before: journal.clock.now()).operations == 1)
        #expect(try outbox.operation(request.operationID!)?.compactedAt != nil)
        #expect(try await outbox.enqueue(request) == request.operationID, "the same bytes are the same operation after compaction")
        await #expect(throws: OutboxError.operationIDReused(request.operationID!)) { _ = try await outbox.enqueue(productRequest(5).with(id: request.operationID!)) }
    }
}

@Suite("Revisions and conflicts", .timeLimit(.minutes(10)))
struct ConflictTests {
    @Test func anEditCarriesItsRevisionAsIfMatch() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.save(priceEdit(price: "12", revision: "r1"))
        #expect(journal.transport.requests.first?.headers["If-Match"] == "\"r1\"")
        _ = try await outbox.save(productRequest(2))
        #expect(journal.transport.requests.last?.headers["If-Match"] == nil, "a create carries none")
    }

    @Test(arguments: [preconditionFailed(), .respond(TransportResponse.error(409, code: "revision_conflict", message: "Changed elsewhere"))])
    func aRevisionConflictWaitsForThePersonWithTheServersSide(_ answer: ScriptedTransport.Step) async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: answer))
        let outbox = try journal.open()
        defer { outbox.close() }
        guard case .conflicted(let id, _) = try await outbox.save(priceEdit(price: "12")) else { Issue.record("not conflicted"); return }
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .conflicted)
        #expect(try outbox.badgeCount() == 1)
        let tab = try outbox.syncTab(isOnline: true)
        #expect(tab.conflictCard?.category == "Changed elsewhere" && tab.conflictCard?.count == 1 && tab.cards.isEmpty)
        #expect(tab.totalCount == 1 && tab.banner.kind == .needsAttention)
        #expect(try outbox.metrics().revisionConflictsByOperationType == ["product.update": 1])
        #expect(try outbox.metrics().conflictsByOperationType.isEmpty, "a key conflict is another thing")
        if case .respond(let response) = answer, response.statusCode == 412 {
            #expect(row.conflict == OperationSnapshot.Conflict(serverRevision: "r2", serverCurrent: Data(#"{"price":13}"#.utf8)))
            #expect(tab.conflictCard?.rows.first?.serverValue == #"{"price":13}"#)
        }
        // A retry would resend the stale If-Match: refused.
        await #expect(throws: OutboxError.self) { try await outbox.retry(id) }
        #expect(journal.transport.requests.count == 1)
    }

    @Test func theServerWinsRuleDiscardsInTheSameCommit() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: preconditionFailed()))
        let outbox = try journal.open { $0.operationPolicies["product.update"] = .idempotent.onConflict(.serverWins) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        let history = try outbox.journalEvents(of: id)
        #expect(history.map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .discarded])
        #expect(history[2].seq.next == history[3].seq)
        guard case .discarded(let discarded) = history[3].body else { Issue.record("no discard"); return }
        #expect(discarded.requestedBy == .rule && discarded.reason == .serverWon)
        #expect(try outbox.badgeCount() == 0)
    }

    @Test func theRebaseRuleResendsUnderTheSameKeyAgainstTheServersRevisionAtMostNTimes() async throws {
        let transport = ScriptedTransport(otherwise: preconditionFailed(revision: "r3"))
        transport.script(preconditionFailed(revision: "r2"), created)
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 1)) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(priceEdit(price: "12", revision: "r1"))
        await outbox.drain()
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(transport.requests.map { $0.headers["If-Match"] } == ["\"r1\"", "\"r2\""])
        #expect(Set(transport.requests.compactMap { $0.headers["Idempotency-Key"] }) == [id.idempotencyKey])
        #expect(try outbox.journalEvents(of: id).map(\.kind).contains(.rebased))

        // Past the limit, the member decides.
        let second = try await outbox.enqueue(priceEdit(2, price: "7", revision: "r1"))
        await outbox.drain()
        await outbox.drain()
        await outbox.drain()
        #expect(try outbox.operation(second)?.status == .conflicted)
        #expect(try outbox.operation(second)?.state.rebaseCount == 1)
    }

    @Test func theServersRecordIsSealedAtRestAndOpensOnlyWithTheKey() async throws {
        let key = try SealingKey(bytes: Array(repeating: 3, count: 32))
        let journal = TestJournal(transport: ScriptedTransport(otherwise: preconditionFailed(current: #"{"secret":"recipe-7"}"#)))
        let outbox = try journal.open { $0.encryptionKey = key }
        let id = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        #expect(try outbox.operation(id)?.conflict?.serverCurrent == Data(#"{"secret":"recipe-7"}"#.utf8))
        outbox.close()
        let raw = try Data(contentsOf: journal.directory.appendingPathComponent("data.mdb"))
        #expect(raw.range(of: Data("recipe-7".utf8)) == nil, "never in the file as plaintext")
        let reader = try JournalReader(directory: journal.directory)
        defer { reader.close() }
        #expect(try reader.operation(id)?.conflict?.serverCurrent == nil)
        #expect(try reader.operation(id)?.conflict?.serverRevision == "r2")
    }
}

@Suite("Resolving and correcting", .timeLimit(.minutes(10)))
struct CorrectionTests {
    @Test func keepingTheirsDiscardsWithTheReason() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: preconditionFailed()))
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        #expect(try await outbox.resolveConflict(id, keeping: .theirs) == nil)
        guard case .discarded(let discarded)? = try outbox.journalEvents(of: id).last?.body else { Issue.record("no discard"); return }
        #expect(discarded.requestedBy == .member && discarded.reason == .serverWon)
    }

    @Test func keepingTheirsEndsTheRecordsConflictAsTheServerHasItWithNoRollbackToTell() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: preconditionFailed(revision: "2", current: #"{"price":13}"#)))
        let outbox = try journal.open()
        defer { outbox.close() }
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "product-1")
        var edit = priceEdit(price: "12")
        edit.baseRevision = nil
        edit.revisionFrom = key
        let id = try await outbox.enqueue(edit, changing: [.put(key, Data(#"{"price":12}"#.utf8))])
        await outbox.drain()
        #expect(try outbox.record(key)?.sync.conflict?.operation == id, "the member sees the conflict first")
        try await outbox.resolveConflict(id, keeping: .theirs)
        let record = try #require(try outbox.record(key))
        #expect(record.value == Data(#"{"price":13}"#.utf8), "the server's value")
        #expect(record.sync.rolledBack == nil && record.sync.conflict == nil && record.sync.pending.isEmpty,
                "the member's own choice is no rollback to tell them of: \(record.sync)")
        let history = try outbox.recordHistory(key)
        #expect(history.entries.last?.kind == .discarded && history.entries.last?.operation == id, "the history keeps the choice")
        await #expect(throws: OutboxError.self, "nothing to acknowledge") { try await outbox.acknowledgeRollback(of: key) }
    }

    @Test func keepingMineReplacesTheRowInItsLanesPlaceAheadOfLaterWrites() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(preconditionFailed())
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let edit = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        // A later write to the same record waits behind the conflicted one.
        let later = try await outbox.enqueue(priceEdit(price: "14", revision: nil, type: "product.rename"))
        #expect(try outbox.operation(later)?.waitingOn == .laneHead(edit, .conflicted))
        #expect(try outbox.syncTab(isOnline: true).card("Products")?.rows.first?.waitingReason
            == "Waits for an earlier change to Antiseptic 1, which was changed elsewhere")

        let resent = try #require(try await outbox.resolveConflict(edit, keeping: .mine(payload: Data(#"{"price":12.5}"#.utf8), baseRevision: "r2")))
        #expect(try outbox.operation(edit)?.status == .superseded)
        #expect(try outbox.operation(edit)?.supersededBy == resent)
        #expect(try outbox.operation(resent)?.supersedes == edit)
        #expect(try outbox.operation(later)?.waitingOn == .laneHead(resent, .queued), "the correction holds the old row's place")
        await outbox.drain()
        await outbox.drain()
        #expect(transport.requests.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"price":12}"#, #"{"price":12.5}"#, #"{"price":14}"#])
        #expect(transport.requests[1].headers["If-Match"] == "\"r2\"")
        #expect(transport.requests[1].headers["Idempotency-Key"] == resent.idempotencyKey, "a new body, a new key")
        #expect(try outbox.journalEvents(of: edit).last?.kind == .superseded, "the old payload stays in its history")
        #expect(try outbox.operation(edit)?.request.payload == Data(#"{"price":12}"#.utf8))
    }

    @Test func everyRowBehindAConflictedOneNamesIt() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(preconditionFailed())
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let edit = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        // One read of the tab asks what holds each row: the second row of the lane reads the
        // answer the first read, and says the same as the row's own snapshot.
        var later: [OperationID] = []
        for price in ["14", "15"] { later.append(try await outbox.enqueue(priceEdit(price: price, revision: nil, type: "product.rename"))) }
        let rows = try #require(try outbox.syncTab(isOnline: true).card("Products")?.rows)
        #expect(rows.map(\.operationID) == later.reversed())
        #expect(rows.map(\.waitingReason) == Array(repeating: "Waits for an earlier change to Antiseptic 1, which was changed elsewhere", count: 2))
        for id in later { #expect(try outbox.operation(id)?.waitingOn == .laneHead(edit, .conflicted)) }
    }

    @Test func reviseCorrectsARejectedWriteAndRefusesASettledOne() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(.respond(TransportResponse.error(422, code: "validation_failed", message: "Price must be positive")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(priceEdit(price: "-1"))
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .failed)
        let corrected = try await outbox.revise(id, payload: Data(#"{"price":1}"#.utf8))
        await outbox.drain()
        #expect(try outbox.operation(corrected)?.status == .synced)
        #expect(try outbox.operation(id)?.state.supersededReason == .revised)
        await #expect(throws: OutboxError.self) { _ = try await outbox.revise(corrected, payload: Data("{}".utf8)) }
        await #expect(throws: OutboxError.self) { _ = try await outbox.revise(id, payload: Data("not json".utf8)) }
    }
}

@Suite("Dependencies, coalescing, giving up, offline passes", .timeLimit(.minutes(10)))
struct DependencyTests {
    private func movement(of product: OperationID) -> OutboxRequest {
        OutboxRequest(businessID: "pharmacy-7", operationType: "stock.move", endpoint: "/stock", payload: Data(#"{"qty":3}"#.utf8),
                      entityID: "stock-1", category: "Stock", entityLabel: "3 x Antiseptic", summary: "Stock movement", dependsOn: [product])
    }

    @Test func aDependentIsSentOnlyAfterItsDependencySynced() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(.respond(TransportResponse.error(503, code: "down", message: "Down")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.maxConcurrentLanes = 4 }
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        let move = try await outbox.enqueue(movement(of: product))
        await outbox.drain()
        #expect(transport.requests.map(\.endpoint) == ["/products"], "the movement waits for its product")
        #expect(try outbox.operation(move)?.waitingOn == .dependency(product, .queued))
        #expect(try outbox.syncTab(isOnline: true).card("Stock")?.rows.first?.waitingReason == "Waits for Antiseptic 1 to sync first")
        journal.clock.advance(by: 10)
        await outbox.drain()
        #expect(transport.requests.map(\.endpoint) == ["/products", "/products", "/stock"])
        #expect(try outbox.operation(move)?.status == .synced)
    }

    @Test func aDependencyDiscardedBlocksTheDependentWithThatReason() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .respond(TransportResponse.error(403, code: "forbidden", message: "No"))))
        let outbox = try journal.open()
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        let move = try await outbox.enqueue(movement(of: product))
        await outbox.drain()
        #expect(try outbox.operation(move)?.waitingOn == .dependency(product, .blocked))
        try await outbox.discard(product)
        await outbox.drain()
        let row = try #require(try outbox.operation(move))
        #expect(row.status == .blocked && row.lastErrorCode == ErrorCode.dependencyEnded)
        #expect(row.state.endedDependency == product)
        #expect(journal.transport.requests.map(\.endpoint) == ["/products"])
    }

    @Test func aCorrectedDependencyCarriesItsDependentsOver() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(.respond(TransportResponse.error(422, code: "validation_failed", message: "Bad")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        let move = try await outbox.enqueue(movement(of: product))
        await outbox.drain()
        let corrected = try await outbox.revise(product, payload: productRequest(2).payload)
        #expect(try outbox.operation(move)?.waitingOn == .dependency(corrected, .queued))
        await outbox.drain()
        await outbox.drain()
        #expect(try outbox.operation(move)?.status == .synced)
        #expect(transport.requests.map(\.endpoint) == ["/products", "/products", "/stock"])
    }

    @Test func anUnknownDependencyIsRefusedBeforeAnythingIsWritten() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        await #expect(throws: OutboxError.self) { _ = try await outbox.enqueue(movement(of: OperationID())) }
        #expect(try outbox.ledger().entries.isEmpty)
    }

    @Test func aCoalescingTypeReplacesTheLanesLastUnsentRowOfItsType() async throws {
        let transport = ScriptedTransport(otherwise: created)
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.operationPolicies["product.update"] = .idempotent.coalescing() }
        defer { outbox.close() }
        let first = try await outbox.enqueue(priceEdit(price: "10"))
        let second = try await outbox.enqueue(priceEdit(price: "11"))
        #expect(try outbox.operation(first)?.status == .superseded)
        #expect(try outbox.operation(first)?.state.supersededReason == .coalesced)
        #expect(try outbox.operation(second)?.supersedes == first)
        await outbox.drain()
        #expect(transport.requests.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"price":11}"#])
        // Once a row was attempted it is never replaced.
        transport.setOtherwise(.fail(.offline))
        let third = try await outbox.enqueue(priceEdit(price: "12"))
        await outbox.drain()
        let fourth = try await outbox.enqueue(priceEdit(price: "13"))
        #expect(try outbox.operation(third)?.status == .queued && outbox.operation(fourth)?.supersedes == nil)
        #expect(try outbox.journalEvents(of: first).map(\.kind) == [.enqueued, .superseded], "the replaced payload stays in the history")
    }

    @Test func aRowStartedWhileItsReplacementWaitsIsQueuedBehindNotReplaced() async throws {
        let journal = TestJournal()
        let outbox = try journal.open { $0.operationPolicies["product.update"] = .idempotent.coalescing() }
        defer { outbox.close() }
        let first = try await outbox.enqueue(priceEdit(price: "10"))
        // The worker starts the first row after the second write chose to replace it, and its
        // start commits first: the replacement is refused, and the write queued behind instead.
        outbox.writer.hold()
        let started = Task {
            try await outbox.writer.append([JournalStore.Draft(operationID: first, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain)))])
        }
        while outbox.writer.pendingCount < 1 { await Task.yield() }
        let second = Task { try await outbox.enqueue(priceEdit(price: "11")) }
        while outbox.writer.pendingCount < 2 { await Task.yield() }
        outbox.writer.release()
        _ = try await started.value
        let id = try await second.value
        #expect(try outbox.operation(first)?.status == .syncing)
        #expect(try outbox.operation(id)?.status == .queued && outbox.operation(id)?.supersedes == nil)
        #expect(try outbox.operation(id)?.waitingOn == .laneHead(first, .syncing))
    }

    @Test func theRetryPolicyGivesUpPastItsLimitsAndARetryStartsOver() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .respond(TransportResponse.error(503, code: "down", message: "Down"))))
        let outbox = try journal.open { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 3) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        for _ in 0..<5 {
            await outbox.drain()
            journal.clock.advance(by: 400)
        }
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .failed && row.lastErrorCode == ErrorCode.gaveUp && row.attemptCount == 3)
        #expect(try outbox.metrics().gaveUp == 1)
        try await outbox.retry(id)
        for _ in 0..<5 {
            await outbox.drain()
            journal.clock.advance(by: 400)
        }
        #expect(try outbox.operation(id)?.attemptCount == 6, "three more after the retry")
    }

    @Test func theAgeLimitCountsFromTheFirstAttemptNotTheEnqueue() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let session = SwitchableSession(account: nil)
        let outbox = try journal.open(server: transport, session: session) { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(orAge: 3600) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        journal.clock.advance(by: 7200)
        await outbox.drain()
        #expect(try outbox.operation(id)?.attemptCount == 0, "signed out: never attempted, never aged")
        session.signIn(journal.account)
        for _ in 0..<4 {
            await outbox.drain()
            journal.clock.advance(by: 1200)
        }
        #expect(try outbox.operation(id)?.status == .failed)
    }

    @Test func anOfflinePassStopsAtItsFirstUnansweredAttemptAndTheTimerFollowsItsBackoff() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<5 { ids.append(try await outbox.enqueue(productRequest(number))) }
        await outbox.drain()
        #expect(transport.requests.count == 1)
        let first = try #require(try outbox.operation(ids[0]))
        #expect(first.attemptCount == 1 && first.nextAttemptAt != nil)
        #expect(try ids.dropFirst().allSatisfy { try outbox.operation($0)?.attemptCount == 0 })
        #expect(outbox.nextWake == first.nextAttemptAt, "the timer follows the attempted row, not the rows still due")
    }

    @Test func aSessionChangeIsRecordedOncePerChangeAndSaysWhyRowsWait() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let session = SwitchableSession(account: nil)
        let outbox = try journal.open(server: journal.transport, session: session)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        await outbox.drain()
        #expect(try outbox.operation(id)?.waitingOn == .noSession)
        session.signIn("member-7")
        await outbox.drain()
        #expect(try outbox.operation(id)?.waitingOn == .otherAccount)
        session.signIn(journal.account)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        let changes = try outbox.events(matching: EventQuery(kinds: [.sessionChanged])).events.map { event -> SessionObservation? in
            if case .sessionChanged(let changed) = event.body { return changed.observation }
            return nil
        }
        #expect(changes == [.signedOut, .otherAccount, .signedIn])
    }

    @Test func aPassWithNothingToStartStillRecordsASignInOrASignOut() async throws {
        let transport = ScriptedTransport(otherwise: created)
        transport.script(.respond(TransportResponse.error(503, code: "down", message: "Down")))
        let journal = TestJournal(transport: transport)
        let session = SwitchableSession(account: journal.account)
        let outbox = try journal.open(server: journal.transport, session: session)
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        let move = try await outbox.enqueue(movement(of: product))
        await outbox.drain()
        #expect(try outbox.operation(move)?.waitingOn == .dependency(product, .queued), "the product waits for its retry")

        // Nothing is due in these passes: the product's retry is ten seconds away.
        session.signOut()
        await outbox.drain()
        #expect(try outbox.operation(move)?.waitingOn == .noSession)
        session.signIn(journal.account)
        await outbox.drain()
        #expect(try outbox.operation(move)?.waitingOn == .dependency(product, .queued))
        let changes = try outbox.events(matching: EventQuery(kinds: [.sessionChanged])).events.map { event -> SessionObservation? in
            if case .sessionChanged(let changed) = event.body { return changed.observation }
            return nil
        }
        #expect(changes == [.signedOut, .signedIn])
        #expect(transport.requests.count == 1, "nothing was sent while signed out, nor before the retry's moment")
    }

    @Test func settledAnswersOnceTheRowLeavesTheQueue() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        async let settled = outbox.settled(id)
        await outbox.drain()
        #expect(try await settled.status == .synced)
        #expect(try await outbox.settled(id).status == .synced, "already settled: at once")
    }
}

extension OutboxRequest {
    func with(id: OperationID) -> OutboxRequest {
        var request = self
        request.operationID = id
        return request
    }
}
