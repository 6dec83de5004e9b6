import Dispatch
import Foundation
@testable import Outbox
import OutboxAudit
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
    private func journalWithAnInterruptedAttempt(_ durability: OutboxConfiguration.Durability) async throws -> (TestJournal, InMemoryServer, OperationID) {
        let journal = TestJournal()
        let server = InMemoryServer()
        let id = try await journal.interruptAnAttempt(on: server, applied: true) { $0.durability = durability }
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        return (journal, server, id)
    }

    private func open(_ journal: TestJournal, _ server: InMemoryServer, _ durability: OutboxConfiguration.Durability, _ calls: StorageCalls) throws -> Outbox {
        var configuration = journal.configuration()
        configuration.durability = durability
        return try Outbox(directory: journal.directory, transport: server, configuration: configuration, faultHook: calls.hook)
    }

    /// (tier) -> the commit an open with an attempt to abandon makes, on the writer's queue:
    /// `journalOpened` and the abandonment share one durable commit (`.processCrash` flushes
    /// none, and leaves it for the close).
    @Test(arguments: [(OutboxConfiguration.Durability.full, false), (.processCrash, true)])
    func anOpeningThatAbandonsCommitsItsRecordWithTheAbandonment(_ durability: OutboxConfiguration.Durability, _ unflushed: Bool) async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(durability)
        let calls = StorageCalls()
        let outbox = try open(journal, server, durability, calls)
        defer { outbox.close() }
        outbox.untilWritesLanded()
        #expect(calls.take() == [.commit])
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned])
        #expect(try outbox.operation(id)?.status == .queued)
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 2)
        #expect(outbox.store.environment.hasUnflushedCommits == unflushed)
    }

    /// An opening with an attempt to abandon does not make the open wait either: the open
    /// returns while its commit is held, the row reading as the last process left it (`syncing`,
    /// which nothing sends); once let go, the abandonment lands with the opening in one durable
    /// commit and the row is sent once, under its key.
    @Test func anOpeningThatAbandonsDoesNotMakeTheOpenWait() async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let gate = HeldCommit()
        let outbox = try Outbox(directory: journal.directory, transport: server, configuration: journal.configuration(), faultHook: gate.hook)
        defer { outbox.close() }
        #expect(gate.waitUntilHeld(), "the opening's commit reached the storage layer")
        #expect(try outbox.operation(id)?.status == .syncing, "the open returned before its abandonment landed")
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 1)
        gate.release()
        outbox.untilWritesLanded()
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned])
        #expect(gate.calls.first == .commit, "one durable commit, not one without a flush")
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(try outbox.journalEvents(of: id).filter { $0.kind == .attemptAbandoned }.count == 1)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    /// A sign-out right after an open, before its abandonment landed: the row the last process
    /// left `syncing` is abandoned once and discarded, not abandoned twice.
    @Test func aSignOutBeforeTheOpeningLandedAbandonsTheRowOnce() async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let gate = HeldCommit()
        let outbox = try Outbox(directory: journal.directory, transport: server, configuration: journal.configuration(), faultHook: gate.hook)
        defer { outbox.close() }
        #expect(gate.waitUntilHeld())
        let signedOut = Task { try await outbox.signOut(discardPending: true) }
        gate.release()
        try await signedOut.value
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned, .discarded])
        #expect(try outbox.operation(id)?.status == .discarded)
    }

    /// (tier, an enqueue before closing?) -> whether closing flushes: in `.full` an opening
    /// with nothing to abandon is committed durably, so only `.processCrash` leaves a commit
    /// for the close to flush.
    @Test(arguments: [
        (OutboxConfiguration.Durability.full, false, false),
        (.full, true, false),
        (.processCrash, false, true),
        (.processCrash, true, true),
    ])
    func closingFlushesWhatNoCommitFlushed(_ durability: OutboxConfiguration.Durability, _ enqueues: Bool, _ flushesAtClose: Bool) async throws {
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

    /// (the installation the journal was last opened on, this open's) -> whether its writes are
    /// held: the open waits for no commit, and the hold is there the moment it returns, the engine
    /// judging by the opening it has not yet recorded (a journal copied to another installation
    /// sends nothing before its writes are adopted); once the opening lands the journal says so.
    @Test(arguments: [
        ("phone-a", "phone-a"),
        ("phone-a", "phone-b"),
        (nil, "phone-a"),
        ("phone-a", nil),
    ] as [(String?, String?)])
    func anOpeningOnAnotherInstallationHoldsTheWritesBeforeItLands(_ before: String?, _ now: String?) async throws {
        let journal = TestJournal()
        let first = try journal.open { $0.installation = before }
        let id = try await first.enqueue(productRequest(1))
        first.close()
        let gate = HeldCommit()
        var configuration = journal.configuration()
        configuration.installation = now
        let outbox = try Outbox(directory: journal.directory, transport: InMemoryServer(), configuration: configuration, faultHook: gate.hook)
        defer { outbox.close() }
        #expect(gate.waitUntilHeld())
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 1, "the open returned before its opening landed")
        let held = before != nil && now != nil && before != now
        let waiting: OperationSnapshot.WaitingOn? = held ? .otherInstallation(madeOn: before ?? "") : nil
        #expect(try outbox.operation(id)?.waitingOn == waiting)
        #expect((try outbox.syncTab(isOnline: true).banner.kind == .otherInstallation) == held)
        #expect((try outbox.engineState().foreignInstallation != nil) == held)
        gate.release()
        outbox.untilWritesLanded()
        #expect(gate.calls == [.commit], "one durable commit, on the writer's queue")
        #expect(try outbox.operation(id)?.waitingOn == waiting)
        let stored = try outbox.store.read { txn in try outbox.store.schema.engineState(in: txn) }
        #expect((stored.foreignInstallation != nil) == held, "the journal records the hold the engine judged by")
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

    /// (the failure) -> an opening with an attempt to abandon whose commit fails still opens:
    /// its row stays `syncing` (nothing sends it) until an abandonment lands, the problem is
    /// counted, and the next open records the abandonment; the row is sent once.
    @Test(arguments: [LMDBError.noSpace, .io])
    func anOpeningThatAbandonsButCannotBeRecordedLeavesTheRowUnsent(_ failure: LMDBError) async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let calls = StorageCalls()
        calls.failing.withLock { $0 = (.commit, failure) }
        let outbox = try Outbox(directory: journal.directory, transport: server, configuration: journal.configuration(), faultHook: calls.hook)
        outbox.untilWritesLanded()
        #expect(try outbox.operation(id)?.status == .syncing)
        #expect(try outbox.metrics().problems == [.openingNotRecorded: 1])
        #expect(try outbox.events().filter { $0.kind == .journalOpened }.count == 1)
        outbox.close()
        calls.failing.withLock { $0 = nil }
        #expect(server.appliedCount(id.idempotencyKey) == 1, "nothing was sent again")

        // With the storage well again, the next open records the abandonment, and the row is sent once.
        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        #expect(try reopened.operation(id)?.status == .queued)
        await reopened.drain()
        #expect(try reopened.operation(id)?.status == .synced)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    /// A process ended, or the power lost, before the opening reached the disk: the disk holds
    /// the journal as it was before it (the data file put back as it was). Each open records
    /// the abandonment again, until one lands for good; the row is sent once.
    @Test func anOpeningLostBeforeItReachedTheDiskIsRecordedAgainAtTheNextOpen() async throws {
        let (journal, server, id) = try await journalWithAnInterruptedAttempt(.full)
        let data = journal.directory.appendingPathComponent(JournalStore.FileName.data)
        let flushed = try Data(contentsOf: data)
        for _ in 0..<2 {
            let outbox = try journal.open(server: server)
            #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned])
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
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned, .attemptStarted, .attemptFinished])
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }
}
