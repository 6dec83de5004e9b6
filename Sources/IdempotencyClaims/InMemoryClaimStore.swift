public import Foundation
import Synchronization

/// A ``ClaimStore`` in memory, with the server's records beside the claims: for a server of one
/// process that keeps its data in a Swift value, and for tests.
///
/// A real store, not a test double: what it holds is gone when the process ends, and it serves
/// one process only (several processes share claims through `PostgresClaimStore`). The test
/// server's memory storage and `OutboxTesting`'s `InMemoryServer` run on it.
///
/// `Records` is the server's own data. A transaction works on a copy of it and of the claims;
/// returning from the closure commits both at once, throwing discards both. Transactions are
/// serialized; ``records()`` and ``committedClaim(_:)`` read the last committed state at any
/// time without waiting for the transaction in progress.
///
/// - Warning: a transaction must not start another one (nor call ``reset(records:)``): it would
///   wait for itself.
///
/// ```swift
/// struct Catalog: Sendable { var products: [String: Product] = [:] }
/// let store = InMemoryClaimStore(records: Catalog())
/// let claims = IdempotencyClaims(store: store)
/// _ = try claims.handle(scope: scope, key: key, body: body) { txn in
///     txn.records.products[product.id] = product
///     return ClaimResponse(status: 201, body: body)
/// }
/// store.records().products.count   // 1
/// ```
public final class InMemoryClaimStore<Records: Sendable>: ClaimStore {
    /// One transaction's view: the records to change and the claims, valid inside the closure only.
    ///
    /// - Warning: it must not be kept past its closure; using it afterwards traps.
    public final class Transaction {
        fileprivate var isOpen = true
        fileprivate var claims: SnapshotDictionary<ClaimID, ClaimRecord>

        /// The server's records as of this transaction; changes commit with the claims.
        public var records: Records {
            didSet { precondition(isOpen, "an InMemoryClaimStore transaction was used after it ended") }
        }

        fileprivate init(records: Records, claims: SnapshotDictionary<ClaimID, ClaimRecord>) {
            self.records = records
            self.claims = claims
        }

        fileprivate func checkOpen() {
            precondition(isOpen, "an InMemoryClaimStore transaction was used after it ended")
        }
    }

    private struct Committed: Sendable {
        var records: Records
        var claims: SnapshotDictionary<ClaimID, ClaimRecord>
    }

    private let committed: Mutex<Committed>
    /// Held for a whole transaction: writers one at a time, as in a database's write lock.
    private let writer = Mutex(())

    /// - Parameter records: the server's records at the start.
    public init(records: Records) {
        committed = Mutex(Committed(records: records, claims: SnapshotDictionary()))
    }

    public func transaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        try writer.withLock { _ throws -> R in
            let start = committed.withLock { $0 }
            let txn = Transaction(records: start.records, claims: start.claims)
            defer { txn.isOpen = false }
            let result = try body(txn)
            let end = Committed(records: txn.records, claims: txn.claims)
            committed.withLock { $0 = end }
            return result
        }
    }

    /// Read from the last committed state: never waits for the writer.
    public func committedClaim(_ id: ClaimID) throws -> ClaimRecord? {
        committed.withLock { $0.claims[id] }
    }

    public func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        transaction.checkOpen()
        return transaction.claims[id]
    }

    public func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws {
        transaction.checkOpen()
        transaction.claims[id] = record
    }

    public func removeClaim(_ id: ClaimID, in transaction: Transaction) throws {
        transaction.checkOpen()
        transaction.claims[id] = nil
    }

    public func insertClaimIfAbsent(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        transaction.checkOpen()
        // Transactions are serialized: nothing can come between this look and this store.
        if let existing = transaction.claims[id] { return existing }
        transaction.claims[id] = record
        return nil
    }

    public func removeDeadClaims(at now: Date, policy: ClaimPolicy, limit: Int, in transaction: Transaction) throws -> Int {
        transaction.checkOpen()
        let dead = Array(transaction.claims.entries.lazy.filter { !ClaimRules.isLive($0.value, now: now, policy: policy) }.prefix(limit).map(\.key))
        for id in dead { transaction.claims[id] = nil }
        return dead.count
    }

    /// The records as last committed.
    public func records() -> Records {
        committed.withLock { $0.records }
    }

    /// How many claims are stored, live or expired.
    public var claimCount: Int {
        committed.withLock { $0.claims.count }
    }

    /// Replaces the records and forgets every claim, waiting for a transaction in progress.
    public func reset(records: Records) {
        writer.withLock { _ in
            committed.withLock { $0 = Committed(records: records, claims: SnapshotDictionary()) }
        }
    }
}
