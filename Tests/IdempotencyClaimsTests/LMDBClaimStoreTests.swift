import Foundation
import TestHarness
@testable import IdempotencyClaims
import LMDBClaimStore
import OutboxStorage
import Synchronization
import Testing

@Suite("The LMDB claim store")
struct LMDBClaimStoreTests {
    @Test func aFailedCommitLeavesNeitherTheWriteNorTheClaim() throws {
        let failNextCommit = Mutex(false)
        let harness = try ClaimsHarness.make(.lmdb) {
            failNextCommit.withLock { armed in
                defer { armed = false }
                return armed ? LMDBError.io : nil
            }
        }
        // Arm the fault once the claim is taken, so the commit that fails is the write's.
        #expect(throws: LMDBError.io) {
            try harness.handle(key: "k-1", whileClaimed: { failNextCommit.withLock { $0 = true } })
        }
        #expect(try harness.effects("k-1") == 0)
        #expect(try harness.claim("k-1") == nil, "the in-progress claim was released")
        #expect(try harness.handle(key: "k-1").outcome == .applied)
        #expect(try harness.effects("k-1") == 1)
    }

    @Test func claimsSurviveReopeningTheEnvironment() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let scope = ClaimScope(businessID: "b-1", operationType: "product.create")
        let body = Data(#"{"id":"p-1"}"#.utf8)
        let created = ClaimResponse(status: 201, headers: [.init(name: "Content-Type", value: "application/json")], body: body)

        let first = try LMDBEnvironment.open(directory: directory.url)
        let before = IdempotencyClaims(store: try LMDBClaimStore(environment: first))
        #expect(try before.handle(scope: scope, key: "k-1", body: body) { _ in created }.outcome == .applied)
        first.close()

        let second = try LMDBEnvironment.open(directory: directory.url)
        defer { second.close() }
        let after = IdempotencyClaims(store: try LMDBClaimStore(environment: second))
        let replay = try after.handle(scope: scope, key: "k-1", body: body) { _ in
            Issue.record("the write ran again after reopening")
            return created
        }
        #expect(replay.outcome == .replayed)
        #expect(replay.response.body == body)
    }

    @Test func aTransactionKeptPastItsClosureThrowsInsteadOfTouchingLMDB() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let store = try LMDBClaimStore(environment: environment)
        let kept = try store.transaction { $0 }
        #expect(throws: LMDBClaimStoreError.transactionEnded) { try kept.withLMDB { _ in 1 } }
    }

    @Test func anUndecodableClaimThrowsRatherThanCountingAsAbsent() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let store = try LMDBClaimStore(environment: environment)
        let id = ClaimID(scope: ClaimScope(businessID: "b", operationType: "t"), key: try #require(IdempotencyKey(rawValue: "k")))
        try environment.write { txn in try txn.put(store.database, key: try ClaimCodec.key(for: id), value: [9, 9, 9]) }
        #expect(throws: ClaimCodingError.self) { try store.transaction { try store.claim(id, in: $0) } }
    }

    @Test func copiesOfAWriteHoldingTheWriteLockAreAnsweredFromAReadSnapshot() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url, options: .init(syncOnCommit: false))
        defer { environment.close() }
        let effects = try environment.openDatabase("effects")
        let claims = IdempotencyClaims(store: try LMDBClaimStore(environment: environment))
        let scope = ClaimScope(businessID: "b-1", operationType: "product.create")
        let body = Data(#"{"id":"p-1"}"#.utf8)

        // The first request's write holds LMDB's one write transaction until the gate opens.
        let gate = Gate()
        defer { gate.open() }
        let held = Signal()
        let first = Task {
            try await onThread {
                defer { held.fire() }   // also when the request fails: the test goes on to see it
                return try claims.handle(scope: scope, key: "k-1", body: body) { txn in
                    try txn.withLMDB { try $0.put(effects, key: Array("k-1".utf8), value: [1]) }
                    held.fire()
                    try gate.wait()
                    return ClaimResponse(status: 201, body: body)
                }
            }
        }
        await held.wait()
        @Sendable func copy(_ body: Data) throws -> ClaimAnswer {
            try claims.handle(scope: scope, key: "k-1", body: body) { _ in ClaimResponse(status: 599) }
        }
        // Both answers come while the write lock is held: the gate opens only after them.
        let same = try await answerWithin { try copy(body) }
        let other = try await answerWithin { try copy(Data(#"{"id":"p-2"}"#.utf8)) }
        #expect(same?.outcome == .inProgress)
        #expect(other?.outcome == .conflict)

        gate.open()
        #expect(try await first.value.outcome == .applied)
        let later = try await answerWithin { try copy(body) }
        #expect(later?.outcome == .replayed)
        #expect(later?.response.body == body)
        #expect(try environment.read { try $0.get(effects, key: Array("k-1".utf8)) } == [1])
    }
}
