import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// The timeline shows the chains a write is part of, in words: a correction and what it
/// corrects, a write and what it depends on.
@Suite("Chains on the timeline", .hangGuard)
struct ChainTests {
    let directory = TemporaryDirectory()

    private struct Chains {
        var refused: OperationID
        var correction: OperationID
        var product: OperationID
        var movement: OperationID
    }

    /// A 422 corrected with `revise`; a stock movement that depends on a product created offline.
    private func write() async throws -> Chains {
        let clock = ManualClock(now: fixtureStart)
        let server = InMemoryServer()
        let outbox = try Outbox(directory: directory.url, transport: server,
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        defer { outbox.close() }
        server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
        let refused = try await outbox.enqueue(product(1, entityID: "product-1"))
        await outbox.drain()
        clock.advance(by: 60)
        let correction = try await outbox.revise(refused, payload: Data(#"{"id":"product-1","price":12.5}"#.utf8))
        await outbox.drain()

        server.setOnline(false)
        let created = try await outbox.enqueue(product(2, entityID: "product-2"))
        var movement = product(3, type: "stock.move", entityID: "move-1")
        movement.dependsOn = [created]
        let moved = try await outbox.enqueue(movement)
        await outbox.drain()
        return Chains(refused: refused, correction: correction, product: created, movement: moved)
    }

    @Test func aCorrectionAndTheWriteItCorrectsPointAtEachOther() async throws {
        let chains = try await write()
        let refused = inspect([directory.url.path, "timeline", chains.refused.idempotencyKey])
        #expect(refused.code == .success, "\(refused.errors)")
        #expect(refused.output.contains("Replaced by  \(chains.correction.idempotencyKey) (the member corrected it)"), "\(refused.output)")
        let short = EventText.shortID(chains.correction)
        #expect(refused.output.contains("superseded by \(short), the member's correction"))
        #expect(refused.output.contains("Verdict: superseded: the member corrected it; the correction is \(short)"))

        let correction = inspect([directory.url.path, "timeline", chains.correction.idempotencyKey])
        #expect(correction.output.contains("corrects \(EventText.shortID(chains.refused))"), "\(correction.output)")
        #expect(correction.output.contains("Replaces"))
        #expect(correction.output.contains("synced"))
    }

    @Test func aDependentNamesWhatItWaitsFor() async throws {
        let chains = try await write()
        let movement = inspect([directory.url.path, "timeline", chains.movement.idempotencyKey])
        #expect(movement.output.contains("Depends on"), "\(movement.output)")
        #expect(movement.output.contains("\(chains.product.idempotencyKey) (sent only once it is synced)"))
        let product = inspect([directory.url.path, "timeline", chains.product.idempotencyKey])
        #expect(!product.output.contains("Depends on"), "a write in no chain shows none")
    }
}
