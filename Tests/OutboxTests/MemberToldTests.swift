import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import Synchronization
import Testing

/// An edit of product `number`'s price, against `revision`.
private func priceEdit(_ number: Int = 1, price: String, revision: String? = "r1") -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7", operationType: "product.update", method: "PATCH", endpoint: "/products/product-\(number)",
        payload: Data(#"{"price":\#(price)}"#.utf8), entityID: "product-\(number)", category: "Products",
        entityLabel: "Antiseptic \(number)", summary: "New price", baseRevision: revision
    )
}

/// A 412 answer, as a server whose record moved on sends it.
private let preconditionFailed = ScriptedTransport.Step.respond(TransportResponse(
    statusCode: 412, headers: ["ETag": "\"r2\"", "Content-Type": "application/json"],
    body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere","current":{"price":13}}"#.utf8)))
private let created = ScriptedTransport.Step.respond(TransportResponse.json(201, #"{"id":"p","revision":"r9"}"#))
private let unavailable = ScriptedTransport.Step.respond(TransportResponse.error(503, code: "down", message: "Down"))

/// Every decision the engine makes for the member leaves a notice on the Sync tab (for a while)
/// and a mark in the ledger (for good); coalescing, which sends the member's own newer value,
/// is in the ledger only.
@Suite("Decisions the member is told of", .timeLimit(.minutes(5)))
struct DecisionNoticeTests {
    enum Decision: String, CaseIterable, Sendable {
        case serverWins, rebase, giveUp, coalesce

        var expected: AutomaticDecision {
            switch self {
            case .serverWins: .serverKept
            case .rebase: .resentOverServer
            case .giveUp: .gaveUp
            case .coalesce: .coalesced
            }
        }

        var text: String? {
            switch self {
            case .serverWins: "Resolved for you: the server's version of Antiseptic 1 was kept, and your change was not sent"
            case .rebase: "Resolved for you: your change to Antiseptic 1 was sent over a change made elsewhere"
            case .giveUp: "Not sent: Antiseptic 1 could not reach the server after 2 tries"
            case .coalesce: nil
            }
        }
    }

    /// Opens a journal whose server makes the engine take `decision`, and drives it there.
    /// - Returns: the outbox and the write decided about.
    static func decided(_ decision: Decision, _ journal: TestJournal) async throws -> (Outbox, OperationID) {
        let transport = journal.transport
        let outbox = try journal.open {
            switch decision {
            case .serverWins: $0.operationPolicies["product.update"] = .idempotent.onConflict(.serverWins)
            case .rebase: $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 1))
            case .giveUp: $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 2)
            case .coalesce: $0.operationPolicies["product.update"] = .idempotent.coalescing()
            }
        }
        switch decision {
        case .serverWins, .rebase:
            transport.script(preconditionFailed, created)
            let id = try await outbox.enqueue(priceEdit(price: "12"))
            await outbox.drain()
            await outbox.drain()
            return (outbox, id)
        case .giveUp:
            transport.setOtherwise(unavailable)
            let id = try await outbox.enqueue(priceEdit(price: "12"))
            for _ in 0..<3 {
                await outbox.drain()
                journal.clock.advance(by: 400)
            }
            return (outbox, id)
        case .coalesce:
            transport.setOtherwise(created)
            let id = try await outbox.enqueue(priceEdit(price: "10"))
            _ = try await outbox.enqueue(priceEdit(price: "11"))
            await outbox.drain()
            return (outbox, id)
        }
    }

    @Test(arguments: Decision.allCases)
    func eachDecisionIsInTheLedgerAndThoseThatDropOrRewriteAreOnTheTab(_ decision: Decision) async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let (outbox, id) = try await Self.decided(decision, journal)
        defer { outbox.close() }
        let entry = try #require(try outbox.ledger().entries.first { $0.operationID == id })
        #expect(entry.decision == decision.expected)
        // The notices index, as appended, is what a rebuild from the events makes.
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
        let notices = try outbox.syncTab(isOnline: true).notices
        if let text = decision.text {
            #expect(notices.map(\.operationID) == [id])
            #expect(notices.first?.decision == decision.expected && notices.first?.text == text)
            #expect(notices.first?.entityLabel == "Antiseptic 1" && notices.first?.category == "Products")
        } else {
            #expect(notices.isEmpty, "the member's own newer value was sent: nothing to tell")
        }
    }

    @Test(arguments: [Decision.serverWins, .rebase, .giveUp])
    func aNoticeLeavesTheTabAfterItsTimeAndTheLedgerKeepsIt(_ decision: Decision) async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let (outbox, id) = try await Self.decided(decision, journal)
        defer { outbox.close() }
        let decidedAt = try #require(try outbox.syncTab(isOnline: true).notices.first?.decidedAt)
        journal.clock.set(to: decidedAt.addingTimeInterval(7 * 86_400 - 1))
        #expect(try outbox.syncTab(isOnline: true).notices.count == 1, "shown for the configured 7 days")
        journal.clock.set(to: decidedAt.addingTimeInterval(7 * 86_400 + 1))
        #expect(try outbox.syncTab(isOnline: true).notices.isEmpty)
        #expect(try outbox.ledger().entries.first { $0.operationID == id }?.decision == decision.expected)
    }

    @Test func aPersonsRetryOfAWriteGivenUpTakesTheDecisionBack() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let (outbox, id) = try await Self.decided(.giveUp, journal)
        defer { outbox.close() }
        #expect(try outbox.syncTab(isOnline: true).notices.count == 1)
        try await outbox.retry(id)
        #expect(try outbox.syncTab(isOnline: true).notices.isEmpty)
        #expect(try outbox.ledger().entries.first { $0.operationID == id }?.decision == nil)
    }

    @Test func aDecisionSurvivesARebuildAndACompaction() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let (outbox, id) = try await Self.decided(.serverWins, journal)
        // Rebuilt from the events, the stored projections show the notice as appended.
        let store = outbox.store
        try JournalStore.rebuildProjections(environment: store.environment, schema: store.schema, options: store.options)
        #expect(try outbox.syncTab(isOnline: true).notices.map(\.operationID) == [id])
        _ = try await outbox.compact(before: journal.clock.now().addingTimeInterval(1))
        #expect(try store.compareProjectionsWithRebuild().isEmpty, "the compacted write's notice key is gone")
        let entry = try #require(try outbox.ledger().entries.first { $0.operationID == id })
        #expect(entry.decision == .serverKept && entry.status == .discarded)
        #expect(try outbox.operation(id)?.compactedAt != nil)
        #expect(try outbox.syncTab(isOnline: true).notices.isEmpty, "a compacted write is in the ledger alone")
        outbox.close()
        // The ledger row is rebuilt from the compacted event alone.
        let reader = try JournalReader(directory: journal.directory)
        defer { reader.close() }
        #expect(try reader.ledger().entries.first { $0.operationID == id }?.decision == .serverKept)
    }
}

