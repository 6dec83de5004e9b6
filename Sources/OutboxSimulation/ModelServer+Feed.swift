import Foundation
import IdempotencyClaims
import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire

/// The model server's change feed, over the same protocol as the test server (`Docs/wire-feed.md`):
/// every record it writes (the engine's writes, another device's) is a change
/// row in the write's transaction, and ``FeedHandling`` answers `GET /sync/changes`,
/// `/sync/snapshot` and `/sync/summary` over it. The model forgets changes below a floor it
/// raises (tombstone expiry) and goes back to a backup in a new epoch (a restore), so the phone
/// meets every 409 the protocol has.
extension ModelServer {
    /// The feed's limits: a small `max_limit` so a pull takes pages, and a snapshot too.
    var feedLimits: FeedLimits { FeedLimits(maxLimit: maxLimit, maxPageBytes: 4 << 20, tombstoneRetentionSeconds: 30 * 86_400) }

    /// Answers a feed request; `nil` when `request` is not one.
    func handleFeed(_ request: TransportRequest) -> TransportResponse? {
        guard request.method == "GET" else { return nil }
        let parts = request.endpoint.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        let query = parts.count > 1 ? String(parts[1]) : ""
        let business = request.headers[WireHeader.businessID] ?? "default"
        let log = FeedView(records: store.records(), business: SimulationScenario.business)
        let response: ClaimResponse
        switch path {
        case FeedPage.path: response = FeedHandling.respond(business: business, query: query, log: log, limits: feedLimits)
        case SnapshotPage.path: response = FeedHandling.respondSnapshot(business: business, query: query, log: log, limits: feedLimits)
        case FeedSummary.path: response = FeedHandling.respondSummary(business: business, query: query, log: log)
        default: return nil
        }
        return TransportResponse(response)
    }

    /// The feed's end now.
    var fence: FeedPosition { store.records().fence }

    var epoch: UInt64 { store.records().epoch }

    /// Every record the server holds now, by key: its revision and JSON (`nil`: a tombstone).
    var currentRecords: [RecordKey: (revision: Int, json: String?)] {
        let records = store.records()
        var all: [RecordKey: (revision: Int, json: String?)] = [:]
        for (name, item) in records.items { all[Simulation.itemKey(name)] = (item.revision, item.deleted ? nil : item.json) }
        for (id, item) in records.products { all[Simulation.productKey(id)] = (item.revision, item.deleted ? nil : item.json) }
        return all
    }

    /// The server forgets every change through a position between its floor and its fence
    /// (tombstones past their retention): a cursor below it is answered 409 `expired`. The claims
    /// of the writes as old go with them, as a server keeps tombstones exactly as long as claims
    /// (`FeedHandling.defaultLimits`), so no stored answer older than a forgotten tombstone is
    /// ever replayed: a resend applies its write again. Returns the new floor's change number, and
    /// how many changes were forgotten.
    func expireTombstones(through fraction: Int) throws -> (floor: UInt64, forgotten: Int) {
        try store.transaction { txn in
            let records = txn.records
            let floor = records.floor + (records.changeNumber - records.floor) * UInt64(fraction) / 100
            let before = records.changes.count
            txn.records.changes.removeAll { $0.position.major <= floor }
            for applied in records.applied {
                guard let position = applied.position, position.epoch == records.epoch, position.major <= floor,
                    case .success(let key) = IdempotencyKey.parse(applied.key) else { continue }
                try store.removeClaim(ClaimID(scope: applied.scope, key: key), in: txn)
                txn.records.claimsExpired.insert(applied.key)
            }
            txn.records.floor = floor
            txn.records.tombstonesExpired += 1
            return (floor, before - txn.records.changes.count)
        }
    }

    /// The server takes a backup a later ``restore()`` goes back to.
    func takeBackup() throws {
        try store.transaction { txn in
            txn.records.backup = Backup(items: txn.records.items, products: txn.records.products, appliedCount: txn.records.applied.count)
        }
    }

