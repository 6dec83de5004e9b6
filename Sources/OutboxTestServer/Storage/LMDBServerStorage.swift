import Foundation
import IdempotencyClaims
import OutboxWire
import LMDBClaimStore
import OutboxStorage

/// ``ServerStorage`` in an LMDB environment: claims, records, approvals and counts in one
/// file, so a restarted server still replays what it answered before.
///
/// Databases: `idempotency_claims` (``LMDBClaimStore``), `records` (key `type␟business␟id`,
/// JSON value), `approvals` (big-endian sequence number, JSON value), `applied` (key, decimal
/// count), and the feed's (``LMDBFeedTables``).
final class LMDBServerStorage: ServerStorage {
    private let environment: LMDBEnvironment
    private let claims: IdempotencyClaims<LMDBClaimStore>
    private let tables: Tables

    private struct Tables: Sendable {
        let records: LMDBDatabase
        let approvals: LMDBDatabase
        let applied: LMDBDatabase
        let feed: LMDBFeedTables
    }

    init(directory: URL, policy: ClaimPolicy, clock: any ClaimClock) throws {
        if let problem = DataDirectory.problem(directory) { throw DataDirectoryError(message: "the data directory \(problem)") }
        let environment = try LMDBEnvironment.open(directory: directory, options: .init(syncOnCommit: false))
        do {
            tables = Tables(
                records: try environment.openDatabase("records"),
                approvals: try environment.openDatabase("approvals"),
                applied: try environment.openDatabase("applied"),
                feed: try LMDBFeedTables(environment: environment))
            claims = IdempotencyClaims(store: try LMDBClaimStore(environment: environment), policy: policy, clock: clock)
        } catch {
            environment.close()
            throw error
        }
        self.environment = environment
    }

    private struct Transaction: ServerTransaction {
        let txn: LMDBClaimStore.Transaction
        let tables: Tables

        func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) throws -> Int {
            let storageKey = Array(StoredRecord.storageKey(type: type, businessID: businessID, id: id).utf8)
            return try txn.withLMDB { lmdb in
                // The one write transaction holds the environment: read and write cannot interleave.
                let previous = try lmdb.get(tables.records, key: storageKey)
                    .map { try JSONDecoder().decode(StoredRecord.self, from: Data($0)).revision } ?? 0
                let record = StoredRecord(type: type, businessID: businessID, id: id, revision: previous + 1, idempotencyKey: key, body: body)
                try lmdb.put(tables.records, key: storageKey, value: try JSONEncoder().encode(record))
                return record.revision
            }
        }

        func addApproval(type: String, businessID: String, key: String, body: Data) throws -> String {
            try txn.withLMDB { lmdb in
                let sequence = UInt64(try lmdb.count(tables.approvals) + 1)
                let approval = PendingApproval(
                    requestID: PendingApproval.requestID(Int(sequence)), type: type, businessID: businessID, idempotencyKey: key, body: body)
                try lmdb.put(tables.approvals, key: sequence.bigEndianBytes, value: try JSONEncoder().encode(approval), flags: .append)
                return approval.requestID
            }
        }

        func countApplied(key: String) throws {
            try txn.withLMDB { lmdb in
                let stored = try lmdb.get(tables.applied, key: Array(key.utf8)).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
                try lmdb.put(tables.applied, key: Array(key.utf8), value: Array(String((stored ?? 0) + 1).utf8))
            }
        }

        func lockedRecord(type: String, businessID: String, id: String) throws -> StoredRecord? {
            let storageKey = Array(StoredRecord.storageKey(type: type, businessID: businessID, id: id).utf8)
            // The write transaction is the environment's one writer: nothing moves until it ends.
            return try txn.withLMDB { lmdb in
                try lmdb.get(tables.records, key: storageKey).map { try JSONDecoder().decode(StoredRecord.self, from: Data($0)) }
            }
        }

        func replaceRecord(_ record: StoredRecord) throws {
            try txn.withLMDB { lmdb in
                try lmdb.put(tables.records, key: Array(record.storageKey.utf8), value: try JSONEncoder().encode(record))
            }
        }

        func recordChange(_ record: StoredRecord) throws -> FeedPosition? {
            try txn.withLMDB { try tables.feed.append($0, record) }
        }
    }

    func transaction<R>(_ body: (any ServerTransaction) throws -> R) throws -> R {
        try claims.store.transaction { try body(Transaction(txn: $0, tables: tables)) }
    }

    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        try claims.handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed, write: write) {
            Transaction(txn: $0, tables: tables)
        }
    }

    func appliedCounts() throws -> AppliedCounts {
        try environment.read { txn in
            var counts: [(key: String, count: Int)] = []
            try txn.scan(tables.applied) { key, value in
                // Keys were written from checked, UTF-8 Idempotency-Keys: they decode as they were.
                counts.append((String(decoding: key, as: UTF8.self), Int(String(decoding: value, as: UTF8.self)) ?? 0))
                return .next
            }
            return AppliedCounts(counts)
        }
    }

    func records() throws -> [StoredRecord] {
        try decodeAll(StoredRecord.self, in: tables.records)
    }

    func approvals() throws -> [PendingApproval] {
        try decodeAll(PendingApproval.self, in: tables.approvals)
    }

    private func decodeAll<Value: Decodable>(_ type: Value.Type, in database: LMDBDatabase) throws -> [Value] {
        let values = try environment.read { txn in
            var values: [Data] = []
            try txn.scan(database) { _, value in
                values.append(Data(value))
                return .next
            }
            return values
        }
        let decoder = JSONDecoder()
        return try values.map { try decoder.decode(Value.self, from: $0) }
    }

    var feed: (any ServerFeed)? { LMDBFeed(environment: environment, tables: tables.feed, records: tables.records) }

    func reset() throws {
        let claimsDatabase = claims.store.database
        try environment.write { txn in
            for database in [tables.records, tables.approvals, tables.applied, claimsDatabase] {
                try txn.removeAll(database)
            }
            try tables.feed.reset(txn)
        }
    }

    func close() {
        environment.close()
    }
}

extension UInt64 {
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }
}
