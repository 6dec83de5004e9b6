import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import Testing

/// Batched pushes against the loopback test server over a real socket: each write claimed and
/// applied once, whatever the batch met on the way.
@Suite("Batched pushes end to end over loopback", .timeLimit(.minutes(10)))
struct BatchEndToEndTests {
    typealias Rig = EndToEndTests.Rig

    /// `count` writes saved offline, one lane each; then the signal returns.
    private func queued(_ count: Int, rig: Rig) async throws -> [OperationID] {
        rig.network.setOnline(false)
        var ids: [OperationID] = []
        for number in 0..<count { ids.append(try await rig.outbox.enqueue(EndToEndTests.product(number))) }
        rig.network.setOnline(true)
        return ids
    }

    @Test func queuedWritesGoInBatchesAndEachIsAppliedOnce() async throws {
        let rig = try Rig { $0.batching = OutboxConfiguration.Batching(maxOperations: 8) }
        let ids = try await queued(20, rig: rig)
        try await rig.drainUntilSettled()
        for id in ids { #expect(try rig.outbox.operation(id)?.status == .synced) }
        let expected = Dictionary(uniqueKeysWithValues: ids.map { ($0.idempotencyKey, 1) })
        #expect(try rig.server.appliedCounts() == expected)
        // Every request that reached the server was a batch of at most 8, and they held the 20.
        let batches = Dictionary(grouping: rig.serverEvents.compactMap(\.batch)) { $0.number }
        #expect(batches.values.allSatisfy { $0.count <= 8 })
        #expect(batches.values.reduce(0) { $0 + $1.count } == 20)
        #expect(rig.network.requests.allSatisfy { $0.endpoint == "/sync/batch" })
    }

    @Test func aWriteAppliedButLeftOutOfTheAnswerIsReplayedUnderItsKeyAndAppliedOnce() async throws {
        let rig = try Rig { $0.batching = OutboxConfiguration.Batching() }
        let ids = try await queued(5, rig: rig)
        rig.server.addFaults([Fault(.dropAfterCommit, key: ids[2].idempotencyKey)])
        try await rig.drainUntilSettled()
        for id in ids { #expect(try rig.outbox.operation(id)?.status == .synced) }
        let dropped = try #require(try rig.outbox.operation(ids[2]))
        #expect(dropped.attemptCount == 2 && dropped.latestOutcome == .replayed, "unanswered, then replayed from the server's claim")
        #expect(try rig.server.appliedCounts()[ids[2].idempotencyKey] == 1)
        #expect(try rig.outbox.journalEvents(of: ids[2]).contains { event in
            if case .attemptFinished(let finished) = event.body { return finished.outcome == .noResponse(.missingFromBatch) }
            return false
        })
    }

    @Test func aBatchOverTheServersLimitIsSplitUntilItFits() async throws {
        let rig = try Rig({ $0.batching = OutboxConfiguration.Batching(maxOperations: 10) }, server: { $0.maxBatchOperations = 3 })
        let ids = try await queued(10, rig: rig)
        try await rig.drainUntilSettled()
        for id in ids {
            let row = try #require(try rig.outbox.operation(id))
            #expect(row.status == .synced)
        }
        #expect(try rig.server.appliedCounts().count == 10)
        let batches = Dictionary(grouping: rig.serverEvents.compactMap(\.batch)) { $0.number }
        #expect(batches.values.allSatisfy { $0.count <= 3 }, "only batches the server takes are applied")
    }

    @Test func aBatchedAndASingleSendOfOneKeyReplayEachOther() async throws {
        let rig = try Rig { $0.batching = OutboxConfiguration.Batching() }
        let ids = try await queued(2, rig: rig)
        // The same write, sent alone first under its key (as a previous process might have).
        let state = try #require(try rig.outbox.operationState(ids[0]))
        let request = try #require(try rig.outbox.operation(ids[0])?.request)
        _ = try await rig.network.send(TransportRequest(stored: state, payload: request.payload))
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(ids[0])?.latestOutcome == .replayed)
        #expect(try rig.outbox.operation(ids[1])?.latestOutcome == .accepted)
        #expect(try rig.server.appliedCounts() == [ids[0].idempotencyKey: 1, ids[1].idempotencyKey: 1])
    }
}
