import Foundation
import Observation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("What people see", .timeLimit(.minutes(10)))
struct ViewTests {
    @Test func thePharmacysAfternoonOnTheSyncTab() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        #expect(try outbox.syncTab(isOnline: false).banner.text == "You're all synced")

        // The signal drops; the antiseptic is saved.
        guard case .queued(let id) = try await outbox.save(productRequest(1)) else {
            Issue.record("an offline save is queued")
            return
        }
        let offline = try outbox.syncTab(isOnline: false)
        #expect(offline.banner.text == "Connect to the internet to sync these changes")
        let card = try #require(offline.card("Products"))
        #expect(card.countText == "1 change")
        #expect(card.rows.map(\.entityLabel) == ["Antiseptic 1"])
        #expect(card.rows.first?.summary == "New product")
        #expect(card.rows.first?.operationID == id)
        #expect(offline.totalCount == 1)
        #expect(try outbox.badgeCount() == 1)
        #expect(try outbox.syncTab(isOnline: true).banner.text == "These changes will sync automatically")

        // The signal returns; the worker drains.
        server.setOnline(true)
        journal.clock.advance(by: 2)
        await outbox.drain()
        let synced = try outbox.syncTab(isOnline: true)
        #expect(synced.banner.text == "You're all synced")
        #expect(synced.cards.isEmpty && synced.totalCount == 0)
        #expect(try outbox.badgeCount() == 0)

