import Foundation
import IdempotencyClaims

/// The server's writes, inside the transaction that completes a claim. Each is one atomic step,
/// so that servers sharing one database (PostgreSQL) never hand out a revision or a request id
/// twice.
protocol ServerTransaction {
    /// Stores `body` as the next revision of the record (1 for the first create of its id).
    /// - Returns: the revision stored.
    func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) throws -> Int
    /// Records a pending approval; answers its request id, `apr-N` in the order created.
    func addApproval(type: String, businessID: String, key: String, body: Data) throws -> String
    /// Counts one applied effect for the `Idempotency-Key` `key`.
    func countApplied(key: String) throws
}

/// The server's database: claims and records together, in memory, in LMDB or in PostgreSQL.
protocol ServerStorage: Sendable {
    /// Answers a business request through the claims (see ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)``).
    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer

    /// How many effects were applied per `Idempotency-Key`.
    func appliedCounts() throws -> [String: Int]
    /// The records, sorted by type, business and id.
    func records() throws -> [StoredRecord]
    /// The pending approvals, in the order created.
    func approvals() throws -> [PendingApproval]
    /// Forgets every record, approval, count and claim.
    func reset() throws
    func close()
}

extension IdempotencyClaims {
    /// ``ServerStorage/handle(scope:key:body:whileClaimed:write:)`` for a storage whose claims
    /// live in `Store`: the write sees the store's transaction as `wrap` presents it.
    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse,
        wrap: (Store.Transaction) -> any ServerTransaction
    ) throws -> ClaimAnswer {
        try handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed) { txn in try write(wrap(txn)) }
    }
}