/// A write first sent longer ago than the server keeps its idempotency claims is never replayed
/// blindly: it is blocked for a person, who checks and resends or corrects it.
@Suite("Claims the server may have forgotten", .timeLimit(.minutes(5)))
struct ClaimRetentionTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        /// How long after its first attempt the write is due again.
        var waitedSeconds: TimeInterval
        /// What the server announces on its first answer (`Outbox-Claim-Retention`).
        var announced: String?
        var blocked: Bool
        var description: String { name }
    }

    static let day: TimeInterval = 86_400
    static let cases: [Case] = [
        Case(name: "a day old", waitedSeconds: day, announced: nil, blocked: false),
        Case(name: "just inside 30 days less the margin", waitedSeconds: 29 * day - 60, announced: nil, blocked: false),
        Case(name: "just past 30 days less the margin", waitedSeconds: 29 * day + 60, announced: nil, blocked: true),
        Case(name: "past the shorter retention the server announced", waitedSeconds: 1.5 * day, announced: "172800", blocked: true),
        Case(name: "inside the shorter retention the server announced", waitedSeconds: 0.5 * day, announced: "172800", blocked: false),
        Case(name: "an announcement that is not whole seconds is ignored", waitedSeconds: 1.5 * day, announced: "soon", blocked: false),
    ]

    @Test(arguments: cases)
    func aWriteOlderThanTheRetentionIsBlockedNotReplayed(_ row: Case) async throws {
        let transport = ScriptedTransport(otherwise: created)
        var first = TransportResponse.error(503, code: "down", message: "Down")
        if let announced = row.announced { first.headers[OutboxHeader.claimRetention] = announced }
        transport.script(.respond(first))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .queued)
        journal.clock.advance(by: row.waitedSeconds)
        await outbox.drain()
        let snapshot = try #require(try outbox.operation(id))
        if row.blocked {
            #expect(snapshot.status == .blocked && snapshot.lastErrorCode == ErrorCode.claimMayBeForgotten)
            #expect(transport.requests.count == 1, "not sent again under a key the server may have forgotten")
            #expect(try outbox.journalEvents(of: id).last?.kind == .claimMayBeForgotten)
            #expect(try outbox.syncTab(isOnline: true).cards.first?.rows.first?.lastErrorCode == ErrorCode.claimMayBeForgotten)
            // A person checked: their retry sends it, and its claim's age starts over.
            try await outbox.retry(id)
            await outbox.drain()
            #expect(try outbox.operation(id)?.status == .synced && transport.requests.count == 2)
        } else {
            #expect(snapshot.status == .synced && transport.requests.count == 2)
        }
    }

    /// Only a person's retry of a claim block starts the claim's age over: a retry of a write the
    /// retry policy gave up keeps it, since the server's claim (if the first attempt landed) is
    /// as old as ever.
    @Test func aRetryOfAWriteGivenUpKeepsItsClaimsAge() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 1) }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.operation(id)?.lastErrorCode == ErrorCode.gaveUp)
        let first = try #require(try outbox.operation(id)?.state.firstAttemptAt)
        journal.clock.advance(by: 28 * Self.day)
        try await outbox.retry(id)
        #expect(try outbox.operation(id)?.state.firstAttemptAt == first, "the member's retry of a write given up keeps its age")
        await outbox.drain()
        journal.clock.advance(by: 2 * Self.day)
        transport.setOtherwise(created)
        try await outbox.retry(id)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .blocked && row.lastErrorCode == ErrorCode.claimMayBeForgotten, "30 days after its first attempt")
        // The person checked the server: their retry of the claim block sends it.
        try await outbox.retry(id)
        #expect(try outbox.operation(id)?.state.firstAttemptAt == nil)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
    }

    @Test func aWriteNeverSentIsSentHoweverOld() async throws {
        let transport = ScriptedTransport(otherwise: created)
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        journal.clock.advance(by: 90 * Self.day)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced, "no key was ever sent: nothing for the server to forget")
    }

    static let outOfRange: [Double] = [0, -5, 40 * 86_400]

    @Test(arguments: outOfRange)
    func aRetentionOutOfRangeIsRefusedNamingItsField(_ value: Double) throws {
        let field = value > 0 ? "claimRetentionMarginSeconds" : "claimRetentionSeconds"
        let journal = TestJournal()
        do {
            let outbox = try journal.open {
                if field == "claimRetentionSeconds" { $0.claimRetentionSeconds = value } else { $0.claimRetentionMarginSeconds = value }
            }
            outbox.close()
            Issue.record("opened with \(field) = \(value)")
        } catch OutboxError.invalidConfiguration(let named, _) {
            #expect(named == field)
        } catch {
            Issue.record("refused with \(error)")
        }
    }
}