    /// The server is restored from its backup: its records go back (revisions too), every write
    /// applied since is undone with its claim (a retry applies it again), and the feed starts a
    /// new epoch holding one change per record. Returns the new epoch and the writes undone;
    /// `nil` without a backup.
    func restore() throws -> (epoch: UInt64, undone: Int)? {
        try store.transaction { txn -> (epoch: UInt64, undone: Int)? in
            guard let backup = txn.records.backup else { return nil }
            let undone = txn.records.applied[backup.appliedCount...]
            for applied in undone {
                if case .success(let key) = IdempotencyKey.parse(applied.key) {
                    try store.removeClaim(ClaimID(scope: applied.scope, key: key), in: txn)
                }
                txn.records.lostInRestore.insert(applied.key)
            }
            txn.records.applied.removeLast(undone.count)
            txn.records.items = backup.items
            txn.records.products = backup.products
            txn.records.epoch += 1
            txn.records.changeNumber = 0
            txn.records.floor = 0
            txn.records.changes = []
            txn.records.restores += 1
            // The new epoch's feed holds each record as the backup has it.
            for (name, item) in backup.items.sorted(by: { $0.key < $1.key }) { txn.records.keep(item, type: SimulationScenario.itemType, id: name) }
            for (id, item) in backup.products.sorted(by: { $0.key < $1.key }) { txn.records.keep(item, type: SimulationScenario.productType, id: id) }
            return (txn.records.epoch, undone.count)
        }
    }

    /// Writes a restore undid: synced on the phone, never applied by the server as it is now.
    var lostInRestore: Set<String> { store.records().lostInRestore }
    var claimsExpired: Set<String> { store.records().claimsExpired }
    var restores: Int { store.records().restores }
    var tombstonesExpired: Int { store.records().tombstonesExpired }
}

/// One business's feed as one committed moment of the model's records holds it.
struct FeedView: ChangeLog {
    var records: ModelServer.Records
    /// The only business with records; any other's feed is empty.
    var business: String

    private var floor: FeedPosition { FeedPosition(epoch: records.epoch, major: records.floor) }

    func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) throws -> ChangeLogRead {
        guard business == self.business else {
            return ChangeLogRead(epoch: records.epoch, floor: .start(of: records.epoch), fence: .start(of: records.epoch), rows: [])
        }
        let rows = records.changes.lazy
            .filter { row in after.map { row.position > $0 } ?? true }
            .filter { row in until.map { row.position <= $0 } ?? true }
            .prefix(limit)
        return ChangeLogRead(epoch: records.epoch, floor: floor, fence: records.fence, rows: Array(rows))
    }

    func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) throws -> SnapshotRead {
        let live = business == self.business ? liveRecords() : []
        let records = live.filter { record in
            (type.map { $0 == record.type } ?? true) && (after.map { $0.precedes(type: record.type, id: record.id) } ?? true)
        }
        return SnapshotRead(epoch: self.records.epoch, position: self.records.fence, records: Array(records.prefix(limit)))
    }

    func summary(business: String, type: String) throws -> (position: FeedPosition, records: [(id: String, revision: UInt64)]) {
        let live = business == self.business ? liveRecords().filter { $0.type == type } : []
        return (records.fence, live.map { ($0.id, $0.revision) })
    }

    /// Every live record, by type bytes then id bytes.
    private func liveRecords() -> [FeedChange] {
        let items = records.items.filter { !$0.value.deleted }.map { $0.value.change(type: SimulationScenario.itemType, id: $0.key) }
        let products = records.products.filter { !$0.value.deleted }.map { $0.value.change(type: SimulationScenario.productType, id: $0.key) }
        return (items + products).sorted { left, right in
            left.type != right.type
                ? left.type.utf8.lexicographicallyPrecedes(right.type.utf8)
                : left.id.utf8.lexicographicallyPrecedes(right.id.utf8)
        }
    }
}
