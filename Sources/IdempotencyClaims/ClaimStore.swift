/// The storage seam: the server's own database, as the claims see it.
///
/// A store runs a closure inside one transaction of the database that also holds the
/// server's records, and reads and writes claim records within it. Because the write a claim
/// protects runs in that same transaction (see ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)``),
/// the claim's completion and the write commit together, or neither does.
///
/// The package ships ``InMemoryClaimStore`` and ``LMDBClaimStore``. A server on PostgreSQL
/// implements the same four requirements on a connection (see `Docs/server.md`):
///
/// ```swift
/// struct PostgresClaimStore: ClaimStore {
///     func transaction<R>(_ body: (PostgresTransaction) throws -> R) throws -> R {
///         try pool.withTransaction { txn in try body(txn) }   // BEGIN ... COMMIT / ROLLBACK
///     }
///     func claim(_ id: ClaimID, in txn: PostgresTransaction) throws -> ClaimRecord? {
///         // SELECT ... FROM idempotency_keys WHERE business_id = $1 AND ... FOR UPDATE
///     }
///     ...
/// }
/// ```
public protocol ClaimStore: Sendable {
    /// The server's transaction, as handed to the write a claim protects. Valid only inside
    /// the closure of ``transaction(_:)``.
    associatedtype Transaction

    /// Runs `body` in one transaction: returning commits, throwing rolls back and rethrows.
    ///
    /// A store may run `body` again from the start (LMDB does when its map must grow), so
    /// `body` must do nothing but work on the transaction.
    func transaction<R>(_ body: (Transaction) throws -> R) throws -> R

    /// The claim stored under `id`, or `nil`. Expired claims are returned too: the caller
    /// decides what counts (``ClaimRules``).
    func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord?

    /// Stores `record` under `id`, replacing any claim there.
    func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws

    /// Removes the claim under `id`, if any.
    func removeClaim(_ id: ClaimID, in transaction: Transaction) throws

    /// The ids of up to `limit` claims for which `isDead` answers `true`: how expired claims are
    /// found and purged.
    func claimIDs(
        in transaction: Transaction,
        limit: Int,
        where isDead: (ClaimRecord) -> Bool
    ) throws -> [ClaimID]
}