/// A journal restored from a backup onto another installation never replays its writes
/// silently: they wait until the app revalidates them.
@Suite("A journal copied to another installation", .timeLimit(.minutes(5)))
struct InstallationTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var createdOn: String?
        var openedOn: String?
        var held: Bool
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "the same installation", createdOn: "install-A", openedOn: "install-A", held: false),
        Case(name: "another installation", createdOn: "install-A", openedOn: "install-B", held: true),
        Case(name: "a journal that named none, opened where one is named", createdOn: nil, openedOn: "install-B", held: false),
        Case(name: "an app that stopped naming one", createdOn: "install-A", openedOn: nil, held: false),
    ]

    @Test(arguments: cases)
    func aCopiedJournalsWritesWaitUntilTheAppAdoptsThem(_ row: Case) async throws {
        let original = TestJournal(transport: ScriptedTransport(otherwise: .fail(.offline)))
        let first = try original.open { $0.installation = row.createdOn }
        // Saved with no signal: it waits, never sent.
        let id = try await first.enqueue(productRequest(1))
        first.close()

        // The backup lands on the other device: the same bytes in another directory.
        let server = ScriptedTransport(otherwise: created)
        let restored = TestJournal(transport: server)
        try FileManager.default.copyItem(at: original.directory, to: restored.directory)
        let outbox = try restored.open { $0.installation = row.openedOn }
        defer { outbox.close() }
        await outbox.drain()
        guard row.held else {
            #expect(try outbox.operation(id)?.status == .synced)
            #expect(try outbox.restoredInstallation() == nil)
            return
        }
        #expect(server.requests.isEmpty, "nothing replayed silently")
        #expect(try outbox.operation(id)?.waitingOn == .otherInstallation(madeOn: "install-A"))
        #expect(try outbox.restoredInstallation() == "install-A")
        let tab = try outbox.syncTab(isOnline: true)
        #expect(tab.banner.kind == .otherInstallation)
        #expect(tab.cards.first?.rows.first?.waitingReason == "Made on another device: waits until this one is confirmed to send it")

        #expect(try await outbox.adoptInstallation())
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(server.requests.map { $0.headers[OutboxHeader.idempotencyKey] } == [id.idempotencyKey], "under its own key")
        #expect(try outbox.restoredInstallation() == nil)
        #expect(try await outbox.adoptInstallation() == false, "nothing left to adopt")
        let adopted = try outbox.events(limit: 1_000).compactMap { event -> InstallationAdopted? in
            if case .installationAdopted(let adopted) = event.body { return adopted } else { return nil }
        }
        #expect(adopted == [InstallationAdopted(previous: "install-A", installation: "install-B")])
    }

    @Test func theInstallationIsRecordedAtTheOpeningAndItsOwnJournalSends() async throws {
        let journal = TestJournal(transport: ScriptedTransport(otherwise: created))
        let outbox = try journal.open { $0.installation = "install-A" }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        let opened = try outbox.events(limit: 100).compactMap { event -> JournalOpened? in
            if case .journalOpened(let opened) = event.body { return opened } else { return nil }
        }
        #expect(opened.map(\.installation) == ["install-A"], "the installation is recorded at the opening")
    }
}

