import Foundation
import IdempotencyClaims
import OutboxWire
import Synchronization

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
    /// The feed's epoch: 1 at the start, one more at each reset.
    var epoch: UInt64 = 1
    /// The feed's changes by business and change number (1, 2, ... per business, dense above the
    /// floor), so a page is one lookup per change.
    var changes = SnapshotDictionary<ChangeKey, FeedChange>()
    /// Per business, the number of its last change (the fence) and the number its changes are
    /// forgotten through (the floor).
    var lastChange = SnapshotDictionary<ExactString, UInt64>()
    var purgedThrough = SnapshotDictionary<ExactString, UInt64>()

    init(epoch: UInt64 = 1) {
        self.epoch = epoch
    }
}

/// A change's place in ``ServerState/changes``: its business, byte for byte, and its number.
struct ChangeKey: Hashable, Sendable {
    var business: ExactString
    var number: UInt64
}

/// ``ServerStorage`` in memory: gone when the server stops.
final class MemoryServerStorage: ServerStorage {
    private let store = InMemoryClaimStore(records: ServerState())
    private let claims: IdempotencyClaims<InMemoryClaimStore<ServerState>>
    private let resets = Mutex(())

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

        /// The business's next change number; the one writer at a time makes numbers commit in
        /// order, so `(epoch, n, 0)` never has a change come before it later.
        func recordChange(_ record: StoredRecord) -> FeedPosition? {
            let business = ExactString(record.businessID)
            let number = (txn.records.lastChange[business] ?? 0) + 1
            txn.records.lastChange[business] = number
            txn.records.changes[ChangeKey(business: business, number: number)] = record.feedChange
            return FeedPosition(epoch: txn.records.epoch, major: number)
        }
    }

    /// The feed as last committed: one snapshot for the whole read.
    private struct Feed: ServerFeed {
        let store: InMemoryClaimStore<ServerState>

        func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) -> ChangeLogRead {
            let state = store.records()
            let key = ExactString(business)
            let last = state.lastChange[key] ?? 0
            let floor = state.purgedThrough[key] ?? 0
            var rows: [ChangeRow] = []
            // Rows are (epoch, n, 0): those after (epoch, a, m) are n > a, whatever m.
            if after.map({ $0.epoch == state.epoch }) ?? true, limit > 0 {
                let first = max(after?.major ?? 0, floor) + 1
                let end = min(last, until.map { $0.epoch == state.epoch ? $0.major : 0 } ?? last)
                var number = first
                while number <= end, rows.count < limit {
                    if let change = state.changes[ChangeKey(business: key, number: number)] {
                        rows.append(ChangeRow(position: FeedPosition(epoch: state.epoch, major: number), change: change))
                    }
                    number += 1
                }
            }
            return ChangeLogRead(
                epoch: state.epoch, floor: FeedPosition(epoch: state.epoch, major: floor),
                fence: FeedPosition(epoch: state.epoch, major: last), rows: rows)
        }

        func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) -> SnapshotRead {
            let state = store.records()
            let live = Self.live(state, business: business, type: type).filter { after?.precedes(type: $0.type, id: $0.id) ?? true }
            return SnapshotRead(epoch: state.epoch, position: Self.fence(state, business: business),
                                records: live.prefix(limit).map(\.feedChange))
        }

        func summary(business: String, type: String) -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
            let state = store.records()
            return (Self.fence(state, business: business),
                    Self.live(state, business: business, type: type).map { (id: $0.id, revision: UInt64($0.revision)) })
        }

        /// The business's live records (of `type`, when given), by type bytes then id bytes.
        private static func live(_ state: ServerState, business: String, type: String?) -> [StoredRecord] {
            state.records.values
                .filter { !$0.isDeleted && $0.businessID.hasSameBytes(as: business) && (type.map($0.type.hasSameBytes(as:)) ?? true) }
                .sorted { left, right in
                    left.type.hasSameBytes(as: right.type)
                        ? left.id.utf8.lexicographicallyPrecedes(right.id.utf8) : left.type.utf8.lexicographicallyPrecedes(right.type.utf8)
                }
        }

        private static func fence(_ state: ServerState, business: String) -> FeedPosition {
            FeedPosition(epoch: state.epoch, major: state.lastChange[ExactString(business)] ?? 0)
        }

        func purge(business: String, through: FeedPosition) throws -> (floor: FeedPosition, purged: Int) {
            try store.transaction { txn in
                let key = ExactString(business)
                let epoch = txn.records.epoch
                let last = txn.records.lastChange[key] ?? 0
                guard through.epoch == epoch else {
                    throw FeedPurgeRefusal(message: "through \(through) is of epoch \(through.epoch); this feed is at epoch \(epoch)")
                }
                guard through <= FeedPosition(epoch: epoch, major: last) else {
                    throw FeedPurgeRefusal(message: "through \(through) is past the end of business \(business)'s feed (\(epoch)-\(last)-0)")
                }
                let floor = txn.records.purgedThrough[key] ?? 0
                var purged = 0
                if through.major > floor {
                    for number in (floor + 1)...through.major where txn.records.changes[ChangeKey(business: key, number: number)] != nil {
                        txn.records.changes[ChangeKey(business: key, number: number)] = nil
                        purged += 1
                    }
                    txn.records.purgedThrough[key] = through.major
                }
                return (FeedPosition(epoch: epoch, major: max(floor, through.major)), purged)
            }
        }
    }

    var feed: (any ServerFeed)? { Feed(store: store) }

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
        // Only a reset moves the epoch: one at a time, none is lost.
        resets.withLock { _ in store.reset(records: ServerState(epoch: store.records().epoch + 1)) }
    }

    func close() {}
}
