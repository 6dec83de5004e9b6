public import Foundation
public import IdempotencyClaims
public import OutboxStorage

/// A ``ClaimStore`` in a database of an LMDB environment the server owns.
///
/// Claims live in one named database (`idempotency_claims` by default) of the server's
/// environment; the server's records live in its other databases. The write a claim protects
/// receives a ``Transaction`` and reaches the LMDB transaction through
/// ``Transaction/withLMDB(_:)``, so records and claim commit in one LMDB transaction.
///
/// Claims are taken and completed in the environment's one write transaction;
/// ``committedClaim(_:)`` reads in a read transaction, so a copy of a write in progress is
/// answered while that write holds the writer.
///
/// ```swift
/// let environment = try LMDBEnvironment.open(directory: url)
/// let products = try environment.openDatabase("products")
/// let claims = IdempotencyClaims(store: try LMDBClaimStore(environment: environment))
/// _ = try claims.handle(scope: scope, key: key, body: body) { txn in
///     try txn.withLMDB { try $0.put(products, key: Array(id.utf8), value: body) }
///     return ClaimResponse(status: 201, body: body)
/// }
/// ```
public struct LMDBClaimStore: ClaimStore {
    /// Lends the LMDB write transaction the claim runs in. Valid inside the closure of
    /// ``LMDBClaimStore/transaction(_:)`` only.
    ///
    /// - Warning: it must not be kept past its closure: LMDB transactions cannot escape, and
    ///   keeping this value traps when the transaction ends.
    public struct Transaction {
        fileprivate let lease: Lease

        /// Runs `body` with the LMDB write transaction the claim commits in.
        /// - Throws: ``LMDBClaimStoreError/transactionEnded`` when used after its closure;
        ///   whatever `body` throws.
        public func withLMDB<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
            guard let pointer = lease.pointer else { throw LMDBClaimStoreError.transactionEnded }
            return try body(pointer.pointee)
        }
    }

    /// Points at the borrowed LMDB transaction while its closure runs, and at nothing after.
    fileprivate final class Lease {
        var pointer: UnsafePointer<LMDBTransaction>?

        init(_ pointer: UnsafePointer<LMDBTransaction>) {
            self.pointer = pointer
        }
    }

    public let environment: LMDBEnvironment
    /// The database holding the claims.
    public let database: LMDBDatabase

    /// Opens (creating if needed) the claims' database in `environment`.
    public init(environment: LMDBEnvironment, databaseName: String = "idempotency_claims") throws {
        self.environment = environment
        self.database = try environment.openDatabase(databaseName)
    }

    public func transaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        try environment.write { txn in
            // The pointer is valid for this closure only: the lease forgets it when the closure
            // ends, so a `Transaction` kept past it throws instead of touching a dead transaction.
            try withUnsafePointer(to: txn) { pointer in
                let lease = Lease(pointer)
                defer { lease.pointer = nil }
                return try body(Transaction(lease: lease))
            }
        }
    }

    /// Read in a read transaction, a snapshot of what is committed: LMDB's readers never wait
    /// for its writer.
    public func committedClaim(_ id: ClaimID) throws -> ClaimRecord? {
        let key = try ClaimCodec.key(for: id)
        return try Self.decoded(try environment.read { try $0.get(database, key: key) })
    }

    public func claim(_ id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        let key = try ClaimCodec.key(for: id)
        return try Self.decoded(try transaction.withLMDB { try $0.get(database, key: key) })
    }

    private static func decoded(_ bytes: [UInt8]?) throws -> ClaimRecord? {
        try bytes.map { bytes throws -> ClaimRecord in try ClaimCodec.decode(bytes) }
    }

    public func putClaim(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws {
        let key = try ClaimCodec.key(for: id)
        let value = try ClaimCodec.encode(record)
        try transaction.withLMDB { try $0.put(database, key: key, value: value) }
    }

    public func removeClaim(_ id: ClaimID, in transaction: Transaction) throws {
        let key = try ClaimCodec.key(for: id)
        try transaction.withLMDB { _ = try $0.delete(database, key: key) }
    }

    public func insertClaimIfAbsent(_ record: ClaimRecord, for id: ClaimID, in transaction: Transaction) throws -> ClaimRecord? {
        let key = try ClaimCodec.key(for: id)
        let value = try ClaimCodec.encode(record)
        do {
            try transaction.withLMDB { try $0.put(database, key: key, value: value, flags: .noOverwrite) }
            return nil
        } catch let error as LMDBError where error == .keyExists {
            // The one write transaction holds the environment: the claim found stays as read.
            return try claim(id, in: transaction)
        }
    }

    public func removeDeadClaims(at now: Date, policy: ClaimPolicy, limit: Int, in transaction: Transaction) throws -> Int {
        try transaction.withLMDB { txn in
            var dead: [[UInt8]] = []
            try txn.scan(database) { key, value in
                if try !ClaimRules.isLive(ClaimCodec.decode(value), now: now, policy: policy) { dead.append(Array(key)) }
                return dead.count < limit ? .next : .stop
            }
            for key in dead { try txn.delete(database, key: key) }
            return dead.count
        }
    }
}

/// Errors of ``LMDBClaimStore`` beyond LMDB's own.
public enum LMDBClaimStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A ``LMDBClaimStore/Transaction`` was used after its closure ended.
    case transactionEnded

    public var description: String {
        switch self {
        case .transactionEnded: "an LMDBClaimStore transaction was used after its closure ended"
        }
    }
}
