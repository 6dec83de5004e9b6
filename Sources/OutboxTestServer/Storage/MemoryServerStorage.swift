import Foundation
import IdempotencyClaims

/// The server's data as one Swift value, committed with the claims by ``InMemoryClaimStore``.
struct ServerState: Sendable {
    var records: [String: StoredRecord] = [:]
    var approvals: [PendingApproval] = []
    var applied: [String: Int] = [:]
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

        func record(type: String, businessID: String, id: String) -> StoredRecord? {
            txn.records.records[StoredRecord.storageKey(type: type, businessID: businessID, id: id)]
        }

        func put(_ record: StoredRecord) {
            txn.records.records[record.storageKey] = record
        }

        func approvalCount() -> Int {
            txn.records.approvals.count
        }

        func add(_ approval: PendingApproval) {
            txn.records.approvals.append(approval)
        }

        func countApplied(key: String) {
            txn.records.applied[key, default: 0] += 1
        }
    }

    func handle(
        scope: ClaimScope,
        key: String?,
        body: Data,
        whileClaimed: () throws -> Void,
        write: (any ServerTransaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        try claims.handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed) { txn in
            try write(Transaction(txn: txn))
        }
    }

    func appliedCounts() -> [String: Int] {
        store.records().applied
    }

    func records() -> [StoredRecord] {
        store.records().records.sorted { $0.key < $1.key }.map(\.value)
    }

    func approvals() -> [PendingApproval] {
        store.records().approvals
    }

    func reset() {
        store.reset(records: ServerState())
    }

    func close() {}
}
