import Foundation
@testable import IdempotencyClaims
import OutboxCrypto
import Testing

/// The claim rules, end to end, one suite for every store: in memory, LMDB and PostgreSQL.
@Suite("Idempotency claims")
struct IdempotencyClaimsTests {
    @Test(arguments: Backend.allCases)
    func aMissingOrBlankKeyIsRefusedWithoutRunningTheWrite(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        for key in [nil, "", "   ", "\t"] as [String?] {
            let answer = try harness.handle(key: key)
            #expect(answer.outcome == .keyRequired)
            #expect(answer.response.status == 400)
            #expect(answer.response.header("Content-Type") == "application/json")
            #expect(try problemCode(answer) == "idempotency_key_required")
        }
        #expect(try harness.totalEffects() == 0)
    }

    @Test(arguments: Backend.allCases)
    func aKeyTooLongIsRefusedAsInvalid(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let answer = try harness.handle(key: String(repeating: "k", count: IdempotencyKey.maxBytes + 1))
        #expect(answer.outcome == .keyInvalid)
        #expect(answer.response.status == 400)
        #expect(try problemCode(answer) == "idempotency_key_invalid")
        #expect(try harness.totalEffects() == 0)
    }

    @Test(arguments: Backend.allCases)
    func theFirstRequestRunsTheWriteAndStoresItsResponseWithTheClaim(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let answer = try harness.handle(key: "k-1")
        #expect(answer.outcome == .applied)
        #expect(answer.response.status == 201)
        #expect(answer.response.header("Idempotent-Replayed") == nil)
        #expect(try harness.effects("k-1") == 1)
        let claim = try #require(try harness.claim("k-1"))
        #expect(claim.response == answer.response)
        #expect(claim.fingerprint == SHA256Digest(of: Data(#"{"id":"p-1","name":"Café"}"#.utf8)))
        #expect(claim.takenAt == harness.clock.now())
    }

    @Test(arguments: Backend.allCases, [Write.create, Write.approval])
    func theSameKeyAndBodyReplayTheStoredResponseExactlyWithoutRunningTheWrite(
        _ backend: Backend, write: Write
    ) throws {
        let harness = try ClaimsHarness.make(backend)
        let first = try harness.handle(key: "k-1", write: write)
        #expect(first.response.status == write.status)
        for _ in 0..<3 {
            let replay = try harness.handle(key: "k-1", write: write)
            #expect(replay.outcome == .replayed)
            #expect(replay.response.status == first.response.status)
            #expect(replay.response.body == first.response.body)
            #expect(replay.response.headers == first.response.headers + [.init(name: "Idempotent-Replayed", value: "true")])
        }
        #expect(try harness.effects("k-1") == 1)
    }

    @Test(arguments: Backend.allCases)
    func onlyTheConfiguredHeadersAreStoredAndTheFirstAnswerMatchesTheReplay(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let first = try harness.handle(key: "k-1")
        #expect(first.response.headers.map(\.name) == ["Content-Type", "Location"], "X-Request-ID dropped")
        #expect(first.response.header("Location") == "/products/p-1")
        let replay = try harness.handle(key: "k-1")
        #expect(replay.response.header("Location") == "/products/p-1")
    }