        // A submission that needs approval: on the tab's count, off the badge.
        server.inject(.holdForApproval(requestID: "apr-1"))
        _ = try await outbox.save(productRequest(2, category: "Employees"))
        let held = try outbox.syncTab(isOnline: true)
        #expect(held.cards.isEmpty)
        #expect(held.approvalCard?.count == 1)
        #expect(held.approvalCard?.rows.first?.status == .pendingApproval)
        #expect(held.totalCount == 1)
        #expect(try outbox.badgeCount() == 0)
        #expect(held.banner.kind == .waitingForApproval)
    }

    @Test func cardsHoldTheirNewestRowsFirstAndCountThemAll() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        for number in 1...5 {
            _ = try await outbox.enqueue(productRequest(number))
            journal.clock.advance(by: 60)
        }
        _ = try await outbox.enqueue(productRequest(6, category: "Employees"))
        let tab = try outbox.syncTab(isOnline: false, rowsPerCard: 3)
        #expect(tab.cards.map(\.category) == ["Employees", "Products"], "the card changed last comes first")
        let products = try #require(tab.card("Products"))
        #expect(products.count == 5)
        #expect(products.rows.map(\.entityLabel) == ["Antiseptic 5", "Antiseptic 4", "Antiseptic 3"])
        #expect(products.latestChangeAt == products.rows[0].changedAt)
        #expect(tab.totalCount == 6)
    }

    @Test func failedAndBlockedRowsSayWhy() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(
            .respond(.error(422, code: "validation_failed", message: "Price must be positive")),
            .respond(.error(403, code: "not_owner", message: "Only the owner may add products"))
        )
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        _ = try await outbox.enqueue(productRequest(2))
        await outbox.drain()
        let rows = try #require(try outbox.syncTab(isOnline: true).card("Products")).rows
        #expect(Set(rows.map(\.status)) == [.failed, .blocked])
        #expect(Set(rows.compactMap(\.lastErrorMessage)) == ["Price must be positive", "Only the owner may add products"])
        #expect(Set(rows.compactMap(\.lastErrorCode)) == ["validation_failed", "not_owner"])
        #expect(try outbox.syncTab(isOnline: true).banner.text == "2 changes need your attention")
    }

    @Test func theBadgeCountsOnlyWhatNeedsTheNetworkOrAPerson() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        var history = RandomHistory(seed: testSeed())
        for _ in 0..<400 { try await history.step(outbox, now: journal.clock.now()) }
        let statuses = try history.statuses.keys.map { try #require(try outbox.operationState($0)).status }
        let expected = statuses.filter { [.queued, .syncing, .failed, .blocked].contains($0) }.count
        let conflicts = statuses.filter { $0 == .conflicted }.count
        #expect(try outbox.badgeCount() == expected + conflicts, "a conflicted row needs a person: it counts on the badge")
        let approvals = statuses.filter { $0 == .pendingApproval }.count
        let tab = try outbox.syncTab(isOnline: true, rowsPerCard: 10_000)
        #expect(tab.badgeCount == expected + conflicts, "the tab carries the badge of its own snapshot")
        #expect(tab.totalCount == expected + approvals + conflicts)
        #expect(tab.cards.reduce(0) { $0 + $1.rows.count } == expected)
        #expect(tab.approvalCard?.count ?? 0 == approvals)
        #expect(tab.conflictCard?.count ?? 0 == conflicts)
        #expect(tab.conflictCard?.rows.count ?? 0 == conflicts)
        let depth = try outbox.metrics().queueDepth
        for status in OutboxStatus.allCases {
            #expect(depth[status] == statuses.filter { $0 == status }.count, "\(status)")
        }
    }

    @Test func ledgerRowsHoldNoPayloadAndNoPresentationText() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var request = productRequest(1)
        request.payload = Data(#"{"id":"p1","secret_price":"98765.43"}"#.utf8)
        request.entityLabel = "Confidential Label"
        request.summary = "Private Summary"
        let id = try await outbox.enqueue(request)
        await outbox.drain()
        let entries = try outbox.ledger().entries
        let entry = try #require(entries.first)
        #expect(entry.operationID == id)
        #expect(entry.operationType == "product.create" && entry.entityType == "product")
        #expect(entry.latestOutcome == "accepted" && entry.status == .synced && entry.isTerminal)
        #expect(entry.attempts == 1 && entry.serverRevision == "1")
        let encoded = String(decoding: try JSONEncoder().encode(entries), as: UTF8.self)
        for secret in ["98765.43", "secret_price", "Confidential Label", "Private Summary"] {
            #expect(!encoded.contains(secret))
        }
    }

    @Test func theLedgerFiltersByStatusAndTimeAndPages() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        var ids: [OperationID] = []
        let start = journal.clock.now()
        for number in 0..<10 {
            ids.append(try await outbox.enqueue(productRequest(number)))
            journal.clock.advance(by: 10)
        }
        for id in ids.prefix(3) { try await outbox.discard(id) }
        #expect(try outbox.ledger().entries.map(\.operationID) == ids)
        #expect(try outbox.ledger(LedgerQuery(status: .discarded)).entries.map(\.operationID) == Array(ids.prefix(3)))
        #expect(try outbox.ledger(LedgerQuery(status: .queued)).entries.count == 7)
        let window = try outbox.ledger(LedgerQuery(createdFrom: start.addingTimeInterval(20), createdBefore: start.addingTimeInterval(50))).entries
        #expect(window.map(\.operationID) == Array(ids[2..<5]))
        var paged: [OperationID] = []
        var query = LedgerQuery(limit: 4)
        repeat {
            let page = try outbox.ledger(query)
            paged += page.entries.map(\.operationID)
            query.after = page.nextAfter
        } while query.after != nil
        #expect(paged == ids)
    }

    @Test func metricsFollowTheClockAndCountConflictsByType() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.apply, .respond(.error(409, code: "idempotency_conflict", message: "Different body")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1))
        var employee = productRequest(2)
        employee.operationType = "employee.create"
        _ = try await outbox.enqueue(employee)
        journal.clock.advance(by: 90)
        let waiting = try outbox.metrics()
        #expect(waiting.oldestPendingAgeSeconds == 90)
        #expect(waiting.oldestPendingOperation == first)
        journal.clock.advance(by: 30)
        #expect(try outbox.metrics().oldestPendingAgeSeconds == 120)

        await outbox.drain()
        let settled = try outbox.metrics()
        #expect(settled.oldestPendingAgeSeconds == nil)
        #expect(settled.totalAttempts == 2)
        #expect(settled.accepted == 1 && settled.blocked == 1 && settled.rejected == 0)
        #expect(settled.conflictsByOperationType == ["employee.create": 1])
        #expect(settled.queueDepth[.synced] == 1 && settled.queueDepth[.blocked] == 1)
        #expect(settled.journalEvents == Int(try outbox.lastSeq().rawValue))
        #expect(settled.journalEventBytes > 0 && settled.journalFileBytes > settled.journalEventBytes)
    }

    @Test func viewsEqualTheSameViewsFoldedFromTheEventsAlone() async throws {
        let seed = testSeed()
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        var history = RandomHistory(seed: seed)
        for _ in 0..<600 { try await history.step(outbox, now: journal.clock.now()) }
        let schema = outbox.store.schema
        let image = try outbox.store.read { txn in try ProjectionImage.build(schema: schema, in: txn) }
        let folded = image.states.values
        #expect(try outbox.badgeCount() == folded.filter(\.status.countsOnBadge).count, "seed \(seed)")
        #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries == folded.sorted { $0.firstSeq < $1.firstSeq }.map(LedgerEntry.init), "seed \(seed)")
        let tab = try outbox.syncTab(isOnline: true, rowsPerCard: .max)
        // Conflicted rows wait on their own card, the rest by category.
        let waitingByCategory = Dictionary(grouping: folded.filter { $0.status.countsOnBadge && $0.status != .conflicted }, by: \.category)
        #expect(Dictionary(uniqueKeysWithValues: tab.cards.map { ($0.category, $0.count) }) == waitingByCategory.mapValues(\.count), "seed \(seed)")
        for card in tab.cards {
            let expected = waitingByCategory[card.category, default: []].sorted { $0.latestSeq > $1.latestSeq }.map(SyncTab.Row.init)
            // What holds a queued row is read with the tab, not folded: compared apart.
            #expect(card.rows.map(\.withoutWaitingReason) == expected, "seed \(seed): \(card.category)")
        }
        let conflicted = folded.filter { $0.status == .conflicted }
        #expect(tab.conflictCard?.count ?? 0 == conflicted.count, "seed \(seed)")
        #expect(Set(tab.conflictCard?.rows.map(\.operationID) ?? []) == Set(conflicted.map(\.id)), "seed \(seed)")
    }
}

