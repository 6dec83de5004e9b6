import Foundation
import IdempotencyClaims
import OutboxTestServer
import OutboxWire
import PostgresClaimStore

/// The PostgreSQL storage's change feed. Servers on one database commit in no counter's order,
/// so a change's position is `(epoch, xid, seq)`: the id of the transaction that wrote it (the
/// column's default, `pg_current_xact_id()`) and a sequence. A reader, in one REPEATABLE READ
/// READ ONLY transaction, sends only rows whose xid is below its snapshot's xmin (every
/// transaction below it has ended, so no row can still appear there) and its fence is
/// `(epoch, xmin, 0)`: a transaction that commits late has an xid at or above every xmin read
/// while it ran, so its rows come after every fence served before, never behind a cursor.
///
/// Tables: `test_server_changes` (the rows), `test_server_feed_epoch` (one row, the epoch),
/// `test_server_feed_floors` (per business, the position its changes are forgotten through).
struct PostgresFeed: ServerFeed, RecordsAtFence {
    let pool: PostgresConnectionPool

    static let migration = [
        """
        CREATE TABLE test_server_feed_epoch (
            one   boolean PRIMARY KEY DEFAULT true CHECK (one),
            epoch bigint  NOT NULL
        )
        """,
        "INSERT INTO test_server_feed_epoch (epoch) VALUES (1)",
        """
        CREATE TABLE test_server_changes (
            business_id text    NOT NULL,
            xid         xid8    NOT NULL DEFAULT pg_current_xact_id(),
            seq         bigint  GENERATED ALWAYS AS IDENTITY,
            type        text    NOT NULL,
            id          text    NOT NULL,
            revision    integer NOT NULL,
            body        bytea   NOT NULL,
            deleted     boolean NOT NULL,
            PRIMARY KEY (business_id, xid, seq)
        )
        """,
        "CREATE TABLE test_server_feed_floors (business_id text PRIMARY KEY, xid bigint NOT NULL, seq bigint NOT NULL)",
    ]

    /// The tables a reset empties (the epoch is raised instead).
    static let resetTables = "test_server_changes, test_server_feed_floors"

    /// Writes `record`'s change in the claim's transaction; its position is the transaction's xid.
    static func append(_ record: StoredRecord, in txn: PostgresClaimStore.Transaction) throws -> FeedPosition {
        let rows = try txn.execute("""
            INSERT INTO test_server_changes (business_id, type, id, revision, body, deleted) VALUES ($1, $2, $3, $4, $5, $6)
            RETURNING xid::text, seq, (SELECT epoch FROM test_server_feed_epoch)
            """, [.text(record.businessID), .text(record.type), .text(record.id), .int32(Int32(record.revision)),
                  .bytes(record.body), .bool(record.isDeleted)])
        return FeedPosition(epoch: UInt64(try rows[0].int64(2)), major: try number(rows[0].text(0)), minor: UInt64(try rows[0].int64(1)))
    }

    static func raiseEpoch(_ connection: PostgresConnection) throws {
        try connection.execute("UPDATE test_server_feed_epoch SET epoch = epoch + 1")
    }

    /// The epoch, the fence `(epoch, xmin, 0)` and the business's floor, as `connection`'s snapshot sees them.
    private static func bounds(_ connection: PostgresConnection, business: String) throws -> (epoch: UInt64, fence: FeedPosition, floor: FeedPosition) {
        let row = try connection.execute("""
            SELECT e.epoch, pg_snapshot_xmin(pg_current_snapshot())::text, COALESCE(f.xid, 0), COALESCE(f.seq, 0)
              FROM test_server_feed_epoch e LEFT JOIN test_server_feed_floors f ON f.business_id = $1
            """, [.text(business)])[0]
        let epoch = UInt64(try row.int64(0))
        return (epoch, FeedPosition(epoch: epoch, major: try number(row.text(1))),
                FeedPosition(epoch: epoch, major: UInt64(try row.int64(2)), minor: UInt64(try row.int64(3))))
    }