    @Test(arguments: Backend.allCases)
    func theSameKeyWithADifferentBodyIsAConflict(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        _ = try harness.handle(key: "k-1", body: #"{"id":"p-1","name":"Café"}"#)
        let answer = try harness.handle(key: "k-1", body: #"{"id":"p-1","name":"Cafe"}"#)
        #expect(answer.outcome == .conflict)
        #expect(answer.response.status == 409)
        #expect(try problemCode(answer) == "idempotency_conflict")
        #expect(try harness.effects("k-1") == 1)
        // The stored response is untouched: the original body still replays.
        #expect(try harness.handle(key: "k-1", body: #"{"id":"p-1","name":"Café"}"#).outcome == .replayed)
    }

    @Test(arguments: Backend.allCases)
    func theSameKeyWhileTheFirstIsFinalizingIsInProgressThenReplays(_ backend: Backend) async throws {
        let harness = try ClaimsHarness.make(backend)
        let claimed = Signal()
        let gate = Gate()
        let first = Task {
            try await onThread {
                try harness.handle(key: "k-1", whileClaimed: {
                    claimed.fire()
                    try gate.wait()
                })
            }
        }
        await claimed.wait()
        let second = try harness.handle(key: "k-1")
        #expect(second.outcome == .inProgress)
        #expect(second.response.status == 409)
        #expect(second.response.header("Retry-After") == "1")
        #expect(try problemCode(second) == "idempotency_in_progress")
        let differentBody = try harness.handle(key: "k-1", body: #"{"id":"p-2"}"#)
        #expect(differentBody.outcome == .conflict, "a different body is a conflict even while in progress")
        #expect(try harness.effects("k-1") == 0)

        gate.open()
        #expect(try await first.value.outcome == .applied)
        #expect(try harness.handle(key: "k-1").outcome == .replayed)
        #expect(try harness.effects("k-1") == 1)
    }

    @Test(arguments: Backend.allCases)
    func aWriteThatThrowsLeavesNeitherItsEffectNorAClaimAndARetryRunsAgain(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        #expect(throws: ScriptedWriteFailure.self) { try harness.handle(key: "k-1", write: .failing) }
        #expect(try harness.effects("k-1") == 0, "the effect was rolled back with the transaction")
        #expect(try harness.claim("k-1") == nil)
        let retry = try harness.handle(key: "k-1")
        #expect(retry.outcome == .applied)
        #expect(try harness.effects("k-1") == 1)
    }

    @Test(arguments: Backend.allCases)
    func workWhileClaimedThatThrowsLeavesNoClaim(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        #expect(throws: ScriptedWriteFailure.self) {
            try harness.handle(key: "k-1", whileClaimed: { throw ScriptedWriteFailure() })
        }
        #expect(try harness.claim("k-1") == nil)
        #expect(try harness.handle(key: "k-1").outcome == .applied)
    }

    @Test(arguments: Backend.allCases)
    func claimsAreScopedByBusinessAndOperationType(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let other = ClaimScope(businessID: "b-2", operationType: "product.create")
        let otherType = ClaimScope(businessID: "b-1", operationType: "employee.create")
        #expect(try harness.handle(key: "k-1").outcome == .applied)
        #expect(try harness.handle(key: "k-1", scope: other).outcome == .applied)
        #expect(try harness.handle(key: "k-1", scope: otherType).outcome == .applied)
        #expect(try harness.effects("k-1") == 1)
        #expect(try harness.effects("k-1", scope: other) == 1)
        #expect(try harness.effects("k-1", scope: otherType) == 1)
    }

    @Test(arguments: Backend.allCases)
    func claimsExpireOnlyAfterTheRetentionByTheServersClock(_ backend: Backend) throws {
        let policy = ClaimPolicy(retention: 30 * ClaimPolicy.day)
        let harness = try ClaimsHarness.make(backend, policy: policy)
        _ = try harness.handle(key: "k-1")
        harness.clock.advance(by: policy.retention - 1)
        #expect(try harness.handle(key: "k-1").outcome == .replayed, "one second before the retention ends")
        #expect(try harness.purgeExpired() == 0)
        harness.clock.advance(by: 1)
        #expect(try harness.purgeExpired() == 1)
        #expect(try harness.claim("k-1") == nil)
        #expect(try harness.handle(key: "k-1").outcome == .applied, "an expired key is new again")
        #expect(try harness.effects("k-1") == 2)
    }

    @Test(arguments: Backend.allCases)
    func purgingRemovesOnlyDeadClaimsAndInBoundedBatches(_ backend: Backend) throws {
        let policy = ClaimPolicy(retention: 100, inProgressLease: 10)
        let harness = try ClaimsHarness.make(backend, policy: policy)
        for number in 0..<25 { _ = try harness.handle(key: "old-\(number)") }
        harness.clock.advance(by: 100)
        for number in 0..<3 { _ = try harness.handle(key: "new-\(number)") }
        let now = harness.clock.now()
        let fingerprint = SHA256Digest(of: Data("{}".utf8))
        try harness.put(ClaimRecord(fingerprint: fingerprint, takenAt: now, state: .inProgress(token: ClaimToken(), leaseExpiresAt: now)), key: "abandoned")
        try harness.put(ClaimRecord(fingerprint: fingerprint, takenAt: now, state: .inProgress(token: ClaimToken(), leaseExpiresAt: now.addingTimeInterval(1))), key: "running")

        #expect(try harness.purgeExpired(limit: 10) == 10, "one batch stops at its limit")
        #expect(try harness.purgeAllExpired(batchLimit: 10) == 16, "the other 15 old claims and the abandoned one")
        #expect(try harness.purgeAllExpired(batchLimit: 10) == 0)
        for number in 0..<25 { #expect(try harness.claim("old-\(number)") == nil) }
        #expect(try harness.claim("abandoned") == nil)
        for number in 0..<3 { #expect(try harness.claim("new-\(number)")?.response != nil, "completed within the retention") }
        #expect(try harness.claim("running") != nil, "in progress within its lease")
    }

    @Test(arguments: Backend.allCases)
    func insertingIfAbsentNeverReplacesAStoredClaim(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let now = harness.clock.now()
        let first = ClaimRecord(fingerprint: SHA256Digest(of: Data("a".utf8)), takenAt: now,
                                state: .inProgress(token: ClaimToken(), leaseExpiresAt: now.addingTimeInterval(60)))
        let second = ClaimRecord(fingerprint: SHA256Digest(of: Data("b".utf8)), takenAt: now,
                                 state: .inProgress(token: ClaimToken(), leaseExpiresAt: now.addingTimeInterval(60)))
        #expect(try harness.insertIfAbsent(first, key: "k-1") == nil, "inserted")
        #expect(try harness.insertIfAbsent(second, key: "k-1") == first, "the stored claim, unchanged")
        #expect(try harness.claim("k-1") == first)
    }

    @Test(arguments: Backend.allCases)
    func anAbandonedClaimIsTakenOverOnlyAfterItsLease(_ backend: Backend) throws {
        let policy = ClaimPolicy(inProgressLease: 60)
        let harness = try ClaimsHarness.make(backend, policy: policy)
        // A server took this claim and died before its write.
        let now = harness.clock.now()
        try harness.put(
            ClaimRecord(
                fingerprint: SHA256Digest(of: Data(#"{"id":"p-1","name":"Café"}"#.utf8)),
                takenAt: now,
                state: .inProgress(token: ClaimToken(), leaseExpiresAt: now.addingTimeInterval(60))),
            key: "k-1")
        #expect(try harness.handle(key: "k-1").outcome == .inProgress)
        harness.clock.advance(by: 60)
        #expect(try harness.handle(key: "k-1").outcome == .applied)
        #expect(try harness.effects("k-1") == 1)
    }

    @Test(arguments: Backend.allCases)
    func aWriteWhoseClaimWasTakenOverNeverCommits(_ backend: Backend) async throws {
        let harness = try ClaimsHarness.make(backend, policy: ClaimPolicy(inProgressLease: 60))
        let claimed = Signal()
        let gate = Gate()
        let slow = Task {
            try await onThread {
                try harness.handle(key: "k-1", whileClaimed: {
                    claimed.fire()
                    try gate.wait()
                })
            }
        }
        await claimed.wait()
        harness.clock.advance(by: 61)
        let takeover = try harness.handle(key: "k-1")
        #expect(takeover.outcome == .applied)
        gate.open()
        let late = try await slow.value
        #expect(late.outcome == .replayed, "the slow request finds the claim completed by another")
        #expect(late.response.body == takeover.response.body)
        #expect(try harness.effects("k-1") == 1)
    }

    @Test(arguments: Backend.allCases)
    func thirtyTwoConcurrentCopiesApplyOnceAndEachGetsTheOutcomeOrInProgress(_ backend: Backend) async throws {
        let harness = try ClaimsHarness.make(backend)
        let copies = 32
        let startLine = StartLine(count: copies)
        let answers = try await withThrowingTaskGroup(of: ClaimAnswer.self) { group in
            for _ in 0..<copies {
                group.addTask {
                    try await onThread {
                        try startLine.arriveAndWait()
                        return try harness.handle(key: "k-1")
                    }
                }
            }
            return try await group.reduce(into: [ClaimAnswer]()) { $0.append($1) }
        }
        #expect(try harness.effects("k-1") == 1)
        let applied = answers.filter { $0.outcome == .applied }
        #expect(applied.count == 1)
        let stored = try #require(try harness.claim("k-1")?.response)
        for answer in answers {
            switch answer.outcome {
            case .applied:
                #expect(answer.response == stored)
            case .replayed:
                #expect(answer.response.status == stored.status)
                #expect(answer.response.body == stored.body)
            case .inProgress:
                #expect(try problemCode(answer) == "idempotency_in_progress")
            default:
                Issue.record("unexpected answer \(answer.outcome)")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func thirtyOneCopiesArrivingWhileTheFirstIsHeldAreAllInProgress(_ backend: Backend) async throws {
        let harness = try ClaimsHarness.make(backend)
        let copies = 32
        let gate = Gate()
        var outcomes: [ClaimAnswer.Outcome] = []
        try await withThrowingTaskGroup(of: ClaimAnswer.self) { group in
            for _ in 0..<copies {
                group.addTask {
                    // Only the copy that takes the claim runs `whileClaimed`, and waits there.
                    try await onThread { try harness.handle(key: "k-1", whileClaimed: { try gate.wait() }) }
                }
            }
            for try await answer in group {
                outcomes.append(answer.outcome)
                if outcomes.count == copies - 1 { gate.open() }
            }
        }
        #expect(outcomes.filter { $0 == .inProgress }.count == copies - 1)
        #expect(outcomes.last == .applied)
        #expect(try harness.effects("k-1") == 1)
        #expect(try harness.handle(key: "k-1").outcome == .replayed)
    }
}

/// The `code` of a JSON problem body.
func problemCode(_ answer: ClaimAnswer) throws -> String? {
    let object = try JSONSerialization.jsonObject(with: answer.response.body) as? [String: Any]
    #expect(object?["message"] is String)
    return object?["code"] as? String
}
