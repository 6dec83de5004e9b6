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
/// Transactions run at READ COMMITTED. A copy of a request is answered from the claim as last
/// committed (a plain `SELECT`, which waits for no lock), so the write holding a claim in its
/// open transaction holds up none of its copies, on any server. A claim is taken under a
/// transaction-scoped advisory lock on its key, tried, never waited for: of two copies arriving at
/// once, one takes it and the other is told the claim is busy (``ClaimBusy``, answered in
/// progress) instead of waiting on the first's uncommitted row. The insert is `INSERT ... ON
/// CONFLICT DO NOTHING`, skipped when a row is there; a row found is locked `FOR UPDATE SKIP
/// LOCKED`, so deciding on it and taking it over cannot race another transaction, and a row
/// another transaction holds is busy, not waited for. A transaction the server aborts for a
/// serialization failure or a deadlock runs again, up to three times. Timestamps are kept to
/// the microsecond.
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

    /// The claim's row read in `transaction`, with `locking` (`FOR UPDATE`, ...) or no lock.
    private func select(_ id: ClaimID, _ locking: String, in transaction: Transaction) throws -> ClaimRecord? {
        let rows = try transaction.execute(
            "SELECT \(ClaimRow.columns) FROM idempotency_keys WHERE \(ClaimRow.matchesKey) \(locking)", ClaimRow.key(id))
        return try rows.first.map(ClaimRow.record)
    }

    /// A plain `SELECT` in a transaction of its own: it reads what is committed and takes no lock,
    /// so it never waits for the transaction of a write holding the claim.
    public func committedClaim(_ id: ClaimID) throws -> ClaimRecord? {
        try transaction { txn in try select(id, "", in: txn) }
    }

    public func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        try select(id, "FOR UPDATE", in: transaction)
    }

    /// The first key of the advisory lock a claim's takers share: `'OBC'` (the migrations' is `'OBX'`).
    static let takingLockClass: Int32 = 0x4F_4243

    /// Takes the key's advisory lock without waiting, then inserts if no row is there, or locks
    /// the row found without waiting.
    /// - Throws: ``ClaimBusy`` when another transaction is taking the key (it has the advisory
    ///   lock: its row may be uncommitted) or holds its row (the write completing it, a release,
    ///   a purge).
    public func insertClaimIfAbsent(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        // Scoped by the schema too: servers of other schemas of the database never contend.
        // Two keys whose names share a hash (one pair in 2^32) contend only while one is taken.
        let free = try transaction.execute(
            "SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema() || ':' || $2))",
            [.int32(Self.takingLockClass), .text(ClaimRow.lockName(id))])
        guard try free.first?.bool(0) == true else { throw ClaimBusy() }
        // Nothing is inserted when a row is visible, so the unique index never makes this wait
        // for a transaction changing that row; ON CONFLICT covers a row committed since.
        let inserted = try transaction.execute(
            "INSERT INTO idempotency_keys (\(ClaimRow.keyColumns), \(ClaimRow.columns)) SELECT \(ClaimRow.typedPlaceholders) "
                + "WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE \(ClaimRow.matchesKey)) "
                + "ON CONFLICT (\(ClaimRow.keyColumns)) DO NOTHING",
            ClaimRow.key(id) + ClaimRow.values(record))
        if inserted.affectedRows == 1 { return nil }
        // None: another transaction holds the row (or has just removed it: a retry takes it).
        guard let found = try select(id, "FOR UPDATE SKIP LOCKED", in: transaction) else { throw ClaimBusy() }
        return found
    }

    public func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws {
        try transaction.execute(
            "INSERT INTO idempotency_keys (\(ClaimRow.keyColumns), \(ClaimRow.columns)) VALUES (\(ClaimRow.placeholders)) "
                + "ON CONFLICT (\(ClaimRow.keyColumns)) DO UPDATE SET \(ClaimRow.updates)",
            ClaimRow.key(id) + ClaimRow.values(record))
    }

    public func removeClaim(_ id: ClaimID, in transaction: Transaction) throws {
        try transaction.execute(
            "DELETE FROM idempotency_keys WHERE \(ClaimRow.matchesKey)", ClaimRow.key(id))
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
