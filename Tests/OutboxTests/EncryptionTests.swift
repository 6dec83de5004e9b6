import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("Encryption at rest", .timeLimit(.minutes(10)))
struct EncryptionTests {
    static let secretPayload = #"{"id":"product-77","name":"Morphine sulphate 10 mg","price":4242.17}"#

    static func secretRequest() -> OutboxRequest {
        OutboxRequest(
            businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products",
            payload: Data(secretPayload.utf8), category: "Products",
            entityLabel: "Controlled substance shelf", summary: "Restricted intake"
        )
    }

    /// Whether the journal's file holds `text` anywhere.
    static func fileContains(_ journal: TestJournal, _ text: String) throws -> Bool {
        let bytes = try Data(contentsOf: journal.directory.appendingPathComponent("data.mdb"))
        return bytes.range(of: Data(text.utf8)) != nil
    }

    @Test func sealedFieldsRoundTripAndNeverReachTheFileInPlaintext() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let key = SealingKey.random()
        let outbox = try journal.open(server: server) { $0.encryptionKey = key }
        let id = try await outbox.enqueue(Self.secretRequest())
        #expect(try outbox.operation(id)?.request == Self.secretRequest())
        let row = try #require(try outbox.syncTab(isOnline: false).card("Products")?.rows.first)
        #expect(row.entityLabel == "Controlled substance shelf" && row.summary == "Restricted intake")

        server.setOnline(true)
        journal.clock.advance(by: 2)
        await outbox.drain()
        #expect(server.records.first?.body == Data(Self.secretPayload.utf8), "sent exactly as typed")
        #expect(try outbox.operation(id)?.status == .synced)
        outbox.close()

        for secret in ["Morphine sulphate", "4242.17", "Controlled substance shelf", "Restricted intake"] {
            #expect(try !Self.fileContains(journal, secret), "\(secret) is in the file in plaintext")
        }
        // What is not sealed stays readable: the operation type, the endpoint.
        #expect(try Self.fileContains(journal, "product.create"))
    }

    @Test func aMissingOrWrongKeyIsAClearErrorNeverGarbage() async throws {
        let journal = TestJournal()
        let key = SealingKey.random()
        let outbox = try journal.open { $0.encryptionKey = key }
        _ = try await outbox.enqueue(Self.secretRequest())
        outbox.close()
        #expect(throws: OutboxError.encryptionKeyRequired) { _ = try journal.open() }
        #expect(throws: OutboxError.wrongEncryptionKey) { _ = try journal.open { $0.encryptionKey = SealingKey.random() } }
        #expect(throws: OutboxError.wrongEncryptionKey) {
            _ = try JournalReader(directory: journal.directory, encryptionKey: SealingKey.random())
        }
        #expect(throws: SealingError.badKeyLength(16)) { try SealingKey(bytes: [UInt8](repeating: 1, count: 16)) }
    }

    @Test func withoutTheKeyStatusesTimelinesTheLedgerAndMetricsStayReadable() async throws {
        let journal = TestJournal()
        let key = SealingKey.random()
        let outbox = try journal.open { $0.encryptionKey = key }
        let id = try await outbox.enqueue(Self.secretRequest())
        outbox.close()

        let reader = try JournalReader(directory: journal.directory)
        defer { reader.close() }
        let snapshot = try #require(try reader.operation(id))
        #expect(snapshot.status == .queued && snapshot.request.payload.isEmpty && snapshot.request.entityLabel.isEmpty)
        #expect(try reader.ledger().entries.first?.operationType == "product.create")
        #expect(try reader.journalEvents(of: id).map(\.kind) == [.enqueued])
        let report = try reader.verify()
        #expect(report.isClean && report.sealedPayloadsUnchecked == 1)
        #expect(try reader.timeline(of: id).payload?.isSealed == true)
    }

    @Test func theKeyedReaderOpensEverything() async throws {
        let journal = TestJournal()
        let key = SealingKey.random()
        let outbox = try journal.open { $0.encryptionKey = key }
        let id = try await outbox.enqueue(Self.secretRequest())
        outbox.close()
        let reader = try JournalReader(directory: journal.directory, encryptionKey: key)
        defer { reader.close() }
        #expect(try reader.operation(id)?.request == Self.secretRequest())
        let report = try reader.verify()
        #expect(report.isClean && report.sealedPayloadsUnchecked == 0)
        #expect(try reader.timeline(of: id).payload?.matches == true)
    }

    @Test func rotationReSealsEverythingInOneTransaction() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let old = SealingKey.random(), new = SealingKey.random()
        var outbox = try journal.open(server: server) { $0.encryptionKey = old }
        let id = try await outbox.enqueue(Self.secretRequest())
        await outbox.drain()
        let before = try #require(try outbox.operation(id))
        try await outbox.rotateEncryptionKey(to: new)
        #expect(try outbox.operation(id)?.request == Self.secretRequest())
        outbox.close()

        #expect(throws: OutboxError.wrongEncryptionKey) { _ = try journal.open(server: server) { $0.encryptionKey = old } }
        outbox = try journal.open(server: server) { $0.encryptionKey = new }
        defer { outbox.close() }
        let after = try #require(try outbox.operation(id))
        #expect(after.request == before.request && after.attemptCount == before.attemptCount && after.requestHash == before.requestHash)
        #expect(try outbox.verify().isClean)
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
        // The pending row still drains, byte for byte, under its key.
        server.setOnline(true)
        journal.clock.advance(by: 60)
        await outbox.drain()
        #expect(server.records.first?.body == Data(Self.secretPayload.utf8))
        #expect(server.records.first?.key == id.idempotencyKey)
    }

    @Test func aPlaintextJournalIsSealedWhenAKeyIsGivenAndUnsealedWhenRotatedToNone() async throws {
        let journal = TestJournal()
        let plain = try journal.open()
        let id = try await plain.enqueue(Self.secretRequest())
        plain.close()

        let key = SealingKey.random()
        let sealed = try journal.open { $0.encryptionKey = key }
        #expect(try sealed.operation(id)?.request == Self.secretRequest())
        #expect(try sealed.operationState(id)?.sealedPresentation != nil)
        #expect(try sealed.verify().isClean)
        try await sealed.rotateEncryptionKey(to: nil)
        sealed.close()

        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.operation(id)?.request == Self.secretRequest())
        #expect(try reopened.operationState(id)?.sealedPresentation == nil)
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty)
    }

    @Test func aSealedValueMovedToAnotherOperationDoesNotOpen() throws {
        let sealing = JournalSealing(key: SealingKey.random())
        let request = Self.secretRequest()
        let one = OperationID(), other = OperationID()
        let sealed = sealing.seal(request, id: one)
        #expect(throws: SealingError.self) { _ = try sealing.unseal(sealed, id: other) }
        #expect(try sealing.unseal(sealed, id: one).payload == request.payload)
        var damaged = sealed
        damaged.payload[20] ^= 1
        #expect(throws: SealingError.self) { _ = try sealing.unseal(damaged, id: one) }
    }
}
