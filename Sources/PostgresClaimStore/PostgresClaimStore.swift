public import Foundation
public import IdempotencyClaims

/// A ``ClaimStore`` on PostgreSQL: claims in the `idempotency_keys` table of the server's own
/// database, so that every process of a backend shares them.
///
/// The write a claim protects receives a ``Transaction`` and runs its statements through
/// ``Transaction/execute(_:_:)``, on the same connection and in the same transaction that
/// completes the claim: the record and the claim commit together, or neither does.
///
/// ```swift
/// let pool = PostgresConnectionPool(settings: PostgresConnectionSettings(conninfo: "dbname=shop sslmode=verify-full"), size: 16)
/// let claims = IdempotencyClaims(store: try PostgresClaimStore(pool: pool))   // creates or upgrades the table
/// let answer = try claims.handle(scope: scope, key: key, body: body) { txn in
///     try txn.execute("INSERT INTO products (id, body) VALUES ($1, $2)", [.text(id), .bytes(body)])
///     return ClaimResponse(status: 201, body: body)
/// }
/// ```
///
/// Transactions run at READ COMMITTED. The claim is taken by `INSERT ... ON CONFLICT DO
/// NOTHING`: of two copies arriving at once exactly one inserts, the other waits on the key
/// until the first's transaction ends and then finds its row. A claim found is read `FOR UPDATE`,
/// so deciding on it, taking it over and completing it cannot race another transaction. A
/// transaction the server aborts for a serialization failure or a deadlock runs again, up to
/// three times. Timestamps are kept to the microsecond.
public struct PostgresClaimStore: ClaimStore {
    /// One transaction on one pooled connection, valid inside the closure of
    /// ``PostgresClaimStore/transaction(_:)`` only: using it afterwards throws.
    public final class Transaction {
        fileprivate let connection: PostgresConnection
        fileprivate var isOpen = true

        fileprivate init(_ connection: PostgresConnection) {
            self.connection = connection
        }

        /// Runs one statement of the write, in the claim's transaction.
        /// - Throws: ``PostgresError``; `.transactionEnded` after the closure ended.
        @discardableResult
        public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
            guard isOpen else {
                throw PostgresError(.transactionEnded, message: "a PostgresClaimStore transaction was used after its closure ended")
            }
            return try connection.execute(sql, parameters)
        }
    }

    public let pool: PostgresConnectionPool

    /// Uses `pool`, first bringing the claims' schema to its latest version (see ``migrations``).
    /// - Throws: ``PostgresError`` when the database cannot be reached or migrated.
    public init(pool: PostgresConnectionPool) throws {
        self.pool = pool
        try Self.migrations.migrate(pool)
    }

    /// How many times a transaction runs when the server aborts it as transient.
    static let transactionAttempts = 3

    public func transaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        var attempt = 1
        while true {
            do {
                return try pool.transaction { connection in
                    let txn = Transaction(connection)
                    defer { txn.isOpen = false }
                    return try body(txn)
                }
            } catch let error as PostgresError where error.isTransient && attempt < Self.transactionAttempts {
                attempt += 1
            }
        }
    }

    public func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        let rows = try transaction.execute(
            "SELECT \(ClaimRow.columns) FROM idempotency_keys WHERE business_id = $1 AND operation_type = $2 AND key = $3 FOR UPDATE",
            ClaimRow.key(id))
        return try rows.first.map(ClaimRow.record)
    }

    public func insertClaimIfAbsent(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        // A claim deleted between the conflict and the lock (released, purged) is inserted on
        // the next turn; each turn sees what committed before it (READ COMMITTED).
        for _ in 0..<100 {
            let inserted = try transaction.execute(
                "INSERT INTO idempotency_keys (\(ClaimRow.keyColumns), \(ClaimRow.columns)) VALUES (\(ClaimRow.placeholders)) "
                    + "ON CONFLICT (\(ClaimRow.keyColumns)) DO NOTHING",
                ClaimRow.key(id) + ClaimRow.values(record))
            if inserted.affectedRows == 1 { return nil }
            if let existing = try claim(id, in: transaction) { return existing }
        }
        throw PostgresError(.server, message: "the claim kept being inserted and removed by others while this request took it")
    }

    public func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws {
        try transaction.execute(
            "INSERT INTO idempotency_keys (\(ClaimRow.keyColumns), \(ClaimRow.columns)) VALUES (\(ClaimRow.placeholders)) "
                + "ON CONFLICT (\(ClaimRow.keyColumns)) DO UPDATE SET \(ClaimRow.updates)",
            ClaimRow.key(id) + ClaimRow.values(record))
    }

    public func removeClaim(_ id: ClaimID, in transaction: Transaction) throws {
        try transaction.execute(
            "DELETE FROM idempotency_keys WHERE business_id = $1 AND operation_type = $2 AND key = $3", ClaimRow.key(id))
    }

    /// Deletes a batch of dead claims found through the partial indexes; claims another
    /// transaction holds are skipped (`SKIP LOCKED`), not waited for.
    public func removeDeadClaims(at now: Date, policy: ClaimPolicy, limit: Int, in transaction: Transaction) throws -> Int {
        try transaction.execute("""
            DELETE FROM idempotency_keys k USING (
                SELECT business_id, operation_type, key FROM idempotency_keys
                 WHERE (status = 'completed' AND completed_at <= $1) OR (status = 'in_progress' AND lease_expires_at <= $2)
                 LIMIT $3 FOR UPDATE SKIP LOCKED) dead
             WHERE k.business_id = dead.business_id AND k.operation_type = dead.operation_type AND k.key = dead.key
            """, [.timestamp(now.addingTimeInterval(-policy.retention)), .timestamp(now), .int64(Int64(limit))]).affectedRows
    }
}
