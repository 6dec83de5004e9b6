import Foundation
import IdempotencyClaims

/// The server's writes, inside the transaction that completes a claim.
protocol ServerTransaction {
    func record(type: String, businessID: String, id: String) throws -> StoredRecord?
    func put(_ record: StoredRecord) throws
    func approvalCount() throws -> Int
    func add(_ approval: PendingApproval) throws
    /// Counts one applied effect for the `Idempotency-Key` `key`.
    func countApplied(key: String) throws
}

/// The server's database: claims and records together, in memory or in LMDB.
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
