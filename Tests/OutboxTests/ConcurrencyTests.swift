import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxStorage
import Synchronization
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
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued])
    }

    @Test func anOperationTouchedByEveryUnitOfACommitHasItsStateWrittenOnce() throws {
        let (store, directory, puts) = try countingStore()
        defer { store.close(); try? FileManager.default.removeItem(at: directory) }
        let id = OperationID()
        let request = productRequest(1)
        let units: [[JournalStore.Draft]] = [
            [JournalStore.Draft(operationID: id, body: .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42")))],
            [JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain)))],
            [JournalStore.Draft(operationID: id, body: .attemptFinished(AttemptFinished(attempt: 1, outcome: .response(statusCode: 201), disposition: .accepted)))],
        ]
        puts.count.store(0, ordering: .relaxed)
        let results = try store.append(units, at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        // Three records, the state once, its status entry once (synced: no schedule, lane or
        // Sync tab entry), and the counters once.
        #expect(puts.count.load(ordering: .relaxed) == 6)
        #expect(try store.queries.operationState(id)?.status == .synced)
        #expect(try store.compareProjectionsWithRebuild().isEmpty)
    }

    @Test func anIllegalUnitBetweenTwoOfOneOperationLeavesTheOthersToLand() throws {
        let (store, directory, _) = try countingStore()
        defer { store.close(); try? FileManager.default.removeItem(at: directory) }
        let id = OperationID()
        let request = productRequest(1)
        let results = try store.append([
            [JournalStore.Draft(operationID: id, body: .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42")))],
            // No attempt is in flight yet: refused, and the next unit folds as if it never came.
            [JournalStore.Draft(operationID: id, body: .attemptFinished(AttemptFinished(attempt: 1, outcome: .response(statusCode: 201), disposition: .accepted)))],
            [JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain)))],
        ], at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(try results[2].get().map(\.seq) == [2], "the refused unit took no seq")
        #expect(try store.queries.operationState(id)?.status == .syncing)
        #expect(try store.compareProjectionsWithRebuild().isEmpty)
    }

    @Test func unitsArrivingWhileATransactionRunsJoinIt() throws {
        let (store, directory, _) = try countingStore()
        defer { store.close(); try? FileManager.default.removeItem(at: directory) }
        func enqueue(_ number: Int) -> [JournalStore.PreparedDraft] {
            let request = productRequest(number)
            return [JournalStore.PreparedDraft(JournalStore.Draft(operationID: OperationID(), body: .enqueued(Enqueued(
                request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42"))))]
        }
        var arriving = [enqueue(2), enqueue(3)]
        let before = try store.environment.info().lastTransactionID
        let results = try store.append([enqueue(1)], joining: { arriving.isEmpty ? nil : arriving.removeFirst() },
                                       at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(results.count == 3 && arriving.isEmpty)
        #expect(try results.map { try $0.get().map(\.seq.rawValue) } == [[1], [2], [3]])
        #expect(try store.environment.info().lastTransactionID - before == 1, "they shared one commit")
    }

    /// Units held back and released together, each needing a flush or not (`false`: by
    /// `append(_:flush:)` and `appendWithoutWaiting` in turn) -> the one commit they share.
    @Test(arguments: [
        ([false, false, false], LMDBCall.commitWithoutFlush),
        ([false, true, false], .commit),
        ([true, true], .commit),
    ])
    func aTransactionFlushesWhenAnyOfItsUnitsNeedsAFlush(_ flushes: [Bool], _ commit: LMDBCall) async throws {
        let journal = TestJournal()
        let commits = Mutex<[LMDBCall]>([])
        let hook = LMDBFaultHook { call in
            if call == .commit || call == .commitWithoutFlush { commits.withLock { $0.append(call) } }
            return nil
        }
        let outbox = try Outbox(directory: journal.directory, transport: journal.transport, configuration: journal.configuration(), faultHook: hook)
            .withOpeningRecorded()
        defer { outbox.close() }
        let writer = outbox.writer
        let before = try outbox.store.environment.info().lastTransactionID
        commits.withLock { $0.removeAll() }
        writer.hold()
        let tasks = flushes.enumerated().map { number, flush in
            let unit = [enqueueDraft(number)]
            if !flush && number.isMultiple(of: 2) {
                return Task { try await withCheckedThrowingContinuation { continuation in
                    writer.appendWithoutWaiting(flush: false, making: { unit }, landed: { continuation.resume(with: $0) })
                } }
            }
            return Task { try await writer.append(unit, flush: flush) }
        }
        while writer.pendingCount < flushes.count { await Task.yield() }
        writer.release()
        for task in tasks { #expect(try await task.value.map(\.kind) == [.enqueued]) }
        #expect(commits.withLock { $0 } == [commit])
        #expect(try outbox.store.environment.info().lastTransactionID - before == 1)
        #expect(outbox.store.environment.hasUnflushedCommits == !flushes.contains(true))
        #expect(try outbox.ledger().entries.count == flushes.count)
    }

    @Test func aUnitAppendedWithoutWaitingToAClosedWriterLandsNowhere() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        outbox.close()
        let result = await withCheckedContinuation { continuation in
            outbox.writer.appendWithoutWaiting(flush: false, making: { [enqueueDraft(1)] }, landed: { continuation.resume(returning: $0) })
        }
        #expect(throws: OutboxError.closed) { try result.get() }
    }

    private func enqueueDraft(_ number: Int) -> JournalStore.Draft {
        let request = productRequest(number)
        return JournalStore.Draft(operationID: OperationID(), body: .enqueued(Enqueued(
            request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42")))
    }

    /// When a durable transaction stops waiting for the callers the last commit resumed, from
    /// fixed instants: the wait is anchored at their resumption, not at the transaction's start.
    @Test(arguments: [
        // (durable, started µs after the resumption, the last commit's µs, resumed before?) -> waits until, µs after the resumption
        (true, 0, 900, true, 900),        // the drain goes straight on: waits as long as the last commit took
        (true, 150, 900, true, 900),      // started by the first caller back: still waits for the rest, to the same moment
        (true, 5_000, 900, true, 5_000),  // started long after: waits for nobody
        (true, 0, 9_000, true, 2_000),    // never over the cap
        (false, 0, 900, true, 0),         // nothing flushed: never waits
        (true, 40, 900, false, 40),       // nobody was resumed yet: nothing to wait for
    ])
    func theFillWaitEndsAsLongAfterTheResumptionAsTheLastCommitTook(
        _ example: (durable: Bool, startedAfter: Int, lastCommit: Int, resumedBefore: Bool, waitsUntil: Int)
    ) {
        func microseconds(_ count: Int) -> TimeInterval { TimeInterval(count) / 1_000_000 }
        let resumedAt: TimeInterval = 3600  // seconds of uptime
        let deadline = JournalWriter.fillDeadline(
            durable: example.durable,
            started: resumedAt + microseconds(example.startedAfter),
            lastResumedAt: example.resumedBefore ? resumedAt : nil,
            lastCommit: microseconds(example.lastCommit)
        )
        #expect(deadline == resumedAt + microseconds(example.waitsUntil))
    }

    /// How many puts a journal's transactions made.
    private final class Puts: Sendable {
        let count = Atomic<Int>(0)
    }

    /// A fresh journal whose every put is counted.
    private func countingStore() throws -> (JournalStore, URL, Puts) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-test-\(UUID().uuidString)")
        let puts = Puts()
        let hook = LMDBFaultHook { call in
            if call == .put { puts.count.add(1, ordering: .relaxed) }
            return nil
        }
        let store = try JournalStore.open(directory: directory, options: JournalStore.Options(faultHook: hook, account: "member-42"))
        return (store, directory, puts)
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
                // Straight to the store, from inside the read: the writer's queue is idle.
                _ = try outbox.store.append([[
                    JournalStore.Draft(operationID: id, body: .enqueued(Enqueued(
                        request: request, requestHash: SHA256Digest(of: request.payload), account: journal.account)))
                ]], at: journal.clock.now())[0].get()
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
