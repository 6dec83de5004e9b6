import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

/// SQLite-style I/O error loops: the storage layer's fault hook fails the Nth call of a kind,
/// for every N a workload reaches. Whatever fails, nothing acknowledged is lost, nothing is
/// applied twice, and the engine stays usable or reopens cleanly.
@Suite("I/O faults at every Nth call", .timeLimit(.minutes(10)))
struct IOFaultTests {
    static let faultsInjected = Atomic<Int>(0)

    @Test(arguments: [
        (LMDBCall.commit, LMDBError.io), (.commit, .mapFull), (.commit, .readersFull),
        (.put, .io), (.put, .mapFull), (.beginTransaction, .readersFull), (.sync, .io),
    ])
    func nothingAcknowledgedIsLost(_ call: LMDBCall, _ error: LMDBError) async throws {
        var reachedEnd = false
        var n = 1
        while !reachedEnd {
            reachedEnd = try await run(failing: call, with: error, at: n)
            n += 1
        }
        #expect(n > 2, "the workload reached \(call) at least once")
        print("io-faults: \(call) \(error): \(n - 1) positions, \(Self.faultsInjected.load(ordering: .relaxed)) faults so far")
    }

    /// Runs the workload with the `n`th `call` failing; answers whether the workload ended before
    /// reaching it (so no later position needs a run).
    private func run(failing call: LMDBCall, with error: LMDBError, at n: Int) async throws -> Bool {
        let journal = TestJournal()
        let server = InMemoryServer()
        let calls = Atomic<Int>(0)
        let fired = Atomic<Bool>(false)
        let hook = LMDBFaultHook { made in
            guard made == call, calls.add(1, ordering: .relaxed).newValue == n else { return nil }
            fired.store(true, ordering: .relaxed)
            return error
        }
        var configuration = journal.configuration()
        configuration.durability = .processCrash
        var acknowledged: [OperationID] = []
        if let outbox = try? Outbox(directory: journal.directory, transport: server, configuration: configuration, faultHook: hook) {
            for number in 0..<6 {
                if let id = try? await outbox.enqueue(productRequest(number)) { acknowledged.append(id) }
                if number == 2 { await outbox.drain() }
            }
            if let id = acknowledged.first { try? await outbox.discard(id) }
            await outbox.drain()
            try? outbox.flush()
            if !fired.load(ordering: .relaxed) {
                // Still usable after nothing failed: one more of everything.
                if let id = try? await outbox.enqueue(productRequest(99)) { acknowledged.append(id) }
                await outbox.drain()
            }
            outbox.close()
        }
        if fired.load(ordering: .relaxed) { Self.faultsInjected.add(1, ordering: .relaxed) }

        // Reopened without faults: every acknowledged write is there, the projections are whole,
        // and the queue drains with each write applied once.
        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        for id in acknowledged {
            #expect(try reopened.operationState(id) != nil, "\(call) #\(n): an acknowledged write was lost")
        }
        #expect(try reopened.store.compareProjectionsWithRebuild().isEmpty, "\(call) #\(n)")
        await reopened.drain()
        journal.clock.advance(by: 600)
        await reopened.drain()
        for id in acknowledged.dropFirst() {
            let status = try reopened.operationState(id)?.status
            #expect(status == .synced, "\(call) #\(n): \(id) is \(String(describing: status))")
        }
        #expect(server.maxAppliedCount <= 1, "\(call) #\(n): a write was applied twice")
        return !fired.load(ordering: .relaxed)
    }
}
