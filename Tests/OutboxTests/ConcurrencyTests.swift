import Foundation
@testable import Outbox
import OutboxTestSupport
import OutboxStorage
import Testing

@Suite("Group commit and concurrent readers")
struct ConcurrencyTests {
    @Test func sixtyFourConcurrentEnqueuesAllLandOnceInOrder() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        let ids = try await withThrowingTaskGroup(of: OperationID.self) { group in
            for number in 0..<64 {
                group.addTask { try await outbox.enqueue(productRequest(number)) }
            }
            return try await group.reduce(into: [OperationID]()) { $0.append($1) }
        }
        #expect(Set(ids).count == 64)
        let events = try outbox.events()
        #expect(events.map(\.seq.rawValue) == Array(1...65), "seqs strictly increasing, no gaps")
        #expect(events.filter { $0.kind == .enqueued }.count == 64)
        #expect(Set(events.compactMap(\.operationID)) == Set(ids))
        outbox.close()

        let reopened = try journal.open()
        defer { reopened.close() }
        for id in ids {
            #expect(try reopened.operation(id)?.status == .queued)
        }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty)
    }

    @Test func unitsWaitingTogetherShareOneCommit() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let before = try outbox.store.environment.info().lastTransactionID
        outbox.writer.hold()
        let tasks = (0..<64).map { number in
            Task { try await outbox.enqueue(productRequest(number)) }
        }
        while outbox.writer.pendingCount < 64 { await Task.yield() }
        outbox.writer.release()
        for task in tasks { _ = try await task.value }
        let after = try outbox.store.environment.info().lastTransactionID
        #expect(after - before == 1, "64 enqueues committed in \(after - before) transactions")
    }

    @Test func anIllegalUnitFailsAloneInASharedCommit() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        outbox.writer.hold()
        let illegal = Task { try await outbox.retry(id) }
        let legal = Task { try await outbox.enqueue(productRequest(2)) }
        while outbox.writer.pendingCount < 2 { await Task.yield() }
        outbox.writer.release()
        await #expect(throws: OutboxError.self) { try await illegal.value }
        let second = try await legal.value
        #expect(try outbox.operation(second)?.status == .queued)
        #expect(try outbox.history(id).map(\.kind) == [.enqueued])
    }

    @Test func aReaderKeepsOneSnapshotWhileTheWriterAppends() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        let schema = outbox.store.schema
        try outbox.store.read { txn throws in
            let before = try txn.count(schema.events.database)
            for number in 2...10 {
                let id = OperationID()
                let request = productRequest(number)
                _ = try outbox.writer.appendNow([
                    JournalStore.Draft(operationID: id, body: .enqueued(Enqueued(
                        request: request, requestHash: SHA256Digest(of: request.payload), account: journal.account)))
                ])
            }
            #expect(try txn.count(schema.events.database) == before)
            #expect(try schema.operationIDs(withStatus: .queued, in: txn).count == 1)
        }
        #expect(try outbox.store.read { txn in try txn.count(schema.events.database) } == 11)
    }

    @Test func aSecondProcessReadsASnapshotWhileTheEngineWrites() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        for number in 0..<5 { _ = try await outbox.enqueue(productRequest(number)) }

        let child = try ChildProcess("outbox-test-child", ["snapshot", journal.directory.path])
        let first = try child.readLine()
        #expect(first == "events 6")
        for number in 5..<15 { _ = try await outbox.enqueue(productRequest(number)) }
        child.send("go")
        #expect(try child.readLine() == first, "the child's snapshot did not change")
        #expect(try child.readLine() == "fresh 16")
        #expect(child.wait() == 0)
        // The writer was never blocked and the journal is whole.
        #expect(try outbox.lastSeq() == 16)
    }
}
