import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// `ops --search`: a write found by what the member calls it, over its label, summary,
/// category, entity and type, whatever the case and accents; never by its payload.
@Suite("ops --search finds a write by what the member calls it", .hangGuard)
struct SearchTests {
    let directory = TemporaryDirectory()

    private var journal: URL { directory.path("journal") }

    private func write() async throws -> (creme: OperationID, order: OperationID, syrup: OperationID) {
        let clock = ManualClock()
        let outbox = try Outbox(directory: journal, transport: InMemoryServer(), configuration: OutboxConfiguration(
            account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        let creme = try await outbox.enqueue(product(1, label: "Crème hydratante 50 ml", category: "Cosmetics", entityID: "creme-50"))
        clock.advance(by: 60)
        var request = product(2, label: "Order 1187", category: "Orders", type: "order.create", entityID: "order-1187")
        request.summary = "Forty boxes of gloves"
        let order = try await outbox.enqueue(request)
        clock.advance(by: 60)
        let syrup = try await outbox.enqueue(product(3, label: "Cough syrup", entityID: "syrup-100"))
        await outbox.drain()
        outbox.close()
        return (creme, order, syrup)
    }

    private func found(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path, "ops"] + arguments)
        #expect(try dataFileDigest(journal) == before, sourceLocation: sourceLocation)
        #expect(result.code == .success && result.errors.isEmpty, "\(result.errors)", sourceLocation: sourceLocation)
        return result.output.split(separator: "\n").dropFirst().map { String($0.prefix(8)) }.filter { $0 != "No opera" }
    }

    @Test func caseAndAccentsAreIgnoredOverEveryFieldThatNamesAWrite() async throws {
        let ids = try await write()
        let creme = [EventText.shortID(ids.creme)]
        for text in ["creme", "CRÈME", "Creme Hydratante", "ｃｒｅｍｅ", "  crème  "] {
            #expect(try found(["--search", text]) == creme, "\(text)")
        }
        #expect(try found(["--search", "cosmetics"]) == creme, "the category")
        #expect(try found(["--search", "creme-50"]) == creme, "the entity")
        #expect(try found(["--search", "boxes of GLOVES"]) == [EventText.shortID(ids.order)], "the summary")
        #expect(try found(["--search", "order.create"]) == [EventText.shortID(ids.order)], "the type")
        #expect(try found(["--search", "product.create"]) == [ids.syrup, ids.creme].map(EventText.shortID))
        #expect(try found(["--search", "12.5"]).isEmpty, "never the payload")
        #expect(try found(["--search", "creme", "--status", "queued"]).isEmpty, "with the other filters")
        #expect(try found(["--search", "product", "--limit", "1"]) == [EventText.shortID(ids.syrup)])
        #expect(inspect([journal.path, "ops", "--search", " "]).errors.contains("--search needs some text to look for"))
    }
}
