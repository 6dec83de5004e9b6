import Foundation
import IdempotencyClaims
import LMDBClaimStore
import OutboxStorage
import PostgresClaimStore
import ThrowawayPostgres
import Synchronization

/// Scenario 10: the server half at scale. First requests through `IdempotencyClaims` (take the
/// claim, then write a record and complete the claim: two durable commits each) on PostgreSQL,
/// beside the LMDB store, from 1, 4 and 16 concurrent clients.
extension Scenario {
    static let claims = Scenario(
        id: "10",
        name: "claims",
        title: "Idempotency claims (take, write, complete), PostgreSQL beside the LMDB store, 1, 4 and 16 clients",
        metrics: [
            .rate("rate-1", "1 client: claims/s"),
            .rate("rate-4", "4 clients: claims/s"),
            .rate("rate-16", "16 clients: claims/s"),
            .time("p50-1", "1 client: latency p50"),
            .time("p99-16", "16 clients: latency p99"),
        ],
        contenders: Contenders(ours: "PostgreSQL", sqlite: "LMDB store", floor: "floor", versusSQLite: "vs LMDB", versusFloor: "vs floor"),
        limit: { result in
            "two durable commits per claim (the take, then the write with the completion). LMDB has one writer, "
                + "so its clients queue for it: \(TextReport.format(result.sqlite("rate-1"))) claims/s from 1 client, "
                + "\(TextReport.format(result.sqlite("rate-16"))) from 16. PostgreSQL runs clients' transactions side by side "
                + "and flushes their commits together (group commit of the WAL): "
                + "\(TextReport.format(result.ours("rate-1"))) from 1, \(TextReport.format(result.ours("rate-16"))) from 16. "
                + "PostgreSQL in a cluster of the run's own on the same disk, over a Unix socket, fsync and synchronous_commit on; "
                + "LMDB flushing each commit"
        },
        run: { context in
            let cluster = try context.postgres()
            var sample = Sample()
            for clients in [1, 4, 16] {
                let each = max(context.sizes.claims / clients, 1)
                let postgres = try ClaimsBench.postgres(cluster: cluster, clients: clients, each: each)
                let lmdb = try ClaimsBench.lmdb(directory: try context.freshDirectory("claims-lmdb-\(clients)"), clients: clients, each: each, context: context)
                let total = Double(clients * each)
                func rate(_ nanoseconds: Double) -> Double { total / (nanoseconds / 1e9) }
                sample["rate-\(clients)"] = Trio(ours: rate(postgres.total), sqlite: rate(lmdb.total))
                if clients == 1 {
                    sample["p50-1"] = Trio(ours: Latencies(nanoseconds: postgres.calls).p50, sqlite: Latencies(nanoseconds: lmdb.calls).p50)
                }
                if clients == 16 {
                    sample["p99-16"] = Trio(ours: Latencies(nanoseconds: postgres.calls).p99, sqlite: Latencies(nanoseconds: lmdb.calls).p99)
                }
            }
            return sample
        }
    )
}

/// The clients of scenario 10: threads, since the claims' API blocks on its database.
enum ClaimsBench {
    static let scope = ClaimScope(businessID: "pharmacy-7", operationType: "product.create")

    static func body(_ key: String) -> Data {
        Data(#"{"id":"\#(key)","name":"Antiseptic 500 ml","category":"Products","price":{"amount":"4.50","currency":"EUR"}}"#.utf8)
    }

    /// `clients` threads each handling `each` first requests with their own keys; answers every
    /// call's nanoseconds and the whole run's.
    static func run(
        clients: Int,
        each: Int,
        _ claim: @escaping @Sendable (String) throws -> ClaimAnswer
    ) throws -> (calls: [Double], total: Double) {
        let results = Mutex<[Double]>([])
        let total = try Threads.run(clients) { client in
            var times: [Double] = []
            times.reserveCapacity(each)
            for index in 0..<each {
                let key = "c\(client)-\(index)"
                var answer: ClaimAnswer?
                times.append(try Stopwatch.time { answer = try claim(key) })
                guard answer?.outcome == .applied else {
                    throw BenchmarkFailure(description: "claim \(key) was answered \(String(describing: answer?.outcome)), not applied")
                }
            }
            let finished = times
            results.withLock { $0 += finished }
        }
        return (results.withLock { $0 }, total)
    }

    static func postgres(cluster: TemporaryPostgresCluster, clients: Int, each: Int) throws -> (calls: [Double], total: Double) {
        let schema = "bench_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(cluster.settings)
        defer { admin.close() }
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let pool = PostgresConnectionPool(settings: cluster.settings.inSchema(schema), size: clients)
        defer { pool.close() }
        let claims = IdempotencyClaims(store: try PostgresClaimStore(pool: pool))
        _ = try pool.withConnection { try $0.execute("CREATE TABLE products (id text PRIMARY KEY, body bytea NOT NULL)") }
        let measured = try run(clients: clients, each: each) { key in
            let body = body(key)
            return try claims.handle(scope: scope, key: key, body: body) { txn in
                try txn.execute("INSERT INTO products (id, body) VALUES ($1, $2)", [PostgresValue.text(key), .bytes(body)])
                return ClaimResponse(status: 201, headers: [.init(name: "Content-Type", value: "application/json")], body: body)
            }
        }
        let stored = try admin.execute("SELECT count(*) FROM \(schema).products")[0].int64(0)
        guard stored == Int64(clients * each) else {
            throw BenchmarkFailure(description: "PostgreSQL holds \(stored) records after \(clients * each) claims")
        }
        return measured
    }

    static func lmdb(directory: URL, clients: Int, each: Int, context: Context) throws -> (calls: [Double], total: Double) {
        defer { context.remove(directory) }
        let environment = try LMDBEnvironment.open(directory: directory, options: .init(syncOnCommit: true))
        defer { environment.close() }
        let products = try environment.openDatabase("products")
        let claims = IdempotencyClaims(store: try LMDBClaimStore(environment: environment))
        let measured = try run(clients: clients, each: each) { key in
            let body = body(key)
            return try claims.handle(scope: scope, key: key, body: body) { txn in
                try txn.withLMDB { try $0.put(products, key: Array(key.utf8), value: body) }
                return ClaimResponse(status: 201, headers: [.init(name: "Content-Type", value: "application/json")], body: body)
            }
        }
        let stored = try environment.read { try $0.count(products) }
        guard stored == clients * each else {
            throw BenchmarkFailure(description: "LMDB holds \(stored) records after \(clients * each) claims")
        }
        return measured
    }
}
