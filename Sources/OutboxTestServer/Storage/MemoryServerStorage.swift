import Foundation
import IdempotencyClaims
import OutboxWire

/// The server's data as one Swift value, committed with the claims by ``InMemoryClaimStore``.
///
/// Each transaction works on a copy of it: in ``SnapshotDictionary``s a copy is one reference and
/// a write copies only its own path, so a create costs the same whatever the store holds.
struct ServerState: Sendable {
    /// By ``StoredRecord/storageKey``, compared byte for byte.
    var records = SnapshotDictionary<ExactString, StoredRecord>()
    /// By number, 1 for `apr-1`.
    var approvals = SnapshotDictionary<Int, PendingApproval>()
    /// By `Idempotency-Key`, compared byte for byte.
    var applied = SnapshotDictionary<ExactString, Int>()
}

/// ``ServerStorage`` in memory: gone when the server stops.
final class MemoryServerStorage: ServerStorage {
    private let store = InMemoryClaimStore(records: ServerState())
    private let claims: IdempotencyClaims<InMemoryClaimStore<ServerState>>

    init(policy: ClaimPolicy, clock: any ClaimClock) {
        claims = IdempotencyClaims(store: store, policy: policy, clock: clock)
    }

    private struct Transaction: ServerTransaction {
        let txn: InMemoryClaimStore<ServerState>.Transaction

        func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) -> Int {
            let storageKey = ExactString(StoredRecord.storageKey(type: type, businessID: businessID, id: id))
            let revision = (txn.records.records[storageKey]?.revision ?? 0) + 1
            txn.records.records[storageKey] = StoredRecord(
                type: type, businessID: businessID, id: id, revision: revision, idempotencyKey: key, body: body)
            return revision
        }

        func addApproval(type: String, businessID: String, key: String, body: Data) -> String {
            let number = txn.records.approvals.count + 1
            let requestID = PendingApproval.requestID(number)
            txn.records.approvals[number] = PendingApproval(
                requestID: requestID, type: type, businessID: businessID, idempotencyKey: key, body: body)
            return requestID
        }

        func countApplied(key: String) {
            txn.records.applied[ExactString(key), default: 0] += 1
        }

        func lockedRecord(type: String, businessID: String, id: String) -> StoredRecord? {
            txn.records.records[ExactString(StoredRecord.storageKey(type: type, businessID: businessID, id: id))]
        }

        func replaceRecord(_ record: StoredRecord) {
            txn.records.records[ExactString(record.storageKey)] = record
        }
    }

    func transaction<R>(_ body: (any ServerTransaction) throws -> R) throws -> R {
        try store.transaction { try body(Transaction(txn: $0)) }
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

    func appliedCounts() -> AppliedCounts {
        AppliedCounts(store.records().applied.entries.map { (key: $0.key.string, count: $0.value) })
    }

    func records() -> [StoredRecord] {
        store.records().records.entries.sorted { $0.key < $1.key }.map(\.value)
    }

    func approvals() -> [PendingApproval] {
        store.records().approvals.entries.sorted { $0.key < $1.key }.map(\.value)
    }

    func reset() {
        store.reset(records: ServerState())
    }

    func close() {}
}
