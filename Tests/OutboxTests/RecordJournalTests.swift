import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Testing

/// The member's records over the journal's life: the proof, verification against the trail,
/// encryption at rest, compaction and its retention, schema versions.
@Suite("Local records in the journal", .timeLimit(.minutes(10)))
struct RecordJournalTests {
    static let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
    static func value(_ price: Double) -> Data { Data(#"{"name":"Antiseptic","price":\#(price)}"#.utf8) }

    func edit(_ number: Int) -> OutboxRequest {
        var request = productRequest(number, entityID: nil)
        request.operationType = "product.update"
        request.method = "PUT"
        request.endpoint = "/products/7d0c3a52"
        request.revisionFrom = Self.key
        return request
    }

    @Test func theHistoryListsEveryEventThatMadeTheValueAndTheVerdictSaysWhy() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"record":{"name":"Antiseptic","price":14},"revision":2}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let first = try await outbox.enqueue(edit(1), changing: [.put(Self.key, Self.value(14))])
        await outbox.drain()
        let second = try await outbox.enqueue(edit(2), changing: [.put(Self.key, Self.value(13.5))])
        let history = try outbox.recordHistory(Self.key, showingValues: true)
        #expect(history.entries.map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .enqueued])
        #expect(history.entries.map(\.operation) == [first, first, first, second])
        #expect(history.entries[2].revision == 2)
        #expect(history.entries[3].valueHash == SHA256Digest(of: Self.value(13.5)))
        #expect(history.verdict.hasPrefix("shows the member's {\"name\":\"Antiseptic\",\"price\":13.5} from write \(second.uuidString.prefix(8)), waiting for internet"),
                "\(history.verdict)")
        #expect(history.verdict.contains("the server last confirmed {\"name\":\"Antiseptic\",\"price\":14} at revision 2"), "\(history.verdict)")
        // By hash unless asked: values are the member's data.
        let redacted = try outbox.recordHistory(Self.key).verdict
        #expect(!redacted.contains("13.5") && redacted.contains(String(SHA256Digest(of: Self.value(13.5)).hex.prefix(12))))
    }

    @Test func verifyChecksTheBaseAgainstItsTrailAndNamesABaseThatDiffers() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"record":{"price":14},"revision":2}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.recordTypes = ["draft": .localOnly] }
        defer { outbox.close() }
        _ = try await outbox.enqueue(edit(1), changing: [.put(Self.key, Self.value(14))])
        await outbox.drain()
        try await outbox.writeLocal([.put(RecordKey(business: "pharmacy-7", type: "draft", id: "d"), Data("{}".utf8))])
        #expect(try outbox.verify().isClean)
        // A base that moved without an event naming it is a finding, with the record named.
        let schema = outbox.store.schema
        try outbox.store.environment.write { txn in
            var base = try #require(try txn.get(schema.base, Self.key))
            base.revision = 9
            try txn.put(schema.base, Self.key, base)
        }
        let findings = try outbox.verify().findings.filter { $0.kind == .recordTrailMismatch }
        #expect(findings.count == 1)
        #expect(findings.first?.message.contains("\(Self.key)") == true && findings.first?.message.contains("revision 9") == true)
    }

    @Test func valuesAreSealedAtRestAndReadWithTheKeyAcrossARotation() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"record":{"secret":"gauze-base-value"},"revision":2}"#)))
        let journal = TestJournal(transport: transport)
        let key = try SealingKey(bytes: [UInt8](repeating: 7, count: 32))
        let outbox = try journal.open { $0.encryptionKey = key; $0.recordTypes = ["draft": .localOnly] }
        let draft = RecordKey(business: "pharmacy-7", type: "draft", id: "d")
        _ = try await outbox.enqueue(edit(1), changing: [.put(Self.key, Data(#"{"secret":"gauze-overlay-value"}"#.utf8))])
        await outbox.drain()
        _ = try await outbox.enqueue(edit(2), changing: [.put(Self.key, Data(#"{"secret":"gauze-pending-value"}"#.utf8))])
        try await outbox.writeLocal([.put(draft, Data(#"{"secret":"gauze-local-value"}"#.utf8))])
        // The pass the enqueue started ends (offline: the edit stays queued) before the file is read.
        await outbox.drain()
        let file = try Data(contentsOf: journal.directory.appendingPathComponent("data.mdb"))
        for text in ["gauze-base-value", "gauze-overlay-value", "gauze-pending-value", "gauze-local-value"] {
            #expect(file.range(of: Data(text.utf8)) == nil, "\(text) is stored in the clear")
        }
        #expect(try outbox.record(Self.key)?.value == Data(#"{"secret":"gauze-pending-value"}"#.utf8))
        let newKey = try SealingKey(bytes: [UInt8](repeating: 9, count: 32))
        try await outbox.rotateEncryptionKey(to: newKey)
        #expect(try outbox.record(Self.key)?.server?.value == Data(#"{"secret":"gauze-base-value"}"#.utf8))
        #expect(try outbox.record(draft)?.value == Data(#"{"secret":"gauze-local-value"}"#.utf8))
        #expect(try outbox.verify().isClean)
        outbox.close()
        let reopened = try journal.open { $0.encryptionKey = newKey; $0.recordTypes = ["draft": .localOnly] }
        defer { reopened.close() }
        #expect(try reopened.record(Self.key)?.value == Data(#"{"secret":"gauze-pending-value"}"#.utf8))
    }

    @Test func compactionKeepsWhatAViewStillNeedsAndTheTrailOfWhatItTakes() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(
            .respond(.json(200, #"{"record":{"price":14},"revision":2}"#)),   // described: its events may go
            .respond(.json(201, "{}"))                                          // no revision: confirmed, kept
        )
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open { $0.rolledBackRetentionSeconds = 3_600 }
        defer { outbox.close() }
        let described = try await outbox.enqueue(edit(1), changing: [.put(Self.key, Self.value(14))])
        await outbox.drain()
        let other = RecordKey(business: "pharmacy-7", type: "product", id: "other")
        var confirmedRequest = edit(2)
        confirmedRequest.revisionFrom = nil
        let confirmed = try await outbox.enqueue(confirmedRequest, changing: [.put(other, Self.value(1))])
        await outbox.drain()
        let discarded = try await outbox.enqueue(edit(3), changing: [.put(Self.key, Self.value(2))])
        // The pass the enqueue started ends first (offline: queued again), so the discard never
        // meets the write on its way.
        await outbox.drain()
        try await outbox.discard(discarded)
        journal.clock.advance(by: 60)
        _ = try await outbox.compact(before: journal.clock.now())
        #expect(try outbox.operation(described)?.compactedAt != nil)
        #expect(try outbox.operation(confirmed)?.compactedAt == nil, "its change still shows, confirmed")
        #expect(try outbox.operation(discarded)?.compactedAt == nil, "kept for the retention")
        #expect(try outbox.record(other)?.value == Self.value(1))
        #expect(try outbox.verify().isClean, "the base's trail stayed with the compaction")
        // Past the retention, by uptime, the discarded write may go too.
        journal.clock.advance(by: 3_600)
        _ = try await outbox.compact(before: journal.clock.now())
        #expect(try outbox.operation(discarded)?.compactedAt != nil)
        #expect(try outbox.verify().isClean)
    }

    @Test func aValueOfAnOlderSchemaVersionIsReadThroughTheTypesAdapter() async throws {
        let journal = TestJournal()
        let old = try journal.open()
        _ = try await old.enqueue(edit(1), changing: [.put(Self.key, Data(#"{"price":13.5}"#.utf8))])
        old.close()
        let outbox = try journal.open {
            $0.recordTypes = ["product": OutboxConfiguration.RecordTypePolicy(schemaVersion: 2, upgrade: { value, version in
                #expect(version == 1)
                return Data(String(decoding: value, as: UTF8.self).replacingOccurrences(of: "price", with: "unitPrice").utf8)
            })]
        }
        defer { outbox.close() }
        let record = try #require(try outbox.record(Self.key))
        #expect(record.value == Data(#"{"unitPrice":13.5}"#.utf8))
        #expect(record.schemaVersion == 2)
    }

    @Test func droppingATypesBaseKeepsPendingChangesAndTheJournalVerifies() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(200, #"{"record":{"price":14},"revision":2}"#)))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(edit(1), changing: [.put(Self.key, Self.value(14))])
        await outbox.drain()
        let pending = RecordKey(business: "pharmacy-7", type: "product", id: "p-2")
        var create = edit(2)
        create.revisionFrom = nil
        _ = try await outbox.enqueue(create, changing: [.put(pending, Self.value(3))])
        try await outbox.dropRecordBase(business: "pharmacy-7", type: "product")
        #expect(try outbox.record(Self.key) == nil, "its base is gone, and no write shows")
        #expect(try outbox.record(pending)?.value == Self.value(3), "a pending change is untouched")
        #expect(try outbox.verify().isClean)
    }
}
