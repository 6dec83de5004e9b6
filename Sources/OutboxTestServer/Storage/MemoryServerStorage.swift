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

        func putNextRevision(type: String, businessID: String, id: String, key: String, body: Data) -> Int {
            let storageKey = StoredRecord.storageKey(type: type, businessID: businessID, id: id)
            let revision = (txn.records.records[storageKey]?.revision ?? 0) + 1
            txn.records.records[storageKey] = StoredRecord(
                type: type, businessID: businessID, id: id, revision: revision, idempotencyKey: key, body: body)
            return revision
        }

        func addApproval(type: String, businessID: String, key: String, body: Data) -> String {
            let requestID = PendingApproval.requestID(txn.records.approvals.count + 1)
            txn.records.approvals.append(PendingApproval(
                requestID: requestID, type: type, businessID: businessID, idempotencyKey: key, body: body))
            return requestID
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
        try claims.handle(scope: scope, key: key, body: body, whileClaimed: whileClaimed, write: write) { Transaction(txn: $0) }
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
