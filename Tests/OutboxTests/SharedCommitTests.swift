import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Synchronization
import Testing

/// An outcome and the pass's next `attemptStarted` share one commit; the outcome is still
/// durable before the next request leaves.
@Suite("Outcomes ride with the next start", .timeLimit(.minutes(10)))
struct SharedCommitTests {
    /// A server that, at each request, asks the engine what it has recorded so far.
    final class Witness: OutboxTransport {
        let server = InMemoryServer()
        private let state = Mutex<(outbox: Outbox?, seen: [[OperationID: OutboxStatus]])>((nil, []))
        private let watched = Mutex<[OperationID]>([])

        func watch(_ outbox: Outbox, _ ids: [OperationID]) {
            state.withLock { $0.outbox = outbox }
            watched.withLock { $0 = ids }
        }

        /// The status of every watched row, as the engine reported it when each request arrived.
        var seen: [[OperationID: OutboxStatus]] { state.withLock { $0.seen } }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if let outbox = state.withLock({ $0.outbox }) {
                var statuses: [OperationID: OutboxStatus] = [:]
                for id in watched.withLock({ $0 }) { statuses[id] = try outbox.operation(id)?.status }
                state.withLock { $0.seen.append(statuses) }
            }
            return try await server.send(request)
        }
    }

    @Test func rowsSentOneAtATimeTakeOneCommitEachPlusOne() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server) { $0.maxConcurrentLanes = 1 }
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 1...4 { ids.append(try await outbox.enqueue(productRequest(number))) }
        let before = try outbox.store.environment.info().lastTransactionID
        await outbox.drain()
        let after = try outbox.store.environment.info().lastTransactionID

        for id in ids { #expect(try outbox.operation(id)?.status == .synced) }
        #expect(server.requests.count == 4)
        // Four starts and four outcomes: each of the first three outcomes shares the next start's commit.
        #expect(after - before == 5, "4 rows sent one at a time took \(after - before) commits")
        // Each outcome is in the journal before the next row's start, seq by seq.
        let events = try ids.enumerated().flatMap { index, id in
            try outbox.journalEvents(of: id).filter { $0.kind != .enqueued }.map { (seq: $0.seq, name: "\($0.kind)-\(index)") }
        }
        #expect(events.sorted { $0.seq < $1.seq }.map(\.name) == [
            "attemptStarted-0", "attemptFinished-0", "attemptStarted-1", "attemptFinished-1",
            "attemptStarted-2", "attemptFinished-2", "attemptStarted-3", "attemptFinished-3",
        ])
    }

    @Test func eachOutcomeIsRecordedBeforeTheNextRequestLeaves() async throws {
        let journal = TestJournal()
        let witness = Witness()
        let outbox = try journal.open(server: witness) { $0.maxConcurrentLanes = 1 }
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 1...3 { ids.append(try await outbox.enqueue(productRequest(number))) }
        witness.watch(outbox, ids)
        await outbox.drain()

        let seen = witness.seen
        #expect(seen.count == 3)
        for (index, statuses) in seen.enumerated() {
            for earlier in ids.prefix(index) { #expect(statuses[earlier] == .synced, "row \(index) left before row \(ids.firstIndex(of: earlier)!)'s outcome was recorded") }
            #expect(statuses[ids[index]] == .syncing)
        }
        for id in ids { #expect(try outbox.operation(id)?.status == .synced) }
    }

    @Test func theNextRowOfTheSameLaneStillGoesInTheSamePass() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server) { $0.maxConcurrentLanes = 1 }
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1, entityID: "product-1"))
        let second = try await outbox.enqueue(productRequest(2, entityID: "product-1"))
        await outbox.drain()

        #expect(server.requests.count == 2)
        #expect(try outbox.operation(first)?.status == .synced)
        #expect(try outbox.operation(second)?.status == .synced)
    }

    @Test func theLastOutcomeOfAPassIsCommittedWhenThePassEnds() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server) { $0.maxConcurrentLanes = 1 }
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        let before = try outbox.store.environment.info().lastTransactionID
        await outbox.drain()

        #expect(try outbox.operation(id)?.status == .synced)
        #expect(try outbox.store.environment.info().lastTransactionID - before == 2)
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
    }

    @Test func anOutcomeWhoseNextRowCannotStartIsStillRecorded() async throws {
        // Signed out during the first request: the next row halts the pass without a start, and
        // the first row's outcome lands alone.
        let journal = TestJournal()
        let server = InMemoryServer()
        let session = SwitchableSession(account: journal.account)
        let transport = ScriptedTransport(otherwise: .handle { request in
            session.signOut()
            return try await server.send(request)
        })
        let outbox = try journal.open(server: transport, session: session) { $0.maxConcurrentLanes = 1 }
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1))
        let second = try await outbox.enqueue(productRequest(2))
        await outbox.drain()

        #expect(transport.requests.count == 1)
        #expect(try outbox.operation(first)?.status == .synced)
        #expect(try outbox.journalEvents(of: first).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
        #expect(try outbox.journalEvents(of: second).map(\.kind) == [.enqueued])
    }
}
