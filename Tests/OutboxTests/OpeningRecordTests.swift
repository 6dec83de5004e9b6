import Dispatch
import Foundation
@testable import Outbox
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

/// The commits and flushes the storage layer was asked about, in order; fails every call of
/// `failing` with its error while it is set.
private final class StorageCalls: Sendable {
    private let calls = Mutex<[LMDBCall]>([])
    let failing = Mutex<(call: LMDBCall, error: LMDBError)?>(nil)

    var hook: LMDBFaultHook {
        LMDBFaultHook { [self] call in
            guard call == .commit || call == .commitWithoutFlush || call == .sync else { return nil }
            calls.withLock { $0.append(call) }
            return failing.withLock { $0.flatMap { $0.call == call ? $0.error : nil } }
        }
    }

    /// What was asked since the last call.
    func take() -> [LMDBCall] {
        calls.withLock { calls in
            defer { calls.removeAll() }
            return calls
        }
    }
}

/// Holds the first commit the storage layer is asked for until released, counting every commit.
private final class HeldCommit: Sendable {
    private let reached = DispatchSemaphore(value: 0)
    private let letGo = DispatchSemaphore(value: 0)
    private let state = Mutex<(calls: [LMDBCall], held: Bool)>(([], false))

    var hook: LMDBFaultHook {
        LMDBFaultHook { [self] call in
            guard call == .commit || call == .commitWithoutFlush else { return nil }
            let first = state.withLock { state -> Bool in
                state.calls.append(call)
                defer { state.held = true }
                return !state.held
            }
            if first {
                reached.signal()
                // Bounded only so that an open that waited for its commit fails the test instead of hanging it.
                _ = letGo.wait(timeout: .now() + 120)
            }
            return nil
        }
    }

    var calls: [LMDBCall] { state.withLock { $0.calls } }

    /// Whether the first commit is held (false when none came within the bound).
    func waitUntilHeld() -> Bool { reached.wait(timeout: .now() + 120) == .success }

    func release() { letGo.signal() }
}

@Suite("The opening, recorded without a flush", .timeLimit(.minutes(5)))
struct OpeningRecordTests {
    /// A journal whose one row the server applied while its process ended before the outcome
    /// was recorded: it is `syncing` on the disk.
    private func journalWithAnInterruptedAttempt(_ durability: Durability) async throws -> (TestJournal, InMemoryServer, OperationID) {
        let journal = TestJournal()
        let server = InMemoryServer()
        let id = try await journal.interruptAnAttempt(on: server, applied: true) { $0.durability = durability }
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        return (journal, server, id)
    }

    private func open(_ journal: TestJournal, _ server: InMemoryServer, _ durability: Durability, _ calls: StorageCalls) throws -> Outbox {
        var configuration = journal.configuration()
        configuration.durability = durability
        return try Outbox(directory: journal.directory, transport: server, configuration: configuration, faultHook: calls.hook)
    }

