import Foundation
import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// `history(_:)` is what an app reads of a write's past: entries built by one function, never the
/// journal's own events.
@Suite("A write's history as the app reads it")
struct HistoryEntryTests {
    @Test func historyGivesEachEventItsKindWordsAndFields() async throws {
        let journal = TestJournal()
        journal.transport.script(.fail(.offline), .respond(.json(201, #"{"revision":"1"}"#)))
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        journal.clock.advance(by: 60)
        await outbox.drain()

        let history = try outbox.history(id)
        #expect(history.map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .attemptStarted, .attemptFinished])
        #expect(history.allSatisfy { $0.operationID == id && !$0.words.isEmpty })
        #expect(history.map(\.seq) == history.map(\.seq).sorted())
        #expect(history[0].operationType == "product.create" && history[0].payload == nil, "the payload is never in an app's history")
        #expect(history[2].transportFailure == "offline" && history[2].disposition == "transient_failure")
        #expect(history[2].words.contains("no response (offline)"))
        #expect(history[4].httpStatus == 201 && history[4].words.contains("201"))

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(history[4]), as: UTF8.self)
        #expect(json.contains(#""words":"attempt 2: 201"#), "\(json)")
        #expect(!json.contains("null"))
    }

    @Test func historyOfAnUnknownWriteSaysSo() throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let unknown = OperationID()
        #expect(throws: OutboxError.operationNotFound(unknown)) { try outbox.history(unknown) }
    }
}