@Suite("What a person decides", .timeLimit(.minutes(10)))
struct DecisionTests {
    @Test func retryPutsAFailedRowBackAndWakesTheWorker() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(403, code: "not_owner", message: "Ask the owner")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .blocked)
        // The owner granted the capability; the member retries. No drain: the retry wakes it.
        try await outbox.retry(id)
        try await eventually(outbox) { try outbox.operation(id)?.status == .synced }
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .requeued, .attemptStarted, .attemptFinished])
        await #expect(throws: OutboxError.self) { try await outbox.retry(id) }
    }

    @Test func discardKeepsThePayloadReadable() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(409, code: "idempotency_conflict", message: "Different body")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let request = productRequest(1)
        let id = try await outbox.enqueue(request)
        await outbox.drain()
        try await outbox.discard(id)
        #expect(try outbox.operation(id)?.status == .discarded)
        let enqueued = try outbox.journalEvents(of: id).compactMap { event -> Enqueued? in
            if case .enqueued(let enqueued) = event.body { return enqueued }
            return nil
        }
        #expect(enqueued.first?.request.payload == request.payload)
        guard case .discarded(let discarded) = try outbox.journalEvents(of: id).last?.body else { return }
        #expect(discarded.requestedBy == .member && discarded.reason == .memberDiscarded)
    }

    @Test func approvalDecisionsSettleHeldRows() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.holdForApproval(requestID: "apr-1"), .holdForApproval(requestID: "apr-2"), .noResponse(.offline))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let approved = try await outbox.enqueue(productRequest(1))
        let rejected = try await outbox.enqueue(productRequest(2))
        let queued = try await outbox.enqueue(productRequest(3))
        await outbox.drain()
        // Only the first two reached the server (the third met the network down).
        #expect(try outbox.operation(approved)?.approvalRequestID == "apr-1")
        try await outbox.recordApprovalDecision(approved, approved: true, reference: "owner")
        try await outbox.recordApprovalDecision(rejected, approved: false)
        #expect(try outbox.operation(approved)?.status == .synced)
        let refused = try #require(try outbox.operation(rejected))
        #expect(refused.status == .failed && refused.lastErrorCode == "approval_rejected")
        await #expect(throws: OutboxError.self) { try await outbox.recordApprovalDecision(queued, approved: true) }
        await #expect(throws: OutboxError.self) { try await outbox.recordApprovalDecision(approved, approved: true) }
    }

    @Test func signOutRefusesWithPendingWorkThenDiscardsWithReasons() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.apply, .respond(.error(422, code: "validation_failed", message: "Bad")), .holdForApproval(requestID: "apr-1"))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<3 { ids.append(try await outbox.enqueue(productRequest(number))) }
        await outbox.drain()
        server.setOnline(false)
        ids.append(try await outbox.enqueue(productRequest(3)))
        // The worker, started by the drain, sends the new row at once and meets no signal: its
        // attempt ends (queued again, retried later) before the sign-out is asked.
        await outbox.settle()
        // synced, failed, pending approval, queued
        let waiting = [PendingWrite(operationID: ids[1], category: "Products", entityLabel: "Antiseptic 1", summary: "New product", status: .failed),
                       PendingWrite(operationID: ids[3], category: "Products", entityLabel: "Antiseptic 3", summary: "New product", status: .queued)]
        await #expect(throws: OutboxError.pendingWork(count: 2, writes: waiting)) { try await outbox.signOut(discardPending: false) }
        #expect(try outbox.operation(ids[3])?.status == .queued, "a refused sign-out changes nothing")

        try await outbox.signOut(discardPending: true)
        let statuses = try ids.map { try outbox.operation($0)?.status }
        #expect(statuses == [.synced, .discarded, .pendingApproval, .discarded])
        for id in [ids[1], ids[3]] {
            guard case .discarded(let discarded) = try outbox.journalEvents(of: id).last?.body else {
                Issue.record("no discard recorded")
                continue
            }
            #expect(discarded.reason == .signOut)
        }
        #expect(try outbox.badgeCount() == 0)
        // The worker sends nothing more.
        server.setOnline(true)
        _ = try await outbox.enqueue(productRequest(9))
        await outbox.drain()
        #expect(server.records.count == 2)
    }

    @Test func signOutWithNothingWaitingSucceedsAtOnce() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        try await outbox.signOut(discardPending: false)
    }

    @Test func wipingRefusesWhileOpenThenRemovesTheJournal() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        _ = try await outbox.enqueue(productRequest(1))
        #expect(throws: OutboxError.self) { try Outbox.wipeJournal(at: journal.directory) }
        outbox.close()
        try Outbox.wipeJournal(at: journal.directory)
        #expect(!FileManager.default.fileExists(atPath: journal.directory.path))
    }

    /// A decision on a row at the head of its lane.
    enum LaneHeadDecision: CaseIterable, Sendable {
        case discard, approve, keepTheirs
    }

    @Test(arguments: LaneHeadDecision.allCases)
    func aDecisionThatFreesALaneSendsTheRowsBehindItWithoutAnotherWake(_ decision: LaneHeadDecision) async throws {
        let transport = ScriptedTransport(otherwise: .respond(TransportResponse.json(201, #"{"revision":"2"}"#)))
        switch decision {
        case .discard: transport.script(.respond(TransportResponse.error(403, code: "not_owner", message: "Ask the owner")))
        case .approve: transport.script(.respond(TransportResponse.json(202, #"{"request_id":"apr-1"}"#)))
        case .keepTheirs: transport.script(.respond(TransportResponse.error(412, code: "revision_conflict", message: "Changed elsewhere")))
        }
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        var first = productRequest(1, entityID: "shelf-1")
        first.baseRevision = "1"
        let head = try await outbox.enqueue(first)
        let behind = try await outbox.enqueue(productRequest(2, entityID: "shelf-1"))
        await outbox.drain()
        #expect(try outbox.operation(behind)?.waitingOn.map { if case .laneHead(head, _) = $0 { true } else { false } } == true)
        switch decision {
        case .discard: try await outbox.discard(head)
        case .approve: try await outbox.recordApprovalDecision(head, approved: true)
        case .keepTheirs: try await outbox.resolveConflict(head, keeping: .theirs)
        }
        // No wake from the app: the decision itself lets the worker know.
        await outbox.settle()
        #expect(try outbox.operation(behind)?.status == .synced)
        #expect(transport.requests.count == 2)
    }
}

@Suite("Reactive reads", .timeLimit(.minutes(10)))
struct ReactiveTests {
    @Test func syncTabUpdatesYieldTheNewestTab() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        var tabs = outbox.syncTabUpdates(isOnline: { false }).makeAsyncIterator()
        #expect(await tabs.next()?.totalCount == 0)
        _ = try await outbox.enqueue(productRequest(1))
        var latest = try #require(await tabs.next())
        while latest.totalCount < 1 { latest = try #require(await tabs.next()) }
        #expect(latest.card("Products")?.count == 1)
        #expect(latest.banner.kind == .offline)
    }

    @Test @MainActor func theObservableModelFollowsCommits() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        let model = SyncTabModel(outbox: outbox, isOnline: false)
        #expect(model.badgeCount == 0)
        #expect(model.tab.banner.text == "You're all synced")
        _ = try await outbox.enqueue(productRequest(1))
        while model.badgeCount == 0 {
            await withCheckedContinuation { continuation in
                withObservationTracking { _ = model.badgeCount } onChange: { continuation.resume() }
            }
        }
        #expect(model.badgeCount == 1)
        #expect(model.tab.banner.text == "Connect to the internet to sync these changes")
        model.isOnline = true
        #expect(model.tab.banner.text == "These changes will sync automatically")
    }
}

extension SyncTab.Row {
    var withoutWaitingReason: SyncTab.Row {
        var row = self
        row.waitingReason = nil
        return row
    }
}
