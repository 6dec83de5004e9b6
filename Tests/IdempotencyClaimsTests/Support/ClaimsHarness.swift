import Foundation
import TestHarness
import IdempotencyClaims
import LMDBClaimStore
import OutboxStorage
import OutboxWire
import PostgresClaimStore
import ThrowawayPostgres

/// The three stores, for tests that must hold for each.
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case lmdb
    case postgres

    var description: String { rawValue }
}

/// What the write under test does: count one effect for its key, then answer or fail.
struct Write: Sendable {
    var status = 201
    /// Fails after counting the effect, inside the transaction.
    var failsAfterEffect = false
    /// Refuses after counting the effect, as an update whose `If-Match` names an old revision.
    var refusesAfterEffect = false

    static let create = Write()
    static let approval = Write(status: 202)
    static let failing = Write(failsAfterEffect: true)
    static let refusing = Write(refusesAfterEffect: true)

    /// What ``refusing`` answers: a 412 naming the record's revision.
    static let refusal = ClaimResponse(
        status: 412,
        headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "ETag", value: #""7""#)],
        body: Data(#"{"code":"revision_conflict","message":"changed elsewhere","server_revision":"7"}"#.utf8))
}

struct ScriptedWriteFailure: Error {}

/// One claims instance over one backend, with an effect counter in the same database, so a
/// test can see whether a write committed.
final class ClaimsHarness: Sendable {
    let clock: ManualClaimClock
    let scope = ClaimScope(businessID: "b-1", operationType: "product.create")
    private let handleRequest: @Sendable (ClaimScope, String?, Data, () throws -> Void, Write) throws -> ClaimAnswer
    private let handleOperation: @Sendable (BatchOperation, () throws -> Void, Write) throws -> ClaimAnswer
    private let readClaim: @Sendable (ClaimScope, IdempotencyKey) throws -> ClaimRecord?
    private let putClaim: @Sendable (ClaimID, ClaimRecord) throws -> Void
    private let insertIfAbsent: @Sendable (ClaimID, ClaimRecord) throws -> ClaimRecord?
    private let purge: @Sendable (_ limit: Int, _ all: Bool) throws -> Int
    /// Effects by "business/type/key", compared byte for byte.
    private let readEffects: @Sendable () throws -> [ExactString: Int]
    private let close: @Sendable () -> Void

    /// A harness over one store; `commitFault` forces LMDB commit failures. A PostgreSQL harness
    /// works in a schema of its own in the tests' database (see `TestPostgres`).
    static func make(
        _ backend: Backend,
        policy: ClaimPolicy = ClaimPolicy(),
        clock: ManualClaimClock = ManualClaimClock(),
        commitFault: (@Sendable () -> LMDBError?)? = nil
    ) throws -> ClaimsHarness {
        switch backend {
        case .memory:
            let store = InMemoryClaimStore(records: [ExactString: Int]())
            return ClaimsHarness(
                claims: IdempotencyClaims(store: store, policy: policy, clock: clock),
                clock: clock,
                bump: { txn, key in
                    let count = txn.records[ExactString(key), default: 0] + 1
                    txn.records[ExactString(key)] = count
                    return count
                },
                effects: { store.records() },
                close: {})
        case .lmdb:
            let directory = TemporaryDirectory()
            let hook = commitFault.map { fault in LMDBFaultHook { call in call == .commit ? fault() : nil } }
            let environment = try LMDBEnvironment.open(
                directory: directory.url, options: .init(syncOnCommit: false, faultHook: hook))
            let effects = try environment.openDatabase("effects")
            let store = try LMDBClaimStore(environment: environment)
            return ClaimsHarness(
                claims: IdempotencyClaims(store: store, policy: policy, clock: clock),
                clock: clock,
                bump: { txn, key in
                    try txn.withLMDB { lmdb in
                        let count = (try lmdb.get(effects, key: Array(key.utf8)).map(decodeCount) ?? 0) + 1
                        try lmdb.put(effects, key: Array(key.utf8), value: encodeCount(count))
                        return count
                    }
                },
                effects: {
                    try environment.read { txn in
                        var counts: [ExactString: Int] = [:]
                        try txn.scan(effects) { key, value in
                            counts[ExactString(String(decoding: key, as: UTF8.self))] = decodeCount(Array(value))
                            return .next
                        }
                        return counts
                    }
                },
                close: {
                    environment.close()
                    directory.remove()
                })
        case .postgres:
            let schema = try TestPostgres.freshSchema("claims")
            let pool = PostgresConnectionPool(settings: schema.settings, size: 8)
            let store = try PostgresClaimStore(pool: pool)
            _ = try pool.withConnection { try $0.execute("CREATE TABLE effects (key text PRIMARY KEY, count integer NOT NULL)") }
            return ClaimsHarness(
                claims: IdempotencyClaims(store: store, policy: policy, clock: clock),
                clock: clock,
                bump: { txn, key in
                    let rows = try txn.execute(
                        "INSERT INTO effects (key, count) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET count = effects.count + 1 RETURNING count",
                        [.text(key)])
                    return Int(try rows[0].int32(0))
                },
                effects: {
                    try pool.withConnection { connection in
                        var counts: [ExactString: Int] = [:]
                        for row in try connection.execute("SELECT key, count FROM effects") {
                            counts[ExactString(try row.text(0))] = Int(try row.int32(1))
                        }
                        return counts
                    }
                },
                close: {
                    pool.close()
                    schema.drop()
                })
        }
    }

    private init<Store: ClaimStore>(
        claims: IdempotencyClaims<Store>,
        clock: ManualClaimClock,
        bump: @escaping @Sendable (Store.Transaction, String) throws -> Int,
        effects: @escaping @Sendable () throws -> [ExactString: Int],
        close: @escaping @Sendable () -> Void
    ) {
        self.clock = clock
        @Sendable func run(_ write: Write, _ txn: Store.Transaction, effect: String) throws -> ClaimResponse {
            let count = try bump(txn, effect)
            if write.failsAfterEffect { throw ScriptedWriteFailure() }
            if write.refusesAfterEffect { throw ClaimRefusal(Write.refusal) }
            return ClaimResponse(
                status: write.status,
                headers: [
                    .init(name: "Content-Type", value: "application/json"),
                    .init(name: "Location", value: "/products/p-\(count)"),
                    .init(name: "X-Request-ID", value: UUID().uuidString),
                ],
                body: Data(#"{"id":"p-1","effect":\#(count)}"#.utf8))
        }
        handleRequest = { scope, key, body, whileClaimed, write in
            try claims.handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed) { txn in
                try run(write, txn, effect: "\(scope)/\(key ?? "")")
            }
        }
        handleOperation = { operation, whileClaimed, write in
            // The scope a single request of this business and type would have.
            let scope = ClaimScope(businessID: operation.businessID, operationType: operation.operationType)
            return try claims.handle(operation, scope: scope, whileClaimed: whileClaimed) { txn in
                try run(write, txn, effect: "\(scope)/\(operation.idempotencyKey)")
            }
        }
        readClaim = { scope, key in try claims.claim(scope: scope, key: key) }
        putClaim = { id, record in
            try claims.store.transaction { txn in try claims.store.putClaim(record, for: id, in: txn) }
        }
        insertIfAbsent = { id, record in
            try claims.store.transaction { txn in try claims.store.insertClaimIfAbsent(record, for: id, in: txn) }
        }
        purge = { limit, all in try all ? claims.purgeAllExpired(batchLimit: limit) : claims.purgeExpired(limit: limit) }
        readEffects = effects
        self.close = close
    }

    deinit {
        close()
    }

    /// One request with `key` and `body` in the harness's scope (or `scope`).
    func handle(
        key: String?,
        body: String = #"{"id":"p-1","name":"Café"}"#,
        scope: ClaimScope? = nil,
        write: Write = .create,
        whileClaimed: () throws -> Void = {}
    ) throws -> ClaimAnswer {
        try handleRequest(scope ?? self.scope, key, Data(body.utf8), whileClaimed, write)
    }

    /// One operation of a batch, as ``BatchHandling`` answers it: in its own claim and transaction.
    func handle(_ operation: BatchOperation, write: Write = .create, whileClaimed: () throws -> Void = {}) throws -> ClaimAnswer {
        try handleOperation(operation, whileClaimed, write)
    }

    /// A whole `POST /sync/batch` body, each operation written as `writes` says (``Write/create``
    /// when it does not name it).
    func batch(_ body: Data, maxOperations: Int = BatchRequest.defaultMaxOperations, writes: [String: Write] = [:]) -> ClaimResponse {
        BatchHandling.respond(to: body, maxOperations: maxOperations) { operation in
            try handle(operation, write: writes[operation.operationID] ?? .create).response
        }
    }

    func claim(_ key: String, scope: ClaimScope? = nil) throws -> ClaimRecord? {
        guard let key = IdempotencyKey(rawValue: key) else { return nil }
        return try readClaim(scope ?? self.scope, key)
    }

    func put(_ record: ClaimRecord, key: String) throws {
        guard let key = IdempotencyKey(rawValue: key) else { return }
        try putClaim(ClaimID(scope: scope, key: key), record)
    }

    /// Stores `record` under `key` unless a claim is there; answers the claim found.
    func insertIfAbsent(_ record: ClaimRecord, key: String) throws -> ClaimRecord? {
        guard let key = IdempotencyKey(rawValue: key) else { return nil }
        return try insertIfAbsent(ClaimID(scope: scope, key: key), record)
    }

    func purgeExpired(limit: Int = 1000) throws -> Int { try purge(limit, false) }

    func purgeAllExpired(batchLimit: Int) throws -> Int { try purge(batchLimit, true) }

    /// How many times the write committed for `key` in the harness's scope (or `scope`).
    func effects(_ key: String, scope: ClaimScope? = nil) throws -> Int {
        try readEffects()[ExactString("\(scope ?? self.scope)/\(key)")] ?? 0
    }

    func totalEffects() throws -> Int {
        try readEffects().values.reduce(0, +)
    }
}

private func encodeCount(_ count: Int) -> [UInt8] {
    Array(String(count).utf8)
}

private func decodeCount(_ bytes: [UInt8]) -> Int {
    Int(String(decoding: bytes, as: UTF8.self)) ?? -1
}
