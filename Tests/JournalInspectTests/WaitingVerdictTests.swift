import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// A queued write's verdict says what holds it and what would release it: the write it waits
/// behind or depends on (its label, status and the server's words), a 401's pause and since
/// when, a session signed out or of another account, an app that has not run since the write was
/// due; and a run of identical answers in one clause.
@Suite("Verdicts that say what a write waits for", .hangGuard)
struct WaitingVerdictTests {
    let directory = TemporaryDirectory()

    private var journal: URL { directory.path("journal") }

    private func open(_ clock: ManualClock, _ transport: any OutboxTransport, session: (any OutboxSession)? = nil,
                      retryPolicy: OperationTypePolicy.RetryPolicy = .standard) throws -> Outbox {
        try Outbox(directory: journal, transport: transport, configuration: OutboxConfiguration(
            account: "member-42", retryPolicy: retryPolicy, clock: clock, session: session, defaultPolicy: .idempotent, durability: .processCrash))
    }

    private func run(_ arguments: [String], now: String = "2027-01-16T08:00:00Z",
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path] + arguments + ["--now", now])
        #expect(try dataFileDigest(journal) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        #expect(result.code == .success && result.errors.isEmpty, "\(arguments): \(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    private func verdict(_ id: OperationID, now: String = "2027-01-16T08:00:00Z",
                         sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let text = try run(["timeline", EventText.shortID(id)], now: now, sourceLocation: sourceLocation)
        return text.split(separator: "\n").last { $0.hasPrefix("Verdict: ") }.map { String($0.dropFirst("Verdict: ".count)) } ?? ""
    }

    @Test func aWriteBehindARefusedOneNamesItTheServersWordsAndWhatReleasesIt() async throws {
        let clock = ManualClock()
        let server = InMemoryServer()
        let outbox = try open(clock, server)
        server.inject(.respond(.error(422, code: "validation_failed", message: "The barcode must have 13 digits")))
        let head = try await outbox.enqueue(product(1, label: "Gauze 10 cm", entityID: "gauze-10"))
        await outbox.drain()
        clock.advance(by: 7 * 86_400)
        let held = try await outbox.enqueue(product(2, label: "Gauze 10 cm, new price", type: "product.update", entityID: "gauze-10"))
        await outbox.drain()
        outbox.close()

        #expect(try verdict(held, now: "2027-01-23T09:00:00Z") == "queued: not attempted yet; it waits behind \(EventText.shortID(head)) "
            + #""Gauze 10 cm" (failed: 422, validation_failed: "The barcode must have 13 digits"), an earlier write to the same "#
            + "record (gauze-10): it is sent once that one is corrected (revise), retried or discarded by a person")
        let row = try run(["ops"], now: "2027-01-23T09:00:00Z").split(separator: "\n").first { $0.hasPrefix(EventText.shortID(held)) }
        #expect(row?.hasSuffix("behind \(EventText.shortID(head)) (failed)") == true, "\(row ?? "")")
    }

    @Test func aWriteWhoseDependencyFailedSaysItNeedsAPersonFirst() async throws {
        let clock = ManualClock()
        let server = InMemoryServer()
        let outbox = try open(clock, server)
        server.inject(.respond(.error(403, code: "forbidden", message: "Only the owner may add suppliers")))
        let supplier = try await outbox.enqueue(product(1, label: "Supplier Adeyemi", category: "Suppliers", type: "supplier.create"))
        await outbox.drain()
        var order = product(2, label: "Order from Adeyemi", category: "Orders", type: "order.create")
        order.dependsOn = [supplier]
        let dependent = try await outbox.enqueue(order)
        await outbox.drain()
        outbox.close()

        #expect(try verdict(dependent) == "queued: not attempted yet; it depends on \(EventText.shortID(supplier)) \"Supplier Adeyemi\" "
            + #"(blocked: 403, forbidden: "Only the owner may add suppliers"), not synced yet: it is sent once that one is synced, "#
            + "which needs a person first")
        #expect(try run(["ops"]).contains("depends on \(EventText.shortID(supplier)) (blocked)"))
    }

    @Test func aPauseSaysSinceWhenAndByWhichWrite() async throws {
        let clock = ManualClock()
        let server = InMemoryServer()
        let outbox = try open(clock, server)
        server.inject(.respond(.error(401, code: "token_expired", message: "Your session expired")))
        let first = try await outbox.enqueue(product(1))
        await outbox.drain()
        clock.advance(by: 600)
        let second = try await outbox.enqueue(product(2))
        await outbox.drain()
        outbox.close()

        #expect(try verdict(first).hasSuffix("the worker is paused since 2027-01-15T08:00:00Z by this write's 401 (token_expired): "
            + "nothing is sent until the session is refreshed (the member signs in again)"))
        #expect(try verdict(second) == "queued: not attempted yet, due now; the worker is paused since 2027-01-15T08:00:00Z by a 401 on "
            + #"\#(EventText.shortID(first)) (token_expired: "Your session expired"): nothing is sent until the session is refreshed "#
            + "(the member signs in again)")
    }

    @Test func aSessionSignedOutOrOfAnotherAccountIsSaid() async throws {
        let clock = ManualClock()
        let session = SwitchableSession(account: "member-42")
        var outbox = try open(clock, InMemoryServer(), session: session)
        session.signOut()
        clock.advance(by: 60)
        let waiting = try await outbox.enqueue(product(1))
        await outbox.drain()
        outbox.close()
        #expect(try verdict(waiting) == "queued: not attempted yet, due now; nobody is signed in since 2027-01-15T08:01:00Z: nothing is "
            + "sent until the member signs in again")
        #expect(try run([]).contains("Session         nobody signed in since 2027-01-15T08:01:00Z (23 h 59 min ago); nothing is sent "
            + "until the member signs in"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(try run(["--json"]).utf8)) as? [String: Any])
        let worker = try #require(summary["worker"] as? [String: Any])
        #expect(worker["session"] as? String == "signedOut" && worker["sessionSince"] as? String == "2027-01-15T08:01:00Z")

        clock.advance(by: 60)
        session.signIn("member-77")
        outbox = try open(clock, InMemoryServer(), session: session)
        await outbox.drain()
        outbox.close()
        #expect(try verdict(waiting) == "queued: not attempted yet, due now; another account is signed in since 2027-01-15T08:02:00Z: "
            + "nothing is sent under it; it is sent once member-42 signs in again")
    }

    @Test func identicalAnswersAreOneClauseAndARowAndAnAppNotRunSinceIsSaid() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(otherwise: .respond(.error(503, code: "server_unavailable", message: "Planned maintenance")))
        let outbox = try open(clock, transport, retryPolicy: OperationTypePolicy.RetryPolicy(initialDelaySeconds: 60, multiplier: 1, maxDelaySeconds: 60))
        let id = try await outbox.enqueue(product(1))
        await outbox.drain()
        for _ in 2...6 {
            clock.advance(by: 60)
            await outbox.settle()
        }
        outbox.close()

        // Six attempts a minute apart, the last at 08:05; due again at 08:06, and nothing since.
        #expect(try verdict(id, now: "2027-01-15T09:00:00Z") == "queued: 6 attempts, due since 2027-01-15T08:06:00Z; all 6 attempts: "
            + #"503 (server_unavailable: "Planned maintenance"), first 2027-01-15T08:00:00Z, last 2027-01-15T08:05:00Z; the app "#
            + "has not run since 2027-01-15T08:05:00Z (55 min ago): it is sent when the app next runs")
        #expect(try verdict(id, now: "2027-01-15T08:05:30Z").hasPrefix("queued: 6 attempts, next at 2027-01-15T08:06:00Z; all 6"),
                "not due yet: nothing to say of the app")

        let folded = try run(["timeline", EventText.shortID(id)])
        #expect(folded.contains("3-15  2027-01-15T08:00:00Z  6 attempts      1-6  +1 min  503 each, the last at 2027-01-15T08:05:00Z"))
        #expect(folded.contains("note: attempts 1 to 6 met the same answer: 12 events in one row (--full shows each)"))
        let full = try run(["timeline", EventText.shortID(id), "--full"])
        #expect(full.split(separator: "\n").filter { $0.contains("attemptFinished") }.count == 6)
        #expect(!full.contains("6 attempts  "))
    }
}
