import Foundation
import IdempotencyClaims
import OutboxTestServer
import OutboxWire
import PostgresClaimStore

/// ``ServerStorage`` in PostgreSQL: claims (``PostgresClaimStore``), records, approvals and
/// counts in one database, so that several server processes on it behave as one server.
///
/// Tables, besides `idempotency_keys`: `test_server_records` (one row per type, business and id,
/// a deleted record kept as a tombstone with `deleted` true),
/// `test_server_approvals` (numbered by an identity column: `apr-N`, increasing, with gaps where
/// a write rolled back), `test_server_applied` (a count per key), and the feed's (``PostgresFeed``). Created by the storage's own
/// migrations, under the same advisory lock as the claims'.
final class PostgresServerStorage: ServerStorage {
    private let pool: PostgresConnectionPool
    private let claims: IdempotencyClaims<PostgresClaimStore>

    static let migrations = PostgresMigrations(component: "outbox_test_server", versions: [
        [
            """
            CREATE TABLE test_server_records (
                type            text    NOT NULL,
                business_id     text    NOT NULL,
                id              text    NOT NULL,
                revision        integer NOT NULL,
                idempotency_key text    NOT NULL,
                body            bytea   NOT NULL,
                PRIMARY KEY (type, business_id, id)
            )
            """,
            """
            CREATE TABLE test_server_approvals (
                sequence        bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                type            text    NOT NULL,
                business_id     text    NOT NULL,
                idempotency_key text    NOT NULL,
                body            bytea   NOT NULL
            )
            """,
            "CREATE TABLE test_server_applied (key text PRIMARY KEY, count integer NOT NULL)",
        ],
        // Version 2: deletes keep a tombstone.
        ["ALTER TABLE test_server_records ADD COLUMN deleted boolean NOT NULL DEFAULT false"],
        // Version 3: the change feed (``PostgresFeed``).
        PostgresFeed.migration,
    ])

    init(settings: PostgresConnectionSettings, poolSize: Int, policy: ClaimPolicy, clock: any ClaimClock) throws {
        let pool = PostgresConnectionPool(settings: settings, size: poolSize)
        do {
            claims = IdempotencyClaims(store: try PostgresClaimStore(pool: pool), policy: policy, clock: clock)
            try Self.migrations.migrate(pool)
        } catch {
            pool.close()
            throw error
        }
        self.pool = pool
    }

    private struct Transaction: ServerTransaction {
        let txn: PostgresClaimStore.Transaction

        func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) throws -> Int {
            // One statement: two servers creating one id at once get revisions 1 and 2, never 1 twice.
            let rows = try txn.execute("""
                INSERT INTO test_server_records AS r (type, business_id, id, revision, idempotency_key, body)
                VALUES ($1, $2, $3, 1, $4, $5)
                ON CONFLICT (type, business_id, id) DO UPDATE
                   SET revision = r.revision + 1, idempotency_key = EXCLUDED.idempotency_key, body = EXCLUDED.body,
                       deleted = false
                RETURNING revision
                """, [.text(type), .text(businessID), .text(id), .text(key), .bytes(body)])
            return Int(try rows[0].int32(0))
        }

        func addApproval(type: String, businessID: String, key: String, body: Data) throws -> String {
            let rows = try txn.execute("""
                INSERT INTO test_server_approvals (type, business_id, idempotency_key, body) VALUES ($1, $2, $3, $4)
                RETURNING sequence
                """, [.text(type), .text(businessID), .text(key), .bytes(body)])
            return PendingApproval.requestID(Int(try rows[0].int64(0)))
        }

        func countApplied(key: String) throws {
            try txn.execute("""
                INSERT INTO test_server_applied AS a (key, count) VALUES ($1, 1)
                ON CONFLICT (key) DO UPDATE SET count = a.count + 1
                """, [.text(key)])
        }

        func lockedRecord(type: String, businessID: String, id: String) throws -> StoredRecord? {
            // FOR UPDATE: another server's update of this record waits for this transaction, and
            // then reads the revision it committed (READ COMMITTED rereads a row it waited for).
            let rows = try txn.execute("""
                SELECT \(PostgresServerStorage.recordColumns) FROM test_server_records
                 WHERE type = $1 AND business_id = $2 AND id = $3 FOR UPDATE
                """, [.text(type), .text(businessID), .text(id)])
            return try rows.first.map(PostgresServerStorage.record)
        }

        func replaceRecord(_ record: StoredRecord) throws {
            try txn.execute("""
                UPDATE test_server_records SET revision = $4, idempotency_key = $5, body = $6, deleted = $7
                 WHERE type = $1 AND business_id = $2 AND id = $3
                """, [.text(record.type), .text(record.businessID), .text(record.id), .int32(Int32(record.revision)),
                      .text(record.idempotencyKey), .bytes(record.body), .bool(record.isDeleted)])
        }

        func recordChange(_ record: StoredRecord) throws -> FeedPosition? {
            try PostgresFeed.append(record, in: txn)
        }
    }

    func transaction<R>(_ body: (any ServerTransaction) throws -> R) throws -> R {
        try claims.store.transaction { try body(Transaction(txn: $0)) }
    }

    static let recordColumns = "type, business_id, id, revision, idempotency_key, body, deleted"

    static func record(_ row: PostgresRow) throws -> StoredRecord {
        StoredRecord(type: try row.text(0), businessID: try row.text(1), id: try row.text(2),
                     revision: Int(try row.int32(3)), idempotencyKey: try row.text(4), body: try row.bytes(5),
                     isDeleted: try row.bool(6))
    }

    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        try claims.handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed, write: write) { Transaction(txn: $0) }
    }

    func appliedCounts() throws -> AppliedCounts {
        try pool.withConnection { connection in
            var counts: [(key: String, count: Int)] = []
            for row in try connection.execute("SELECT key, count FROM test_server_applied") {
                counts.append((try row.text(0), Int(try row.int32(1))))
            }
            return AppliedCounts(counts)
        }
    }

    func records() throws -> [StoredRecord] {
        try pool.withConnection { connection in
            try connection.execute("""
                SELECT \(Self.recordColumns) FROM test_server_records
                 ORDER BY type COLLATE "C", business_id COLLATE "C", id COLLATE "C"
                """).map(Self.record)
        }
    }

    func approvals() throws -> [PendingApproval] {
        try pool.withConnection { connection in
            try connection.execute("""
                SELECT sequence, type, business_id, idempotency_key, body FROM test_server_approvals ORDER BY sequence
                """).map { row in
                PendingApproval(requestID: PendingApproval.requestID(Int(try row.int64(0))), type: try row.text(1),
                                businessID: try row.text(2), idempotencyKey: try row.text(3), body: try row.bytes(4))
            }
        }
    }

    var feed: (any ServerFeed)? { PostgresFeed(pool: pool) }

    /// Empties the shared tables and raises the feed's epoch: every server on the database starts over.
    func reset() throws {
        _ = try pool.transaction { connection in
            try connection.execute(
                "TRUNCATE test_server_records, test_server_approvals, test_server_applied, idempotency_keys, \(PostgresFeed.resetTables) RESTART IDENTITY")
            try PostgresFeed.raiseEpoch(connection)
        }
    }

    func close() {
        pool.close()
    }
}
