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
    private let sortedLive = SortedLiveRecords()

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
        let sortedLive: SortedLiveRecords

        func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) -> ChangeLogRead {
            let state = store.records()
            let key = ExactString(business)
            return NumberedFeed.read(
                epoch: state.epoch, last: state.lastChange[key] ?? 0, floor: state.purgedThrough[key] ?? 0,
                after: after, until: until, limit: limit
            ) { state.changes[ChangeKey(business: key, number: $0)] }
        }

        func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) -> SnapshotRead {
            let state = store.records()
            let fence = Self.fence(state, business: business)
            let live = sortedLive.records(business: business, type: type, at: fence) { state.records.values.live(business: business, type: type) }
            // The first record after `after`, found by halving: the list is in type then id byte order.
            var low = 0, high = live.count
            if let after {
                while low < high {
                    let middle = (low + high) / 2
                    if after.precedes(type: live[middle].type, id: live[middle].id) { high = middle } else { low = middle + 1 }
                }
            }
            return SnapshotRead(epoch: fence.epoch, position: fence, records: live[low...].prefix(limit).map(\.feedChange))
        }

        func summary(business: String, type: String) -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
            let state = store.records()
            return state.records.values.summary(business: business, type: type, position: Self.fence(state, business: business))
        }

        private static func fence(_ state: ServerState, business: String) -> FeedPosition {
            FeedPosition(epoch: state.epoch, major: state.lastChange[ExactString(business)] ?? 0)
        }

        func purge(business: String, through: FeedPosition) throws -> (floor: FeedPosition, purged: Int) {
            try store.transaction { txn in
                let key = ExactString(business)
                let epoch = txn.records.epoch
                let (numbers, floor) = try NumberedFeed.purged(
                    business: business, epoch: epoch, last: txn.records.lastChange[key] ?? 0,
                    floor: txn.records.purgedThrough[key] ?? 0, through: through)
                var purged = 0
                for number in numbers.map(Array.init) ?? [] where txn.records.changes[ChangeKey(business: key, number: number)] != nil {
                    txn.records.changes[ChangeKey(business: key, number: number)] = nil
                    purged += 1
                }
                txn.records.purgedThrough[key] = floor
                return (FeedPosition(epoch: epoch, major: floor), purged)
            }
        }
    }

    var feed: (any ServerFeed)? { Feed(store: store, sortedLive: sortedLive) }

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

/// A business's live records in snapshot order, sorted once per state of the business: a fence
/// (epoch, last change number) names one, since every record write is a change and every reset a
/// new epoch. A snapshot's pages then cost a search and a page each, not a sort of every record
/// (which made a 100,000-record snapshot the test server's work, not the client's).
final class SortedLiveRecords: Sendable {
    private struct Sorted {
        var business: ExactString
        var type: String?
        var fence: FeedPosition
        var records: [StoredRecord]
    }

    private let latest = Mutex<Sorted?>(nil)

    /// The live records of `business` (and `type`) as at `fence`: the cached ones, or `sort()`'s.
    func records(business: String, type: String?, at fence: FeedPosition, sort: () -> [StoredRecord]) -> [StoredRecord] {
        let key = ExactString(business)
        let sameType = { (cached: String?) -> Bool in
            switch (cached, type) {
            case (nil, nil): true
            case let (cached?, type?): cached.utf8.elementsEqual(type.utf8)
            default: false
            }
        }
        if let cached = latest.withLock({ $0 }), cached.business == key, sameType(cached.type), cached.fence == fence {
            return cached.records
        }
        let sorted = sort()
        latest.withLock { $0 = Sorted(business: key, type: type, fence: fence, records: sorted) }
        return sorted
    }
}
