public import Foundation
import OutboxCrypto

/// Makes a write apply once, however many times its request arrives.
///
/// A claim is scoped by (business id, operation type, `Idempotency-Key`). The first request
/// with a key takes the claim, runs the write, and stores the response in the same
/// transaction as the write; every later request with the same key and body gets that
/// response again, without running the write.
///
/// ```swift
/// let claims = IdempotencyClaims(store: InMemoryClaimStore(records: Catalog()))
/// let answer = try claims.handle(
///     scope: ClaimScope(businessID: "b-1", operationType: "product.create"),
///     key: request.header("Idempotency-Key"),
///     body: request.body
/// ) { txn in
///     txn.records.products[id] = product        // the write, in the claim's transaction
///     return ClaimResponse(status: 201, headers: [...], body: json)
/// }
/// send(answer.response)
/// ```
///
/// How a request is answered:
///
/// | request                                        | answer                                         |
/// |------------------------------------------------|------------------------------------------------|
/// | no key, or a blank one                         | 400 `idempotency_key_required`                 |
/// | first with its key                             | the write runs; its response                   |
/// | first with its key, the write refuses          | the ``ClaimRefusal``'s response; no claim kept |
/// | same key, same body, after the first committed | the stored response + `Idempotent-Replayed`    |
/// | same key, different body                       | 409 `idempotency_conflict`                     |
/// | same key while the first is finalizing         | 409 `idempotency_in_progress`                  |
/// | after the first's write threw or refused       | the write runs again                           |
/// | after the retention has passed                 | the write runs again                           |
///
/// ## How "in progress" works
/// A claim is taken in a short transaction of its own (inserted if absent, as in progress, with
/// a lease), then completed in the transaction of the write. From the first commit to the second,
/// other requests with the key see it in progress and are answered 409 without waiting, read
/// from what is committed (``ClaimStore/committedClaim(_:)``), even while the write holds its
/// transaction open; work that must not hold the database's transaction runs between the two
/// (`whileClaimed`). A write that throws removes the claim;
/// one that throws ``ClaimRefusal`` removes it too, and its response is the answer.
/// If the process dies between the two transactions, the claim stays in progress until its
/// lease (``ClaimPolicy/inProgressLease``) runs out; then the next request takes it over. The
/// write's transaction checks that it still holds the claim, so a write whose lease was taken
/// over never commits: exactly once holds whatever the timing.
public struct IdempotencyClaims<Store: ClaimStore>: Sendable {
    public let store: Store
    public let policy: ClaimPolicy
    /// The server's clock: the only time claims are measured by.
    public let clock: any ClaimClock

    public init(store: Store, policy: ClaimPolicy = ClaimPolicy(), clock: any ClaimClock = SystemClaimClock()) {
        self.store = store
        self.policy = policy
        self.clock = clock
    }

    /// Answers one request, running `write` at most once per claim.
    ///
    /// - Parameters:
    ///   - scope: the business and operation type the request belongs to.
    ///   - key: the raw `Idempotency-Key` header value, `nil` when the header is absent.
    ///   - body: the request body, byte for byte; its SHA-256 is the claim's fingerprint.
    ///   - whileClaimed: runs once the claim is taken and before the write's transaction
    ///     begins, holding no transaction: for slow work that must not block the database.
    ///     Other requests with the key are answered `idempotency_in_progress` meanwhile.
    ///   - write: the write the claim protects, run inside the transaction that completes the
    ///     claim. Its response is stored (only the headers of ``ClaimPolicy/storedHeaderNames``)
    ///     and answered. It may run again from the start if the store retries the transaction,
    ///     so it must only work on the transaction.
    ///     To answer without applying anything and without keeping the claim (a failed
    ///     `If-Match`), it throws ``ClaimRefusal``.
    /// - Returns: the response to send and its ``ClaimAnswer/Outcome``; a ``ClaimRefusal``'s
    ///   response with the outcome ``ClaimAnswer/Outcome/refused``.
    /// - Throws: what `whileClaimed` or `write` throws (but a ``ClaimRefusal``), after removing
    ///   the claim so that a retry runs again; or the store's errors.
    public func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void = {},
        write: (Store.Transaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        let parsed: IdempotencyKey
        switch IdempotencyKey.parse(key) {
        case .success(let key): parsed = key
        case .failure(let problem): return .keyProblem(problem)
        }
        let id = ClaimID(scope: scope, key: parsed)
        let fingerprint = SHA256Digest(of: body)
        let token = ClaimToken()

        if let answer = try take(id, fingerprint: fingerprint, token: token) { return answer }
        do {
            try whileClaimed()
            return try complete(id, fingerprint: fingerprint, token: token, write: write)
        } catch let refusal as ClaimRefusal {
            // The answer promises that no claim is left: if the claim cannot be removed, the
            // store's error is reported instead.
            try release(id, token: token)
            return ClaimAnswer(outcome: .refused, response: refusal.response)
        } catch {
            // The write's own error is the one to report. A claim that cannot be removed stays
            // in progress until its lease runs out, and then the next request takes it over.
            try? release(id, token: token)
            throw error
        }
    }

