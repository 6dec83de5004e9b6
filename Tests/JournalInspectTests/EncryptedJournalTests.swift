import Foundation
import JournalInspect
@testable import Outbox
import OutboxTesting
import Testing

@Suite("An encrypted journal, with and without its key")
struct EncryptedJournalTests {
    let directory = TemporaryDirectory()

    private func write(key: SealingKey) async throws -> OperationID {
        let outbox = try Outbox(
            directory: directory.path("journal"), transport: InMemoryServer(),
            configuration: OutboxConfiguration(account: "member-42", clock: ManualClock(), defaultPolicy: .idempotent, encryptionKey: key)
        )
        defer { outbox.close() }
        return try await outbox.enqueue(OutboxRequest(
            businessID: "b", operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"p-9","name":"Insulin glargine"}"#.utf8), category: "Products",
            entityLabel: "Insulin glargine", summary: "New product"
        ))
    }

    private func keyFile(_ key: SealingKey, hex: Bool) throws -> String {
        let file = directory.path(hex ? "key.hex" : "key.bin")
        let bytes = key.withUnsafeKeyBytes { Array($0) }
        let data = hex ? Data((bytes.map { String(format: "%02x", $0) }.joined() + "\n").utf8) : Data(bytes)
        try data.write(to: file)
        return file.path
    }

    @Test func withoutTheKeyTheTimelineSaysSealedAndWithItShowsThePayload() async throws {
        let key = SealingKey.random()
        let id = try await write(key: key)
        let journal = directory.path("journal").path

        let sealed = inspect([journal, "timeline", String(id.idempotencyKey.prefix(8)), "--payload"])
        #expect(sealed.code == .success)
        #expect(sealed.output.contains("sealed: the journal is encrypted at rest"))
        #expect(sealed.output.contains("(sealed)"))
        #expect(!sealed.output.contains("Insulin glargine"))

        for hex in [true, false] {
            let opened = inspect([journal, "timeline", String(id.idempotencyKey.prefix(8)), "--payload", "--key-file", try keyFile(key, hex: hex)])
            #expect(opened.code == .success)
            #expect(opened.output.contains("matches"))
            #expect(opened.output.contains(#""name":"Insulin glargine""#))
        }

        let wrong = inspect([journal, "summary", "--key-file", try keyFile(SealingKey.random(), hex: true)])
        #expect(wrong.code == .cannotOpen)
        #expect(wrong.errors.contains("does not open this journal"))

        try Data("short".utf8).write(to: directory.path("bad.key"))
        let bad = inspect([journal, "summary", "--key-file", directory.path("bad.key").path])
        #expect(bad.code == .usage)
        #expect(bad.errors.contains("give 32 bytes, or 64 hex digits"))

        let verify = inspect([journal, "verify", "--json"])
        #expect(verify.code == .success)
    }
}
