public import Foundation

/// The storage seam: the server's own database, as the claims see it.
///
/// A store runs a closure inside one transaction of the database that also holds the
/// server's records, and reads and writes claim records within it. Because the write a claim
/// protects runs in that same transaction (see ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)``),
/// the claim's completion and the write commit together, or neither does.
///
/// A request first reads its claim as last committed (``committedClaim(_:)``), outside any
/// transaction and without waiting for one: a copy of a write in progress, or of one done, is
/// answered there, even while that write holds its transaction open. Only a request that finds
/// no claim that counts goes on to take one, with ``insertClaimIfAbsent(_:for:in:)``: an atomic
/// insert-if-absent, never a lookup followed by an insert, so that of two copies arriving at
/// once exactly one inserts. A claim found there is held by the transaction from then on (a row
/// lock on a database with them; the single writer of an embedded store), so deciding on it and
/// replacing an expired one cannot race another copy. A store that would have to wait for
/// another transaction to hold it throws ``ClaimBusy`` instead.
///
/// This module ships ``InMemoryClaimStore`` and links no database; `LMDBClaimStore` and
/// `PostgresClaimStore` (each its own product) implement the same requirements on LMDB and on
/// PostgreSQL (see `Docs/idempotency-claims.md`).
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

    /// The claim stored under `id` as last committed, or `nil`, read outside any transaction:
    /// it never waits for a transaction in progress (not even one holding this claim) and holds
    /// nothing. Expired claims are returned too.
    func committedClaim(_ id: ClaimID) throws -> ClaimRecord?

    /// The claim stored under `id`, or `nil`, held by the transaction until it ends. Expired
    /// claims are returned too: the caller decides what counts (``ClaimRules``).
    func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord?

    /// Stores `record` under `id` if no claim is stored there, atomically.
    /// - Returns: `nil` when `record` was stored; otherwise the claim stored there, left
    ///   unchanged and held by the transaction until it ends (as ``claim(_:in:)`` holds it).
    /// - Throws: ``ClaimBusy`` when another transaction holds the claim, or is inserting one
    ///   there, and taking it would mean waiting for that transaction: nothing is stored. A
    ///   store whose transactions run one at a time never throws it.
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

/// Thrown by ``ClaimStore/insertClaimIfAbsent(_:for:in:)`` instead of waiting for another
/// transaction that holds the claim (a copy taking it, the write completing it, a release or a
/// purge): the request is answered 409 `idempotency_in_progress`, and its retry finds the claim
/// as that transaction left it.
public struct ClaimBusy: Error, Hashable, Sendable, CustomStringConvertible {
    public init() {}

    public var description: String { "another transaction holds this claim now" }
}
