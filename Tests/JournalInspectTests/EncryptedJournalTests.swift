import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
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

    /// Without the key the engine reads a sealed value as none: the tool says the values are
    /// sealed rather than repeat that as "deleted", and warns that a page leaves such records out.
    @Test func aRecordsValuesAreSealedWithoutTheKeyAndShownWithIt() async throws {
        let key = SealingKey.random()
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"revision":3,"record":{"name":"Insulin glargine","price":31}}"#)))
        let outbox = try Outbox(
            directory: directory.path("journal"), transport: transport,
            configuration: OutboxConfiguration(account: "member-42", clock: ManualClock(), defaultPolicy: .idempotent, encryptionKey: key)
        )
        let record = RecordKey(business: "b", type: "product", id: "p-9")
        let request = OutboxRequest(businessID: "b", operationType: "product.update", method: "PUT", endpoint: "/products/p-9",
                                    payload: Data(#"{"name":"Insulin glargine","price":30}"#.utf8), category: "Products",
                                    entityLabel: "Insulin glargine", summary: "New price")
        _ = try await outbox.enqueue(request, changing: [.put(record, request.payload)])
        await outbox.drain()
        let edit = try await outbox.enqueue(request, changing: [.put(record, Data(#"{"name":"Insulin glargine","price":29}"#.utf8))])
        outbox.close()
        let journal = directory.path("journal").path

        let sealed = inspect([journal, "record", record.description])
        #expect(sealed.code == .success && sealed.errors.isEmpty)
        #expect(sealed.output.contains("Shows   sealed: the journal is encrypted at rest; --key-file opens it"))
        #expect(sealed.output.contains("at seq 5: sealed: the journal is encrypted at rest"))
        #expect(sealed.output.contains("Verdict: its values are sealed (the journal is encrypted at rest): --key-file opens them, and "
            + "the verdict needs them; its sync state without them: pending \(EventText.shortID(edit)) queued; the server last "
            + "confirmed revision 3 (seq 5)"))
        #expect(!sealed.output.contains("deleted") && !sealed.output.contains("Insulin"))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal, "record", record.description, "--json"]).output.utf8))
            as? [String: Any])
        #expect(document["valuesSealed"] as? Bool == true)
        let server = try #require((document["record"] as? [String: Any])?["server"] as? [String: Any])
        #expect(server["revision"] as? Int == 3 && server["deleted"] == nil, "a sealed value is not said deleted")
        let page = inspect([journal, "records", "b/product"])
        #expect(page.errors.contains("journal-inspect: warning: the journal is encrypted at rest and no --key-file was given"))

        let keyed = ["--key-file", try keyFile(key, hex: true)]
        let opened = inspect([journal, "record", record.description, "--payload"] + keyed)
        #expect(opened.code == .success)
        #expect(opened.output.contains(#": {"name":"Insulin glargine","price":29}"#))
        #expect(opened.output.contains("Verdict: shows the member's {\"name\":\"Insulin glargine\",\"price\":29} from write \(EventText.shortID(edit))"))
        let listed = inspect([journal, "records", "b/product"] + keyed)
        #expect(listed.errors.isEmpty && listed.output.contains("p-9  "))
    }
}