    /// Runs `body` in one REPEATABLE READ READ ONLY transaction: every statement sees one snapshot.
    private func snapshotRead<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        try pool.transaction { connection in
            try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return try body(connection)
        }
    }

    func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) throws -> ChangeLogRead {
        try snapshotRead { connection in
            let (epoch, fence, floor) = try Self.bounds(connection, business: business)
            var rows: [ChangeRow] = []
            if after.map({ $0.epoch == epoch }) ?? true, limit > 0 {
                let lower = max(after ?? .start(of: epoch), floor)
                let upper = until.map { $0.epoch == epoch ? $0 : .start(of: epoch) } ?? fence
                rows = try connection.execute("""
                    SELECT xid::text AS xid_text, seq, type, id, revision, body, deleted FROM test_server_changes
                     WHERE business_id = $1 AND xid < pg_snapshot_xmin(pg_current_snapshot())
                       AND (xid, seq) > ($2::text::xid8, $3) AND (xid, seq) <= ($4::text::xid8, $5)
                     ORDER BY xid, seq LIMIT $6
                    """, [.text(business), .text(String(lower.major)), .int64(Int64(lower.minor)),
                          .text(String(upper.major)), .int64(Int64(upper.minor)), .int64(Int64(limit))]).map { row in
                    let record = StoredRecord(type: try row.text(2), businessID: business, id: try row.text(3), revision: Int(try row.int32(4)),
                                              idempotencyKey: "", body: try row.bytes(5), isDeleted: try row.bool(6))
                    return ChangeRow(position: FeedPosition(epoch: epoch, major: try Self.number(row.text(0)), minor: UInt64(try row.int64(1))),
                                     change: record.feedChange)
                }
            }
            return ChangeLogRead(epoch: epoch, floor: floor, fence: fence, rows: rows)
        }
    }

    /// The business's records and the fence, in one snapshot: the records hold every change below it.
    func recordsAndFence(business: String) throws -> (FeedPosition, [StoredRecord]) {
        try snapshotRead { connection in
            let fence = try Self.bounds(connection, business: business).fence
            let stored = try connection.execute(
                "SELECT \(PostgresServerStorage.recordColumns) FROM test_server_records WHERE business_id = $1",
                [.text(business)]).map(PostgresServerStorage.record)
            return (fence, stored)
        }
    }

    func purge(business: String, through: FeedPosition) throws -> (floor: FeedPosition, purged: Int) {
        try pool.transaction { connection in
            // The floor row is locked first: two purges of one business raise it one after the other.
            try connection.execute("INSERT INTO test_server_feed_floors (business_id, xid, seq) VALUES ($1, 0, 0) ON CONFLICT DO NOTHING",
                                   [.text(business)])
            try connection.execute("SELECT 1 FROM test_server_feed_floors WHERE business_id = $1 FOR UPDATE", [.text(business)])
            let (epoch, fence, floor) = try Self.bounds(connection, business: business)
            guard through.epoch == epoch else {
                throw FeedPurgeRefusal(message: "through \(through) is of epoch \(through.epoch); this feed is at epoch \(epoch)")
            }
            guard through <= fence else {
                throw FeedPurgeRefusal(message: "through \(through) is past the end of business \(business)'s feed (\(fence))")
            }
            let raised = max(floor, through)
            let deleted = try connection.execute("""
                DELETE FROM test_server_changes WHERE business_id = $1 AND (xid, seq) <= ($2::text::xid8, $3) RETURNING seq
                """, [.text(business), .text(String(raised.major)), .int64(Int64(raised.minor))])
            try connection.execute("UPDATE test_server_feed_floors SET xid = $2, seq = $3 WHERE business_id = $1",
                                   [.text(business), .int64(Int64(raised.major)), .int64(Int64(raised.minor))])
            return (raised, deleted.count)
        }
    }

    /// An xid8 as PostgreSQL writes it: decimal.
    private static func number(_ text: String) throws -> UInt64 {
        guard let value = UInt64(text) else { throw PostgresError(.server, message: "a transaction id is \(text), not a number") }
        return value
    }
}