/// What the Sync tab says: never that changes sync on their own while they cannot, and the
/// approval card in the member's nouns.
@Suite("The Sync tab's words", .timeLimit(.minutes(5)))
struct SyncTabWordsTests {
    struct BannerCase: Sendable, CustomStringConvertible {
        var name: String
        var isOnline: Bool
        var hold: SyncTab.Banner.Hold?
        var kind: SyncTab.Banner.Kind
        var text: String
        var description: String { name }
    }

    static let banners: [BannerCase] = [
        BannerCase(name: "online", isOnline: true, hold: nil, kind: .willSync, text: "These changes will sync automatically"),
        BannerCase(name: "offline", isOnline: false, hold: nil, kind: .offline, text: "Connect to the internet to sync these changes"),
        BannerCase(name: "a 401 paused the worker", isOnline: true, hold: .signIn, kind: .signInRequired, text: "Sign in to sync these changes"),
        BannerCase(name: "paused and offline", isOnline: false, hold: .signIn, kind: .signInRequired, text: "Sign in to sync these changes"),
        BannerCase(name: "made on another installation", isOnline: true, hold: .otherInstallation, kind: .otherInstallation,
                   text: "These changes were made on another device and wait to be confirmed"),
    ]

    @Test(arguments: banners)
    func theBannerNeverPromisesASyncThatCannotHappen(_ row: BannerCase) {
        let banner = SyncTab.Banner.make(isOnline: row.isOnline, waitingForNetwork: 2, needingAttention: 0, waitingForApproval: 0, hold: row.hold)
        #expect(banner.kind == row.kind && banner.text == row.text)
    }

    @Test func aPauseBy401MakesTheBannerAskToSignIn() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.error(401, code: "token_expired", message: "Sign in again")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(try outbox.workerPause() != nil)
        let tab = try outbox.syncTab(isOnline: true)
        #expect(tab.banner.kind == .signInRequired && tab.banner.text == "Sign in to sync these changes")
    }

    static let nouns = ["Products": OutboxConfiguration.CategoryNoun(one: "product", other: "products"),
                        "Employees": OutboxConfiguration.CategoryNoun(one: "employee", other: "employees")]

    static let headlines: [([(String, Int)], String)] = [
        ([("Products", 1)], "1 product is waiting for approval"),
        ([("Products", 3)], "3 products are waiting for approval"),
        ([("Products", 1), ("Employees", 2)], "2 employees and 1 product are waiting for approval"),
        ([("Notes", 1)], "1 change in Notes is waiting for approval"),
        ([("Products", 1), ("Employees", 1), ("Notes", 2)], "1 employee, 2 changes in Notes and 1 product are waiting for approval"),
    ]

    @Test func theApprovalCardCountsEachCategoryInItsNoun() {
        var configuration = OutboxConfiguration(account: "member-42")
        configuration.categoryNouns = Self.nouns
        let wording = SyncTabWording(configuration)
        for (counts, headline) in Self.headlines {
            #expect(wording.approvalHeadline(counts.map { (category: $0.0, count: $0.1) }) == headline)
        }
    }

    @Test func aWriteSentForApprovalIsCountedOnTheCardAsSeedWordsIt() async throws {
        let transport = ScriptedTransport(otherwise: .respond(TransportResponse.json(202, #"{"request_id":"apr-1"}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.categoryNouns = Self.nouns }
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        let tab = try outbox.syncTab(isOnline: true)
        #expect(tab.approvalCard?.headline == "1 product is waiting for approval")
        #expect(tab.cards.allSatisfy { $0.headline == nil })
    }
}
