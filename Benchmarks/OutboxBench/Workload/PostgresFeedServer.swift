import Foundation
import IdempotencyClaims
import OutboxTestServer
import OutboxTestServerPostgres
import OutboxWire
import PostgresClaimStore
import ThrowawayPostgres

/// Scenario 14.4's server: `outbox-test-server`'s core on PostgreSQL (the run's cluster, a schema
/// of its own), answered in process (`TestServer.respond(to:)`: the server's work and
/// PostgreSQL's, no socket), its feed holding a backlog of creates before the first repeat.
final class PostgresFeedServer: Sendable {
    let server: TestServer
    let schema: String
    private let settings: PostgresConnectionSettings

    /// Creates the schema and the server, then `backlog` products through `POST /sync/batch`
    /// (each its own claim and transaction) from 8 threads at once.
    init(cluster: TemporaryPostgresCluster, backlog: Int) throws {
        schema = "pull_feed_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(cluster.settings)
        defer { admin.close() }
        try admin.execute("CREATE SCHEMA \(schema)")
        try Self.skipToSixDigitTransactionIDs(admin)
        settings = cluster.settings.inSchema(schema)
        server = try TestServer(.init(storage: .postgres(settings, poolSize: 8)))
        let server = server
        let threads = 8
        let each = (backlog + threads - 1) / threads
        try Threads.run(threads) { thread in
            var created = 0
            while created < each {
                let count = min(100, each - created)
                let operations = (created..<created + count).map { index -> String in
                    let key = "backlog-\(thread)-\(index)"
                    let body = Data(#"{"id":"\#(key)","name":"Gauze 10 cm #\#(index)","price":{"amount":"2.40","currency":"EUR"},"stock":12}"#.utf8)
                    return #"{"operation_id":"\#(key)","idempotency_key":"\#(key)","business_id":"\#(Workload.businessID)","#
                        + #""operation_type":"product.create","method":"POST","endpoint":"/products","payload_version":1,"#
                        + #""payload":"\#(body.base64EncodedString())"}"#
                }
                let batch = HTTPRequest(method: "POST", path: "/sync/batch", headers: [("Content-Type", "application/json")],
                                        body: Data((#"{"operations":["# + operations.joined(separator: ",") + "]}").utf8))
                guard server.respond(to: batch)?.status == 200 else {
                    throw BenchmarkFailure(description: "PostgreSQL feed: a batch of the backlog was refused")
                }
                created += count
            }
        }
    }

    /// Moves the cluster's transaction ids to 100,000 or more before the backlog (not timed). The
    /// server's feed query orders its rows by the `xid8` column (its text is `xid_text`), so it
    /// reads right across 999 and 1000; the bump stays so that the run's transactions look as
    /// they did when the figures in `Docs/benchmarks.md` were measured. Each subtransaction that
    /// writes takes an xid.
    private static func skipToSixDigitTransactionIDs(_ connection: PostgresConnection) throws {
        let next = try connection.execute("SELECT pg_current_xact_id()::text")[0].text(0)
        guard let now = Int(next), now < 100_000 else { return }
        try connection.execute("CREATE TEMPORARY TABLE xid_burn (n integer)")
        try connection.execute("""
            DO $$ BEGIN FOR i IN 1..\(100_000 - now) LOOP
                BEGIN INSERT INTO xid_burn VALUES (i); EXCEPTION WHEN others THEN NULL; END;
            END LOOP; END $$
            """)
        try connection.execute("DROP TABLE xid_burn")
    }

    /// The change rows the feed holds now.
    func changeRows() throws -> Int {
        let connection = try PostgresConnection(settings)
        defer { connection.close() }
        return Int(try connection.execute("SELECT count(*) FROM test_server_changes")[0].int64(0))
    }

    func stop() {
        server.stop()
    }
}
