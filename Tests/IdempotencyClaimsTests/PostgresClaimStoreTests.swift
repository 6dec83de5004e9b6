import Foundation
import IdempotencyClaims
import OutboxCrypto
import PostgresClaimStore
import PostgresTesting
import Synchronization
import Testing

/// What only the PostgreSQL store has: a schema it migrates, a pool, connections that break, and
/// copies of a key on connections of their own as separate servers would have. The claim rules
/// themselves are the shared suite's (`IdempotencyClaimsTests`, run against every store).
@Suite("The PostgreSQL claim store")
struct PostgresClaimStoreTests {
    let scope = ClaimScope(businessID: "b-1", operationType: "product.create")
    let body = Data(#"{"id":"p-1"}"#.utf8)

    /// A schema of its own with the claims and an `effects` table, and a pool on it.
    struct Fixture {
        let schema: TestSchema
        let pool: PostgresConnectionPool
        let store: PostgresClaimStore

        init(poolSize: Int = 4) throws {
            schema = try TestPostgres.freshSchema("store")
            pool = PostgresConnectionPool(settings: schema.settings, size: poolSize)
            store = try PostgresClaimStore(pool: pool)
            try schema.execute("CREATE TABLE effects (key text PRIMARY KEY, count integer NOT NULL)")
        }

        func close() {
            pool.close()
            schema.drop()
        }

        func effects(_ key: String) throws -> Int {
            try schema.execute("SELECT count FROM effects WHERE key = $1", [.text(key)]).first.map { Int(try $0.int32(0)) } ?? 0
        }

        static func bump(_ txn: PostgresClaimStore.Transaction, _ key: String) throws {
            try txn.execute("INSERT INTO effects (key, count) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET count = effects.count + 1", [.text(key)])
        }
    }

    @Test func aConnectionDroppedMidTransactionLeavesNeitherClaimNorWrite() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let claims = IdempotencyClaims(store: fixture.store)
        #expect(throws: PostgresError.self) {
            try claims.handle(scope: scope, key: "k-1", body: body) { txn in
                try Fixture.bump(txn, "k-1")
                // The server ends this very connection, after the write and before the commit.
                try txn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
                return ClaimResponse(status: 201)
            }
        }
        #expect(try fixture.effects("k-1") == 0, "the write was rolled back with the connection")
        #expect(try claims.claim(scope: scope, key: #require(IdempotencyKey(rawValue: "k-1"))) == nil, "the claim was released")
        let retry = try claims.handle(scope: scope, key: "k-1", body: body) { txn in
            try Fixture.bump(txn, "k-1")
            return ClaimResponse(status: 201)
        }
        #expect(retry.outcome == .applied, "the broken connection was not lent again")
        #expect(try fixture.effects("k-1") == 1)
    }

    @Test func copiesOfOneKeyOnConnectionsOfTheirOwnApplyOnce() async throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        // Four "servers", each its own pool, six copies of every key each, all let go at once.
        let servers = try (0..<4).map { _ in
            IdempotencyClaims(store: try PostgresClaimStore(pool: PostgresConnectionPool(settings: fixture.schema.settings, size: 6)))
        }
        defer { for server in servers { server.store.pool.close() } }
        for key in ["k-1", "k-2", "k-3"] {
            let startLine = StartLine(count: 24)
            let outcomes = try await withThrowingTaskGroup(of: ClaimAnswer.Outcome.self) { group in
                for copy in 0..<24 {
                    let server = servers[copy % servers.count]
                    group.addTask {
                        try await onThread {
                            try startLine.arriveAndWait()
                            return try server.handle(scope: scope, key: key, body: body) { txn in
                                try Fixture.bump(txn, key)
                                return ClaimResponse(status: 201, body: body)
                            }.outcome
                        }
                    }
                }
                return try await group.reduce(into: [ClaimAnswer.Outcome]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .applied }.count == 1, "\(key): \(outcomes)")
            #expect(outcomes.allSatisfy { [.applied, .replayed, .inProgress].contains($0) })
            #expect(try fixture.effects(key) == 1)
        }
    }

    @Test func serversStartingTogetherCreateTheSchemaOnce() async throws {
        let schema = try TestPostgres.freshSchema("migrate")
        defer { schema.drop() }
        let startLine = StartLine(count: 8)
        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await onThread {
                        let pool = PostgresConnectionPool(settings: schema.settings, size: 1)
                        defer { pool.close() }
                        try startLine.arriveAndWait()
                        return try PostgresClaimStore.migrations.migrate(pool)
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(versions == Array(repeating: 1, count: 8))
        let stored = try schema.execute("SELECT version FROM outbox_schema_versions WHERE component = 'idempotency_keys'")
        #expect(try stored.map { try $0.int32(0) } == [1])
        let tables = try schema.execute("SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'idempotency_keys'", [.text(schema.name)])
        #expect(try tables[0].int64(0) == 1)
    }

    @Test func aSchemaNewerThanThisBuildIsRefusedWithWhatToDo() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        try fixture.schema.execute("UPDATE outbox_schema_versions SET version = 99 WHERE component = 'idempotency_keys'")
        do {
            _ = try PostgresClaimStore(pool: fixture.pool)
            Issue.record("a newer schema was accepted")
        } catch let error as PostgresError {
            #expect(error.kind == .configuration)
            #expect(error.message.contains("version 99") && error.message.contains("upgrade"))
        }
    }

    @Test func thePoolNeverOpensMoreConnectionsThanItsSize() async throws {
        let schema = try TestPostgres.freshSchema("pool")
        defer { schema.drop() }
        let pool = PostgresConnectionPool(settings: schema.settings, size: 3)
        defer { pool.close() }
        let backends = try await withThrowingTaskGroup(of: [Int32].self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await onThread {
                        try (0..<4).map { _ in
                            try pool.transaction { try $0.execute("SELECT pg_backend_pid()")[0].int32(0) }
                        }
                    }
                }
            }
            return try await group.reduce(into: Set<Int32>()) { $0.formUnion($1) }
        }
        #expect(backends.count <= 3)
        #expect(pool.openConnectionCount <= 3)
    }

    @Test func anIdleConnectionTheServerEndedIsReplacedBeforeTheNextTransaction() throws {
        let schema = try TestPostgres.freshSchema("stale")
        defer { schema.drop() }
        let pool = PostgresConnectionPool(settings: schema.settings, size: 1)
        defer { pool.close() }
        let first = try pool.transaction { try $0.execute("SELECT pg_backend_pid()")[0].int32(0) }
        // End it from outside, and wait until its server process is gone.
        let ended = try schema.execute("SELECT pg_terminate_backend($1, 10000)", [.int32(first)])
        #expect(try ended[0].bool(0))
        let second = try pool.transaction { try $0.execute("SELECT pg_backend_pid()")[0].int32(0) }
        #expect(second != first)
    }

    @Test func aCommitOfATransactionWhoseStatementFailedThrows() throws {
        let schema = try TestPostgres.freshSchema("commit")
        defer { schema.drop() }
        let pool = PostgresConnectionPool(settings: schema.settings, size: 1)
        defer { pool.close() }
        try schema.execute("CREATE TABLE t (id integer PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try pool.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (1)")
                _ = try? connection.execute("INSERT INTO t VALUES (1)")   // fails; the transaction is aborted
            }
        }
        #expect(try schema.execute("SELECT count(*) FROM t")[0].int64(0) == 0, "nothing committed")
    }

    @Test func theServersRefusalCarriesItsSQLState() throws {
        let schema = try TestPostgres.freshSchema("errors")
        defer { schema.drop() }
        do {
            try schema.execute("SELECT * FROM no_such_table")
            Issue.record("a missing table answered")
        } catch let error as PostgresError {
            #expect(error.kind == .server)
            #expect(error.sqlState == "42P01")
            #expect(error.message.contains("no_such_table"))
        }
    }

    @Test func valuesRoundTripExactlyThroughTheBinaryFormat() throws {
        let schema = try TestPostgres.freshSchema("values")
        defer { schema.drop() }
        let moment = Date(timeIntervalSince1970: 1_800_000_000.123456)
        let uuid = UUID()
        let bytes = Data([0, 1, 0xff, 0x7b])
        let row = try schema.execute(
            "SELECT $1::text, $2::bytea, $3::int4, $4::int8, $5::bool, $6::timestamptz, $7::uuid, $8::jsonb, $9::text",
            [.text("Zoë 👩🏽‍🍳"), .bytes(bytes), .int32(-7), .int64(1 << 40), .bool(true), .timestamp(moment), .uuid(uuid),
             .jsonb(#"[{"name":"a","value":"b"}]"#), .null])[0]
        #expect(try row.text(0) == "Zoë 👩🏽‍🍳")
        #expect(try row.bytes(1) == bytes)
        #expect(try row.int32(2) == -7)
        #expect(try row.int64(3) == 1 << 40)
        #expect(try row.bool(4))
        #expect(abs(try row.timestamp(5).timeIntervalSince(moment)) < 0.000_001, "kept to the microsecond")
        #expect(try row.uuid(6) == uuid)
        #expect(try row.jsonb(7) == #"[{"name": "a", "value": "b"}]"#)
        #expect(row.isNull(8))
        #expect(throws: PostgresError.self) { try row.int64(2) }
    }

    @Test func aTransactionKeptPastItsClosureThrows() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let kept = try fixture.store.transaction { $0 }
        do {
            try kept.execute("SELECT 1")
            Issue.record("a kept transaction ran a statement")
        } catch let error as PostgresError {
            #expect(error.kind == .transactionEnded)
        }
    }

    @Test func connectionStringsAreParsedAndTheirPasswordsSeen() throws {
        let parsed = try PostgresConnectionSettings.parse("host=/tmp/x port=5433 dbname=shop sslmode=require")
        #expect(parsed["host"] == "/tmp/x" && parsed["port"] == "5433" && parsed["sslmode"] == "require")
        #expect(try PostgresConnectionSettings.parse("postgresql://u:secret@db.example.com/shop")["password"] == "secret")
        #expect(throws: PostgresError.self) { try PostgresConnectionSettings.parse("nonsense") }
        let settings = PostgresConnectionSettings(conninfo: "host=db port=5432 dbname=shop password=secret")
        #expect(!settings.description.contains("secret"), "descriptions never show a password")
    }
}
