import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// Verdicts and the ops list say what happened in the words of whoever decided: the server's
/// message quoted, who discarded a row and why, the approver's note, a duplicate named as one.
@Suite("Verdicts in the words of whoever decided", .hangGuard)
struct VerdictWordsTests {
    let directory = TemporaryDirectory()

    private var journal: URL { directory.path("journal") }

    private func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path] + arguments + ["--now", "2027-01-16T08:00:00Z"])
        #expect(try dataFileDigest(journal) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        #expect(result.code == .success && result.errors.isEmpty, "\(arguments): \(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    private func verdict(_ id: OperationID) throws -> String {
        try run(["timeline", EventText.shortID(id)]).split(separator: "\n").last { $0.hasPrefix("Verdict: ") }
            .map { String($0.dropFirst("Verdict: ".count)) } ?? ""
    }

    /// The ops row of `id`, its DETAIL last.
    private func row(_ id: OperationID) throws -> String {
        try run(["ops"]).split(separator: "\n").first { $0.hasPrefix(EventText.shortID(id)) }.map(String.init) ?? ""
    }

    @Test func theApproversNoteADuplicateAndAKeyConflictAreSaidAsSuch() async throws {
        let clock = ManualClock()
        let server = InMemoryServer()
        let outbox = try Outbox(directory: journal, transport: server, configuration: OutboxConfiguration(
            account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        server.inject(.holdForApproval(requestID: "apr-2208"))
        let rejected = try await outbox.enqueue(product(1, label: "Vitamin D 1000 IU"))
        await outbox.drain()
        clock.advance(by: 5400)
        try await outbox.recordApprovalDecision(rejected, approved: false, reference: "Above the list price: use 8.90")
        await outbox.settle()
        server.inject(.respond(.error(409, code: "duplicate", message: "A product with barcode 4006381333931 already exists")))
        let duplicate = try await outbox.enqueue(product(2, label: "Antiseptic 500 ml"))
        await outbox.drain()
        server.inject(.respond(.error(409, code: ErrorCode.idempotencyConflict, message: "This key was used with another request")))
        let conflict = try await outbox.enqueue(product(3, label: "Gauze 10 cm"))
        await outbox.drain()
        outbox.close()

        #expect(try verdict(rejected)
            == #"failed: the approver rejected it with the note "Above the list price: use 8.90", waiting for a correction (approval_rejected)"#)
        #expect(try row(rejected).hasSuffix(#"approval_rejected: the approver rejected it: "Above the list price: use 8.90""#))
        #expect(try verdict(duplicate) == #"failed: 409 on attempt 1: the server says the record already exists (duplicate: "A product "#
            + #"with barcode 4006381333931 already exists"); the payload needs no correcting: find the server's record, then discard this write"#)
        #expect(!(try verdict(duplicate)).contains("needs correcting ("), "a duplicate is not a payload to correct")
        #expect(try verdict(conflict).hasPrefix("blocked: 409 on attempt 1: the server already holds a different write under this write's "
            + #"key (idempotency_conflict: "This key was used with another request"), so the record already exists on the server"#))
    }

    @Test func aDiscardedRowSaysWhoDiscardedItAndWhyNotItsLastError() async throws {
        let clock = ManualClock()
        let server = InMemoryServer()
        let outbox = try Outbox(directory: journal, transport: server, configuration: OutboxConfiguration(
            account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        server.setOnline(false)
        let dropped = try await outbox.enqueue(product(1, label: "Plasters, 40 pack"))
        await outbox.drain()
        clock.advance(by: 900)
        try await outbox.discard(dropped)
        await outbox.settle()
        clock.advance(by: 600)
        let left = try await outbox.enqueue(product(2, label: "Zinc tablets"))
        await outbox.drain()
        clock.advance(by: 600)
        try await outbox.signOut(discardPending: true)
        outbox.close()

        #expect(try verdict(dropped) == "discarded by the member on 2027-01-15T08:15:00Z; before that, attempt 1 had met no response (offline)")
        #expect(try row(dropped).hasSuffix("discarded by the member on 2027-01-15T08:15:00Z"))
        #expect(try verdict(left).hasPrefix("discarded on sign-out on 2027-01-15T08:35:00Z: the member signed out and chose to drop what was waiting"))
        #expect(try row(left).hasSuffix("discarded on sign-out, by the member at the member's choice on 2027-01-15T08:35:00Z"))
        for id in [dropped, left] { #expect(!(try row(id)).contains("offline"), "the last error is history, not the reason") }
    }
}