    /// The claim stored for a key as last committed, expired or not; `nil` when there is none.
    /// Never waits for a write in progress.
    public func claim(scope: ClaimScope, key: IdempotencyKey) throws -> ClaimRecord? {
        try store.committedClaim(ClaimID(scope: scope, key: key))
    }

    /// Removes up to `limit` claims that no longer count: completed ones past the retention and
    /// in-progress ones past their lease, in one short transaction. Expired claims are ignored
    /// anyway; this frees space.
    /// - Returns: how many claims were removed.
    @discardableResult
    public func purgeExpired(limit: Int = 1000) throws -> Int {
        precondition(limit > 0, "limit must be positive")
        return try store.transaction { txn in
            try store.removeDeadClaims(at: clock.now(), policy: policy, limit: limit, in: txn)
        }
    }

    /// Removes every claim that no longer counts, in batches of at most `batchLimit`, each in a
    /// transaction of its own so that no lock is held long; stops at the first batch that is not
    /// full (a store may skip claims another transaction holds: the next purge removes them).
    /// - Returns: how many claims were removed.
    @discardableResult
    public func purgeAllExpired(batchLimit: Int = 1000) throws -> Int {
        precondition(batchLimit > 0, "batchLimit must be positive")
        var total = 0
        while true {
            let removed = try purgeExpired(limit: batchLimit)
            total += removed
            if removed < batchLimit { return total }
        }
    }

    // MARK: The three transactions

    /// Takes the claim as in progress, or answers without taking it.
    ///
    /// A claim that counts is answered from what is committed, before any transaction: a copy
    /// never waits for the write holding its claim. Otherwise the claim is inserted if absent,
    /// atomically; a claim found there is held by the transaction, so replacing it when it no
    /// longer counts cannot race another copy. A store that finds the claim held elsewhere says
    /// so (``ClaimBusy``) rather than wait: that request is answered in progress too.
    private func take(_ id: ClaimID, fingerprint: SHA256Digest, token: ClaimToken) throws -> ClaimAnswer? {
        if let committed = try store.committedClaim(id) {
            let decision = ClaimRules.decide(existing: committed, fingerprint: fingerprint, now: clock.now(), policy: policy)
            if let answer = ClaimAnswer.answer(for: decision) { return answer }
        }
        do {
            return try store.transaction { txn in
                let now = clock.now()
                let record = ClaimRecord(
                    fingerprint: fingerprint,
                    takenAt: now,
                    state: .inProgress(token: token, leaseExpiresAt: now.addingTimeInterval(policy.inProgressLease)))
                guard let existing = try store.insertClaimIfAbsent(record, for: id, in: txn) else { return nil }
                let decision = ClaimRules.decide(existing: existing, fingerprint: fingerprint, now: now, policy: policy)
                if let answer = ClaimAnswer.answer(for: decision) { return answer }
                // Expired or abandoned: take it over.
                try store.putClaim(record, for: id, in: txn)
                return nil
            }
        } catch is ClaimBusy {
            return .inProgress
        }
    }

    /// Runs the write and completes the claim in one transaction, if the claim is still ours.
    private func complete(
        _ id: ClaimID,
        fingerprint: SHA256Digest,
        token: ClaimToken,
        write: (Store.Transaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        try store.transaction { txn in
            let now = clock.now()
            let current = try store.claim(id, in: txn)
            guard let current, case .inProgress(token, _) = current.state else {
                // Our lease ran out and another request took the claim over: it decides.
                let decision = ClaimRules.decide(existing: current, fingerprint: fingerprint, now: now, policy: policy)
                return ClaimAnswer.answer(for: decision) ?? .inProgress
            }
            let response = try write(txn).keepingHeaders(policy.storedHeaderNames)
            let completed = ClaimRecord(
                fingerprint: fingerprint,
                takenAt: current.takenAt,
                state: .completed(response: response, completedAt: now))
            try store.putClaim(completed, for: id, in: txn)
            return ClaimAnswer(outcome: .applied, response: response)
        }
    }

    /// Removes the claim after a write that failed or refused, if it is still ours.
    private func release(_ id: ClaimID, token: ClaimToken) throws {
        try store.transaction { txn in
            guard case .inProgress(token, _)? = try store.claim(id, in: txn)?.state else { return }
            try store.removeClaim(id, in: txn)
        }
    }
}
