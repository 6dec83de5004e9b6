public import Foundation

/// The storage seam: the server's own database, as the claims see it.
///
/// A store runs a closure inside one transaction of the database that also holds the
/// server's records, and reads and writes claim records within it. Because the write a claim
/// protects runs in that same transaction (see ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)``),
/// the claim's completion and the write commit together, or neither does.
///
/// A claim is taken with ``insertClaimIfAbsent(_:for:in:)``: an atomic insert-if-absent, never
/// a lookup followed by an insert, so that of two copies of a request arriving at once exactly
/// one inserts. A claim found there is held by the transaction from then on (a row lock on a
/// database with them; the single writer of an embedded store), so deciding on it and replacing
/// an expired one cannot race another copy.
///
/// The package ships ``InMemoryClaimStore`` and ``LMDBClaimStore``; `PostgresClaimStore` (its own
/// product) implements the same requirements on PostgreSQL (see `Docs/server.md`).
public protocol ClaimStore: Sendable {
    /// The server's transaction, as handed to the write a claim protects. Valid only inside
    /// the closure of ``transaction(_:)``.
    associatedtype Transaction

    /// Runs `body` in one transaction: returning commits, throwing rolls back and rethrows.
    ///
    /// A store may run `body` again from the start (LMDB does when its map must grow; PostgreSQL
    /// after a serialization failure or a deadlock), so `body` must do nothing but work on the
    /// transaction.
    func transaction<R>(_ body: (Transaction) throws -> R) throws -> R

    /// The claim stored under `id`, or `nil`, held by the transaction until it ends. Expired
    /// claims are returned too: the caller decides what counts (``ClaimRules``).
    func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord?

    /// Stores `record` under `id` if no claim is stored there, atomically.
    /// - Returns: `nil` when `record` was stored; otherwise the claim stored there, left
    ///   unchanged and held by the transaction until it ends (as ``claim(_:in:)`` holds it).
    func insertClaimIfAbsent(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws -> ClaimRecord?

    /// Stores `record` under `id`, replacing any claim there.
    func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws

    /// Removes the claim under `id`, if any.
    func removeClaim(_ id: ClaimID, in transaction: Transaction) throws

    /// Removes up to `limit` claims that no longer count at `now` (``ClaimRules/isLive(_:now:policy:)``
    /// is false: completed past the retention, or in progress past the lease).
    /// - Returns: how many were removed.
    func removeDeadClaims(at now: Date, policy: ClaimPolicy, limit: Int, in transaction: Transaction) throws -> Int
}