    /// (tier) -> the commits an open asks for: `journalOpened` and the abandonment share one.
    @Test(arguments: [(Durability.full, [LMDBCall.commitWithoutFlush]), (.processCrash, [.commit])])
    func anOpeningCommitsItsRecordWithoutAFlush(_ durability: Durability, _ commits: [LMDBCall]) async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(durability)
        let calls = StorageCalls()
        let outbox = try open(journal, server, durability, calls)
        defer { outbox.close() }
        #expect(calls.take() == commits)
        #expect(try outbox.history(id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned])
        #expect(try outbox.operation(id)?.status == .queued)
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 2)
        #expect(outbox.store.environment.hasUnflushedCommits)
    }

    @Test func theFirstEnqueueAfterAnOpeningFlushesItWithItsOwn() async throws {
        let (journal, server, _) = try await journalWithAnInterruptedAttempt(.full)
        let calls = StorageCalls()
        let outbox = try open(journal, server, .full, calls)
        defer { outbox.close() }
        _ = calls.take()
        _ = try await outbox.enqueue(productRequest(2))
        #expect(calls.take() == [.commit])
        #expect(!outbox.store.environment.hasUnflushedCommits)
    }

    /// (tier, an enqueue before closing?) -> whether closing flushes: in `.full` an opening
    /// with nothing to abandon is committed durably, so only `.processCrash` leaves a commit
    /// for the close to flush.
    @Test(arguments: [
        (Durability.full, false, false),
        (.full, true, false),
        (.processCrash, false, true),
        (.processCrash, true, true),
    ])
    func closingFlushesWhatNoCommitFlushed(_ durability: Durability, _ enqueues: Bool, _ flushesAtClose: Bool) async throws {
        let journal = TestJournal()
        try journal.open { $0.durability = durability }.close()
        let calls = StorageCalls()
        let outbox = try open(journal, InMemoryServer(), durability, calls).withOpeningRecorded()
        if enqueues { _ = try await outbox.enqueue(productRequest(1)) }
        _ = calls.take()
        outbox.close()
        #expect(calls.take() == (flushesAtClose ? [.sync] : []))
        #expect(!outbox.store.environment.hasUnflushedCommits)
    }

    /// An opening with nothing to abandon: the open returns while its commit is held on the
    /// writer's queue, and the commit, durable, lands once let go.
    @Test func anOpeningWithNothingToAbandonDoesNotMakeTheOpenWait() throws {
        let journal = TestJournal()
        try journal.open().close()
        let gate = HeldCommit()
        let outbox = try Outbox(directory: journal.directory, transport: InMemoryServer(), configuration: journal.configuration(), faultHook: gate.hook)
        defer { outbox.close() }
        #expect(gate.waitUntilHeld(), "the opening's commit reached the storage layer")
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 1, "the open returned before its own opening landed")
        gate.release()
        outbox.untilWritesLanded()
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 2)
        #expect(gate.calls == [.commit], "one durable commit, not one without a flush")
    }

    /// (the installation the journal was last opened on, this open's) -> whether the open waits
    /// for its opening: it does when the opening changes what a row's eligibility is judged by,
    /// so a journal copied to another installation holds its writes from the open's return.
    @Test(arguments: [
        ("phone-a", "phone-a", false),
        ("phone-a", "phone-b", true),
        (nil, "phone-a", true),
        ("phone-a", nil, false),
    ] as [(String?, String?, Bool)])
    func anOpeningOnAnotherInstallationIsCommittedBeforeTheOpenReturns(_ before: String?, _ now: String?, _ waits: Bool) async throws {
        let journal = TestJournal()
        let first = try journal.open { $0.installation = before }
        _ = try await first.enqueue(productRequest(1))
        first.close()
        let gate = HeldCommit()
        var configuration = journal.configuration()
        configuration.installation = now
        if waits { gate.release() }
        let outbox = try Outbox(directory: journal.directory, transport: InMemoryServer(), configuration: configuration, faultHook: gate.hook)
        defer { outbox.close() }
        #expect(gate.waitUntilHeld())
        let opened = try outbox.events().filter { $0.kind == .journalOpened }.count
        #expect(opened == (waits ? 2 : 1))
        if waits { #expect(gate.calls == [.commitWithoutFlush]) }
        #expect((try outbox.engineState().foreignInstallation != nil) == (before != nil && now != nil && before != now))
        if !waits { gate.release() }
    }

    /// A write handed over right after the open lands after the opening, whether the opening's
    /// commit has run by then or not.
    @Test func aWriteRightAfterTheOpenLandsAfterTheOpening() async throws {
        let journal = TestJournal()
        let outbox = try Outbox(directory: journal.directory, transport: InMemoryServer(), configuration: journal.configuration())
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        let events = try outbox.events()
        #expect(events.map(\.kind) == [.journalOpened, .enqueued])
        #expect(events.last?.operationID == id)
    }

    /// (the failure) -> an opening with nothing to abandon whose commit fails still opens: the
    /// journal stays readable and writable, the problem is counted, the next open records its own.
    @Test(arguments: [LMDBError.noSpace, .io])
    func anOpeningThatCannotBeRecordedInTheBackgroundLeavesTheJournalOpen(_ failure: LMDBError) async throws {
        let journal = TestJournal()
        try journal.open().close()
        let calls = StorageCalls()
        calls.failing.withLock { $0 = (.commit, failure) }
        let outbox = try open(journal, InMemoryServer(), .full, calls)
        outbox.untilWritesLanded()
        calls.failing.withLock { $0 = nil }
        #expect(try outbox.metrics().problems == [.openingNotRecorded: 1])
        #expect(try outbox.events().map(\.kind) == [.journalOpened])
        _ = try await outbox.enqueue(productRequest(1))
        outbox.close()
        let reopened = try journal.open()
        defer { reopened.close() }
        #expect(try reopened.events().map(\.kind) == [.journalOpened, .enqueued, .journalOpened])
    }

    /// A record of the opening that fails fails as before: a journal too full for it opens (its
    /// row held `syncing` until its abandonment lands), any other failure fails the open.
    @Test(arguments: [(LMDBError.noSpace, true), (.io, false)])
    func aFailedRecordOfTheOpeningIsToleratedOnlyWhenTheJournalIsFull(_ failure: LMDBError, _ opens: Bool) async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let calls = StorageCalls()
        calls.failing.withLock { $0 = (.commitWithoutFlush, failure) }
        if opens {
            let outbox = try open(journal, server, .full, calls)
            #expect(try outbox.operation(id)?.status == .syncing)
            #expect(try outbox.metrics().problems == [.openingNotRecorded: 1])
            #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 1)
            outbox.close()
        } else {
            #expect(throws: OutboxError.storage(code: failure.rawValue, message: failure.description)) {
                _ = try open(journal, server, .full, calls)
            }
        }
        #expect(calls.take().first == .commitWithoutFlush)

        // With the storage well again, the next open records the abandonment, and the row is sent once.
        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        #expect(try reopened.operation(id)?.status == .queued)
        await reopened.drain()
        #expect(try reopened.operation(id)?.status == .synced)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    /// A power loss before anything flushed the opening: the disk holds the journal as it was
    /// before it (the data file put back as it was). Each open records the abandonment again,
    /// until one lands for good; the row is sent once.
    @Test func anOpeningLostBeforeItsFlushIsRecordedAgainAtTheNextOpen() async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let data = journal.directory.appendingPathComponent(JournalStore.FileName.data)
        let flushed = try Data(contentsOf: data)
        for _ in 0..<2 {
            let outbox = try journal.open(server: server)
            #expect(try outbox.history(id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned])
            #expect(outbox.store.environment.hasUnflushedCommits)
            outbox.close()
            // What reached the disk: nothing of that open.
            try flushed.write(to: data)
        }
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 2, "the first open's, and this one's")
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(row.latestOutcome == .replayed)
        #expect(try outbox.history(id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned, .attemptStarted, .attemptFinished])
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }
}
