package import Foundation
package import IdempotencyClaims
package import OutboxWire

/// The server's writes, inside the transaction that completes a claim. Each is one atomic step,
/// so that servers sharing one database (PostgreSQL) never hand out a revision or a request id
/// twice.
package protocol ServerTransaction {
    /// Stores `body` as the next revision of the record (1 for the first create of its id; a
    /// tombstone's id is created again, at the revision after the delete's).
    /// - Returns: the revision stored.
    func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) throws -> Int
    /// Records a pending approval; answers its request id, `apr-N` in the order created.
    func addApproval(type: String, businessID: String, key: String, body: Data) throws -> String
    /// Counts one applied effect for the `Idempotency-Key` `key`.
    func countApplied(key: String) throws
    /// The record of that type, business and id (a tombstone too), or `nil`; held by the
    /// transaction until it ends (a row lock on PostgreSQL; the one writer of the embedded
    /// stores), so that its revision cannot move between the check of `If-Match` and the write.
    func lockedRecord(type: String, businessID: String, id: String) throws -> StoredRecord?
    /// Stores `record` (a tombstone too) in place of the record of its type, business and id,
    /// which ``lockedRecord(type:businessID:id:)`` read in this transaction.
    func replaceRecord(_ record: StoredRecord) throws
    /// Writes the change row of `record`'s new revision (a tombstone too) in this transaction,
    /// the next of its business's feed, and answers the position from which it is visible, which
    /// the answer to the write sends in `Outbox-Visible-At`. Called after every
    /// ``putNextRevision(type:businessID:id:key:body:)`` and ``replaceRecord(_:)``.
    /// - Returns: `nil` for a storage that keeps no feed: its answers carry no position.
    func recordChange(_ record: StoredRecord) throws -> FeedPosition?
}

/// A storage's change feed: the one read ``FeedHandling`` answers pages from, and the controls
/// a test drives it with.
package protocol ServerFeed: ChangeLog, Sendable {
    /// Forgets `business`'s changes at or before `through` and raises its floor there, as
    /// tombstones past their retention are forgotten, without a clock: a cursor below is then
    /// answered 409 `expired`.
    /// - Returns: the floor now, and how many changes were forgotten.
    /// - Throws: ``FeedPurgeRefusal`` for a position of another epoch or past the feed's end.
    func purge(business: String, through: FeedPosition) throws -> (floor: FeedPosition, purged: Int)
}

/// Why a purge was refused: what to send instead.
package struct FeedPurgeRefusal: Error {
    package var message: String

    package init(message: String) {
        self.message = message
    }
}

/// The server's database: claims and records together, in memory, in LMDB or in PostgreSQL.
package protocol ServerStorage: Sendable {
    /// Answers a business request through the claims (see ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)``).
    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer

    /// Runs `body` in a transaction of its own, outside any claim: a change made elsewhere (by
    /// another device, as far as the client can tell). Returning commits; throwing rolls back.
    func transaction<R>(_ body: (any ServerTransaction) throws -> R) throws -> R

    /// How many effects were applied per `Idempotency-Key`, keys byte for byte.
    func appliedCounts() throws -> AppliedCounts
    /// The records, sorted by type, business and id.
    func records() throws -> [StoredRecord]
    /// The pending approvals, in the order created.
    func approvals() throws -> [PendingApproval]
    /// The change feed; `nil` for a storage that keeps none yet (LMDB, PostgreSQL): the feed is
    /// served by the memory storage so far, and `GET /sync/changes` is 501 on the others.
    var feed: (any ServerFeed)? { get }
    /// Forgets every record, approval, count and claim, and the feed's changes; the feed's epoch
    /// goes up by one, so a cursor of before is answered 409 `foreign_epoch`.
    func reset() throws
    func close()
}

extension IdempotencyClaims {
    /// ``ServerStorage/handle(scope:key:body:whileClaimed:write:)`` for a storage whose claims
    /// live in `Store`: the write sees the store's transaction as `wrap` presents it.
    package func handle(
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
