import Foundation
@testable import Outbox
import Testing

@Suite("A full journal")
struct StorageFullTests {
    @Test func enqueueThrowsStorageFullAndEverythingBeforeIsIntact() async throws {
        let journal = TestJournal()
        let limit = 256 << 10
        let outbox = try journal.open {
            $0.initialJournalBytes = 64 << 10
            $0.maxJournalBytes = limit
        }
        var saved: [OperationID] = []
        var refusal: (any Error)?
        while refusal == nil {
            do {
                saved.append(try await outbox.enqueue(productRequest(saved.count)))
            } catch {
                refusal = error
            }
        }
        #expect(refusal as? OutboxError == .storageFull(limitBytes: limit))
        #expect(saved.count > 50, "the map grew from 64 KiB before filling")
        let lastSeq = try outbox.lastSeq()
        #expect(lastSeq.rawValue == UInt64(saved.count + 1), "nothing of the refused write was stored")
        outbox.close()

        // It reopens, at the same limit, and every saved write is there.
        let reopened = try journal.open { $0.maxJournalBytes = limit }
        defer { reopened.close() }
        for (number, id) in saved.enumerated() {
            #expect(try reopened.operation(id)?.request.payload == productRequest(number).payload)
        }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty)
    }
}
