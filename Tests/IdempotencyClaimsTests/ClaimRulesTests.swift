import Foundation
import IdempotencyClaims
import OutboxCrypto
import Testing

@Suite("The claim rules")
struct ClaimRulesTests {
    let policy = ClaimPolicy(retention: 1000, inProgressLease: 10)
    let now = Date(timeIntervalSinceReferenceDate: 10_000)
    let mine = SHA256Digest(of: Data("a".utf8))
    let other = SHA256Digest(of: Data("b".utf8))
    let stored = ClaimResponse(status: 201, body: Data("{}".utf8))

    func completed(at moment: Date) -> ClaimRecord {
        ClaimRecord(fingerprint: mine, takenAt: moment, state: .completed(response: stored, completedAt: moment))
    }

    func inProgress(leaseUntil moment: Date) -> ClaimRecord {
        ClaimRecord(fingerprint: mine, takenAt: now, state: .inProgress(token: ClaimToken(), leaseExpiresAt: moment))
    }

    func decide(_ existing: ClaimRecord?, _ fingerprint: SHA256Digest) -> ClaimDecision {
        ClaimRules.decide(existing: existing, fingerprint: fingerprint, now: now, policy: policy)
    }

    @Test func noClaimIsTaken() {
        #expect(decide(nil, mine) == .take)
    }

    @Test func aLiveCompletedClaimReplaysTheSameBodyAndRefusesAnother() {
        let claim = completed(at: now.addingTimeInterval(-999))
        #expect(decide(claim, mine) == .replay(stored))
        #expect(decide(claim, other) == .conflict)
    }

    @Test func aCompletedClaimPastTheRetentionIsTakenAgain() {
        let claim = completed(at: now.addingTimeInterval(-1000))
        #expect(decide(claim, mine) == .take)
        #expect(decide(claim, other) == .take)
    }

    @Test func anInProgressClaimWithinItsLeaseIsInProgressOrAConflict() {
        let claim = inProgress(leaseUntil: now.addingTimeInterval(1))
        #expect(decide(claim, mine) == .inProgress)
        #expect(decide(claim, other) == .conflict)
    }

    @Test func anInProgressClaimPastItsLeaseIsTakenOver() {
        #expect(decide(inProgress(leaseUntil: now), mine) == .take)
    }
}
