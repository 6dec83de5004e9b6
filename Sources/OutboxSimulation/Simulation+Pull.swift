import Foundation
import Outbox
import OutboxAudit
import TestHarness
import OutboxWire

/// The pull (`Docs/records.md`, "The pull"): the phone pulls the model server's change feed in
/// the worker's passes and when the app asks (`pull()`), while the server forgets old changes
/// (tombstone expiry), another device deletes records, and (with ``SimulationOptions/restores``)
/// the server is restored from an older backup in a new epoch; and what must hold of the base
/// once a pull reached the feed's end.
extension Simulation {
    /// The seed's pull: a page size (some seeds a page or two of changes at a time) and each
    /// synced type's freshness.
    static func pullConfiguration(random: inout SeededRandom) -> PullConfiguration {
        let pageSize = [2, 3, 10, 500][random.int(in: 0..<4)]
        let freshness = Double([60, 600, 3_600][random.int(in: 0..<3)])
        return PullConfiguration(
            pageSize: pageSize,
            types: [SimulationScenario.itemType: PullConfiguration.PulledType(freshnessSeconds: freshness),
                    SimulationScenario.productType: PullConfiguration.PulledType(freshnessSeconds: freshness)],
            businesses: [SimulationScenario.business]
        )
    }

    /// Between the member's actions, drawn from the pull's own stream: the app pulls, another
    /// device deletes a product, the server forgets its old changes, takes a backup or is
    /// restored from it. Answers whether it did anything.
    func pullActions() async throws -> Bool {
        switch pullRandom.int(in: 0..<100) {
        case 0..<10:
            try await pullNow()
        case 10..<13:
            guard let product = pullRandom.pick(server.liveProducts), let revision = try server.deleteElsewhere(product: product) else { return false }
            trace.append("another device deletes product \(product) on the server (a tombstone at revision \(revision))")
        case 13..<15:
            // An edit against the tombstone's revision, or another device's change, creates it again.
            let item = pullRandom.pick(ModelServer.itemNames)!
            guard let revision = try server.deleteElsewhere(product: item, item: true) else { return false }
            trace.append("another device deletes \(item) on the server (a tombstone at revision \(revision))")
        case 15..<17:
            let (floor, forgotten) = try server.expireTombstones(through: pullRandom.int(in: 50..<101))
            trace.append("the server forgets its changes through \(SimulationScenario.business)'s change \(floor) (\(forgotten) changes, tombstones past their retention)")
        case 17..<19 where options.restores:
            try server.takeBackup()
            trace.append("the server takes a backup")
        case 19 where options.restores:
            server.finishParked()
            guard let (epoch, undone) = try server.restore() else { return false }
            trace.append("the server is restored from its backup: epoch \(epoch), \(undone) writes undone")
        default:
            return false
        }
        return true
    }

    /// The app asks for a pull now. One that reached the feed's end leaves the base as the
    /// server has it. Answers whether it reached the end.
    @discardableResult
    func pullNow() async throws -> Bool {
        let report: Outbox.PullReport?
        do {
            report = try await outbox.pull()
        } catch OutboxError.closed {
            report = nil
        }
        // A write the pull made due (a rebase, a held write let go) is sent by the pass that
        // follows it, at once: the audit reads the journal once that pass ended too, never beside it.
        await outbox.settle()
        guard let report, !outbox.isClosed else {
            // The process died holding a page (or a snapshot page): `settle` reopens it.
            trace.append("pull() -> the process died mid-pull")
            return false
        }
        guard let feed = report.feed(SimulationScenario.business) else {
            trace.append("pull() -> no feed pulled")
            return false
        }
        let stop = feed.stoppedBy.map { " stopped: \($0.traceText)" } ?? ""
        let staged = feed.resnapshots + feed.pagesStaged > 0 ? ", \(feed.pagesStaged) snapshot pages, \(feed.resnapshots) resnapshots" : ""
        trace.append("pull() -> \(feed.pagesApplied) pages, \(feed.changesApplied) changes\(staged)\(feed.reachedEnd ? ", at the end" : "")\(stop)")
        if feed.reachedEnd {
            try syncAudit()
            try checkBaseIsServers("after a pull that reached the end")
        }
        return feed.reachedEnd
    }

    /// Every record's base is the server's now, value and revision (one the server deleted, or
    /// never held in this epoch, is deleted or absent), and the feed's cursor is the server's
    /// fence: what a pull that reached the feed's end leaves, with the worker at rest (a record a
    /// write was sent for after the feed's last page is passed over).
    func checkBaseIsServers(_ when: String) throws {
        let held = server.currentRecords
        let keys = Set(held.keys).union(audit.records.keys.filter { $0.type != SimulationScenario.draftType })
        let feedSeq = audit.lastFeedSeq
        for key in keys.sorted() {
            // A write sent after the feed's last page (by the pass that followed the pull), or
            // still on its way, may have changed the server's record past what the feed brought:
            // its answer brings it, when one came, not the feed.
            let sentSince = audit.records[key]?.writes.contains { id in
                guard let row = audit.standing(id) else { return false }
                return row.status == .syncing || (audit.rows[id]?.lastSentSeq ?? .zero) > feedSeq || (row.lastSentSeq ?? .zero) > feedSeq
            } ?? false
            if sentSince { continue }
            let base = try outbox.record(key)?.server
            if let (revision, json) = held[key], let json {
                let hash = Self.reencoded(json).map { SHA256Digest(of: $0) }
                guard let base, base.revision == UInt64(revision), base.value.map({ SHA256Digest(of: $0) }) == hash else {
                    throw recordBroken(key, "\(when), its base is \(base.map { "at revision \($0.revision)\($0.value == nil ? ", deleted" : "")" } ?? "absent"); the server holds it at revision \(revision)")
                }
            } else if let base, base.value != nil {
                throw recordBroken(key, "\(when), its base holds a value at revision \(base.revision); the server \(held[key] == nil ? "does not hold it" : "deleted it")")
            }
        }
        recordTally["bases compared with the server's after a pull", default: 0] += 1
    }

    /// The member decides on a write whose record was deleted on the server while it waited:
    /// keeps the deletion (discards the change), or keeps their version, creating the record
    /// again against the tombstone's revision.
    func resolveDeleted(_ id: OperationID, _ old: Expectation, revision: String) async throws {
        if random.chance(40) {
            trace.append("the member accepts that \(label(id))'s record was deleted on the server")
            try await outbox.resolveConflict(id, keeping: .theirs)
            audit.personDid(.keepTheirs, to: id)
        } else {
            try await keepMine(id, old, onto: revision, merging: ["created_again": "yes"])
        }
    }
}

extension Outbox.PullStop {
    var traceText: String {
        switch self {
        case .backingOff: "backing off"
        case .refused(let refusal): "refused (\(refusal.code))"
        case .invalidResponse(let status, _): "status \(status)"
        default: "\(self)"
        }
    }
}
