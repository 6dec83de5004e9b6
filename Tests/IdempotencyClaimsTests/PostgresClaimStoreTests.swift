import Foundation
import IdempotencyClaims
import OutboxCrypto
import PostgresClaimStore
import ThrowawayPostgres
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

    // MARK: Copies of a write in progress wait for nothing

    /// A whole second, so that it comes back from PostgreSQL's microseconds unchanged.
    static let takenAt = Date(timeIntervalSince1970: 1_800_000_000)

    /// Runs the first request with `key` on a thread of its own, its write held inside its
    /// transaction (the claim's row locked, the effect written, nothing committed) until `gate`
    /// opens; returns once it is held.
    private func holdWrite(
        _ claims: IdempotencyClaims<PostgresClaimStore>, key: String, gate: Gate
    ) async -> Task<ClaimAnswer, any Error> {
        let held = Signal()
        let first = Task { [scope, body] in
            try await onThread {
                defer { held.fire() }   // also when the request fails: the test goes on to see it
                return try claims.handle(scope: scope, key: key, body: body) { txn in
                    try Fixture.bump(txn, key)
                    held.fire()
                    try gate.wait()
                    return ClaimResponse(status: 201, body: body)
                }
            }
        }
        await held.wait()
        return first
    }

    /// Takes the claim of `key` in `store` as a first request's take does, and holds that
    /// transaction open (the claim inserted, uncommitted) until `gate` opens; returns once it is
    /// inserted, with the record and the take (answering what the insert found).
    private func holdTake(
        _ store: PostgresClaimStore, key: String, gate: Gate
    ) async throws -> (ClaimRecord, Task<ClaimRecord?, any Error>) {
        let id = ClaimID(scope: scope, key: try #require(IdempotencyKey(rawValue: key)))
        let record = ClaimRecord(
            fingerprint: SHA256Digest(of: body), takenAt: Self.takenAt,
            state: .inProgress(token: ClaimToken(), leaseExpiresAt: Self.takenAt.addingTimeInterval(300)))
        let inserted = Signal()
        let take = Task {
            try await onThread {
                defer { inserted.fire() }   // also when the take fails: the test goes on to see it
                return try store.transaction { txn in
                    let found = try store.insertClaimIfAbsent(record, for: id, in: txn)
                    inserted.fire()
                    try gate.wait()
                    return found
                }
            }
        }
        await inserted.wait()
        return (record, take)
    }

    /// A request that must be answered without running its write: the write answers 599.
    private func copy(
        _ claims: IdempotencyClaims<PostgresClaimStore>, key: String, body: Data? = nil
    ) async throws -> ClaimAnswer? {
        let body = body ?? self.body
        return try await answerWithin { [scope] in
            try claims.handle(scope: scope, key: key, body: body) { _ in ClaimResponse(status: 599) }
        }
    }

    @Test func copiesOfAWriteHeldInItsTransactionAreAnsweredWithoutWaitingAndLeaveTheOtherConnectionFree() async throws {
        // Two connections: the held write has one; every other request must make do with the other.
        let fixture = try Fixture(poolSize: 2)
        defer { fixture.close() }
        let claims = IdempotencyClaims(store: fixture.store)
        let gate = Gate()
        defer { gate.open() }
        let first = await holdWrite(claims, key: "k-1", gate: gate)

        // Each answer comes while the write is still held: the gate opens only after them.
        var copies: [ClaimAnswer?] = []
        for _ in 0..<3 { copies.append(try await copy(claims, key: "k-1")) }
        let otherBody = try await copy(claims, key: "k-1", body: Data(#"{"id":"p-2"}"#.utf8))
        let unrelated = try await answerWithin { [scope, body] in
            try claims.handle(scope: scope, key: "k-2", body: body) { txn in
                try Fixture.bump(txn, "k-2")
                return ClaimResponse(status: 201, body: body)
            }
        }
        #expect(copies.map { $0?.outcome } == [.inProgress, .inProgress, .inProgress], "answered while the write was held")
        #expect(copies.first??.response.status == 409)
        #expect(otherBody?.outcome == .conflict)
        #expect(unrelated?.outcome == .applied, "an unrelated write commits meanwhile")
        #expect(try fixture.effects("k-1") == 0, "the held write has not committed")

        gate.open()
        #expect(try await first.value.outcome == .applied)
        let later = try await copy(claims, key: "k-1")
        #expect(later?.outcome == .replayed)
        #expect(try fixture.effects("k-1") == 1)
        #expect(try fixture.effects("k-2") == 1)
    }

    @Test func aCopyArrivingWhileTheFirstIsTakingItsClaimIsAnsweredWithoutWaitingForThatTransaction() async throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let claims = IdempotencyClaims(store: fixture.store)
        let gate = Gate()
        defer { gate.open() }
        let (record, take) = try await holdTake(fixture.store, key: "k-1", gate: gate)
        let answer = try await copy(claims, key: "k-1")
        #expect(answer?.outcome == .inProgress, "answered while the first's insert was uncommitted")
        gate.open()
        #expect(try await take.value == nil, "the first inserted its claim")
        #expect(try claims.claim(scope: scope, key: #require(IdempotencyKey(rawValue: "k-1"))) == record)
    }

    @Test func takingAClaimInOneSchemaNeverHoldsUpTheSameKeyInAnother() async throws {
        let (here, there) = (try Fixture(), try Fixture())
        defer { here.close(); there.close() }
        let gate = Gate()
        defer { gate.open() }
        let (_, take) = try await holdTake(here.store, key: "k-1", gate: gate)
        // Another server's tables (another schema of the database): its own claims entirely.
        let elsewhere = try await answerWithin { [scope, body] in
            try IdempotencyClaims(store: there.store).handle(scope: scope, key: "k-1", body: body) { txn in
                try Fixture.bump(txn, "k-1")
                return ClaimResponse(status: 201, body: body)
            }
        }
        #expect(elsewhere?.outcome == .applied)
        gate.open()
        #expect(try await take.value == nil)
    }

    @Test func aCopyPastTheLeaseOfAWriteStillHeldIsInProgressAndTakesNothingOver() async throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let clock = ManualClaimClock()
        let claims = IdempotencyClaims(store: fixture.store, policy: ClaimPolicy(inProgressLease: 60), clock: clock)
        let gate = Gate()
        defer { gate.open() }
        let first = await holdWrite(claims, key: "k-1", gate: gate)
        // The lease has run out, but the write holding the claim is still running: the copy
        // neither waits for it nor takes the claim over.
        clock.advance(by: 61)
        let answer = try await copy(claims, key: "k-1")
        #expect(answer?.outcome == .inProgress)
        gate.open()
        #expect(try await first.value.outcome == .applied, "the claim was still the first's")
        #expect(try await copy(claims, key: "k-1")?.outcome == .replayed)
        #expect(try fixture.effects("k-1") == 1)
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
