import Foundation
import Outbox
import OutboxAudit
import OutboxWire

/// The member's records: what the workload writes into them, and what must hold of them after
/// every step (`Docs/records.md`).
extension Simulation {
    // MARK: Keys and values

    static func itemKey(_ name: String) -> RecordKey {
        RecordKey(business: SimulationScenario.business, type: SimulationScenario.itemType, id: name)
    }

    static func productKey(_ product: String) -> RecordKey {
        RecordKey(business: SimulationScenario.business, type: SimulationScenario.productType, id: product)
    }

    static func draftKey(_ number: Int) -> RecordKey {
        RecordKey(business: SimulationScenario.business, type: SimulationScenario.draftType, id: "d-\(number)")
    }

    /// The product as the member's form shows it once saved: its number makes every value the
    /// member puts a value of its own, so a value shown names the write that put it.
    func productValue() -> Data {
        Data(#"{"n":\#(payloadNumber),"name":"Product \#(payloadNumber)","product":"p-\#(payloadNumber)"}"#.utf8)
    }

    /// The item as the member's form shows it after an edit.
    func itemValue(_ item: String, price: Int, draft: Bool) -> Data {
        let note = draft ? #","note":"draft \#(payloadNumber)""# : ""
        return Data(#"{"item":"\#(item)","n":\#(payloadNumber)\#(note),"price":\#(price)}"#.utf8)
    }

    /// `changes` for a correction or a resolution: half the time the record's value changes too
    /// (a new number and `merge`), else `nil`, and the old row's changes move to the new one.
    func changedValues(_ changes: [RecordChange], merging merge: [String: String]) -> [RecordChange]? {
        guard case .put(let key, let value)? = changes.first, changes.count == 1, recordRandom.chance(50) else { return nil }
        var all: [String: Any] = merge
        all["n"] = payloadNumber
        return [.put(key, Self.payload(value, changing: all))]
    }

    /// A product the member created deleted, in the create's lane or in one of its own, now and
    /// then against the revision of the product's base (`revisionFrom`); `nil` when every
    /// product is deleted already.
    func newDelete() -> (WriteKind, Fate, OutboxRequest, [RecordChange])? {
        let candidates = products.suffix(8).filter { !deletedProducts.contains($0.product) }
        guard let chosen = recordRandom.pick(Array(candidates)) else { return nil }
        deletedProducts.insert(chosen.product)
        let fate: Fate = switch recordRandom.int(in: 0..<100) {
        case 0..<85: .normal
        case 85..<93: .reject
        default: .forbid
        }
        let entity = recordRandom.chance(50) ? expectations[chosen.id]?.request.entityID : nil
        payloadNumber += 1
        let entityJSON = entity.map { #","entity":"\#($0)""# } ?? ""
        let payload = Data(#"{"n":\#(payloadNumber),"product":"\#(chosen.product)","fate":"\#(fate.rawValue)"\#(entityJSON)}"#.utf8)
        let key = Self.productKey(chosen.product)
        var request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: "product.delete", method: "DELETE",
            endpoint: "/products/\(chosen.product)", payload: payload, entityID: entity, category: "Products",
            entityLabel: "Product \(chosen.product)", summary: "Deleted"
        )
        if recordRandom.chance(50) { request.revisionFrom = key }
        return (.delete, fate, request, [.delete(key)])
    }

    static func describe(_ changes: [RecordChange]) -> String {
        changes.map { change in
            switch change {
            case .put(let key, _): ", puts \(key.type) \(key.id)"
            case .delete(let key): ", deletes \(key.type) \(key.id)"
            }
        }.joined()
    }

    // MARK: The app's own record actions

    /// Between the member's actions, drawn from the records' stream: a draft written locally
    /// (durable, never sent), a write of the wrong kind refused with nothing written, or a
    /// rollback the member saw acknowledged. Answers whether it did anything.
    func recordActions() async throws -> Bool {
        switch recordRandom.int(in: 0..<100) {
        case 0..<5:
            var changes: [RecordChange] = []
            for number in [recordRandom.int(in: 1..<4), recordRandom.int(in: 1..<4)].prefix(recordRandom.chance(20) ? 2 : 1) {
                let key = Self.draftKey(number)
                guard !changes.contains(where: { $0.key == key }) else { continue }
                payloadNumber += 1
                changes.append(recordRandom.chance(20) ? .delete(key) : .put(key, Data(#"{"draft":\#(number),"n":\#(payloadNumber)}"#.utf8)))
            }
            try await outbox.writeLocal(changes)
            audit.wroteLocally(changes.map(\.key))
            trace.append("the app writes local drafts\(Self.describe(changes))")
            return true
        case 5..<7:
            try await refuseWrongKinds()
            return false
        case 7..<40:
            try syncAudit()
            let shown = audit.records.keys.sorted().compactMap { key -> (RecordKey, OperationID)? in
                guard key.type != SimulationScenario.draftType, let notice = audit.expected(key, isLocalOnly: false).rolledBack else { return nil }
                return (key, notice.id)
            }
            guard let (key, id) = recordRandom.pick(shown) else { return false }
            trace.append("the member saw that \(label(id)) was rolled back on \(key.id); the app acknowledges it")
            try await outbox.acknowledgeRollback(of: key)
            audit.personDid(.acknowledgeRollback, to: id)
            return true
        default:
            return false
        }
    }

    /// A local write of a synced type, and a write that sends a local-only type's change: each
    /// refused naming the change's type, nothing written.
    private func refuseWrongKinds() async throws {
        let before = try outbox.lastSeq()
        let item = Self.itemKey(ModelServer.itemNames[0])
        do {
            try await outbox.writeLocal([.put(item, Data(#"{"price":1}"#.utf8))])
            throw InvariantBroken("a local write of the synced type \(item.type) was accepted")
        } catch OutboxError.invalidRequest(let field, _) where field == "changes[0].key.type" {}
        let request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"fate":"normal"}"#.utf8), category: "Products", entityLabel: "Draft", summary: "New product"
        )
        do {
            _ = try await outbox.enqueue(request, changing: [.put(Self.draftKey(1), Data("{}".utf8))])
            throw InvariantBroken("a write sending a change of the local-only type \(SimulationScenario.draftType) was accepted")
        } catch OutboxError.invalidRequest(let field, _) where field == "changes[0].key.type" {}
        let after = try outbox.lastSeq()
        guard after == before else { throw InvariantBroken("writes refused for their records' kind wrote \(after.rawValue - before.rawValue) events") }
        trace.append("the app's writes of the wrong kind of record are refused, nothing written")
        recordTally["wrong-kind writes refused", default: 0] += 1
    }

    // MARK: After every step

    /// For every record whose view the new events may have changed (every record, when `all`):
    /// - its view (value, base, pending, confirmed, conflict, rolled back, held) is the one the
    ///   journal's events make, computed apart from the engine (``ExpectedRecord``);
    /// - every value it shows is one a write put, an answer brought or a local write wrote, and
    ///   its base one an answer brought;
    /// - no value of a rolled-back or held write shows, unless a live write put the same bytes;
    /// - the base never moves to an older revision (nor goes away), across crashes too;
    /// - the base at revision R is what the server held at R;
    /// - and each 412 ends visibly by the type's rule.
    /// - Parameters:
    ///   - all: every record, not only those the new events touched: after a crash, and with the
    ///     projections.
    ///   - queries: also read each synced type's query, page by page.
    func checkRecords(all: Bool, queries: Bool) throws {
        let touched = audit.takeTouchedRecords()
        let keys = all ? audit.records.keys.sorted() : touched.sorted()
        recordTally["record views compared", default: 0] += keys.count
        for key in keys {
            let isLocalOnly = SimulationScenario.recordTypes[key.type]?.isLocalOnly ?? false
            let record = try outbox.record(key)
            let shown = ExpectedRecord(engine: record, isLocalOnly: isLocalOnly)
            let expected = audit.expected(key, isLocalOnly: isLocalOnly)
            guard shown == expected else {
                let differences = shown.differences(from: expected, label: label).joined(separator: "; ")
                throw recordBroken(key, "the member's view is not what the journal's events make (the engine's, then the events'): \(differences)")
            }
            let trail = audit.records[key] ?? RecordTrail()
            // A pending write's change shows until it settles, whatever the pulls brought
            // beneath it: the latest of the record's writes in the member's order, when pending.
            if let latest = trail.writes.compactMap({ audit.rows[$0] }).max(by: { $0.recordOrder < $1.recordOrder }),
                [.queued, .syncing, .pendingApproval].contains(latest.status) || (latest.status == .conflicted && latest.heldOn == nil),
                let change = latest.change(of: key), shown.valueHash != change.valueHash
            {
                throw recordBroken(key, "\(label(latest.id)) is \(latest.status) and the member's view does not show its change")
            }
            if let hash = shown.valueHash, !trail.explained.contains(hash) {
                throw recordBroken(key, "shows a value no write put, no answer brought and no local write wrote")
            }
            if let hash = shown.base?.valueHash, !trail.fromServer.contains(hash) {
                throw recordBroken(key, "its base holds a value no answer of the server's brought")
            }
            if let hash = shown.valueHash, audit.rolledBackValues(of: key).subtracting(expected.shownHashes).contains(hash), hash != shown.base?.valueHash {
                throw recordBroken(key, "shows the value of a write that was rolled back (or held on one)")
            }
            // Within an epoch of the server's (the feed's), the base never goes back; a new
            // epoch's snapshot may take it to lower revisions, and a swap may drop a record the
            // snapshot no longer holds.
            let epoch = audit.cursors[key.business]?.epoch ?? 1
            if let highest = highestBase[key], highest.epoch == epoch {
                if shown.base == nil, trail.swappedOut {
                    highestBase[key] = nil
                } else if trail.vanishedUnplaced, shown.base?.revision == 0, shown.base?.valueHash == nil {
                    // A first pull's swap that could not place the old base in an epoch.
                } else {
                    guard let revision = shown.base?.revision, revision >= highest.revision else {
                        throw recordBroken(key, "its base moved back from revision \(highest.revision) to \(shown.base.map { "\($0.revision)" } ?? "none") within epoch \(epoch)")
                    }
                }
            }
            if let base = shown.base {
                highestBase[key] = (epoch, base.revision)
                if trail.vanished, base.valueHash == nil { continue }
                let held = server.record(type: key.type, id: key.id, revision: Int(base.revision))
                guard !held.isEmpty else {
                    throw recordBroken(key, "its base is at revision \(base.revision), which the server never held")
                }
                let serverHashes = held.map { json in json.flatMap { Self.reencoded($0) }.map { SHA256Digest(of: $0) } }
                guard serverHashes.contains(base.valueHash) else {
                    throw recordBroken(key, "its base at revision \(base.revision) is not what the server held at that revision")
                }
            }
        }
        if queries { try checkQueries() }
        try checkConflictsShown()
    }

    /// A query of each synced type, a few records a page, lists exactly the records whose view
    /// holds a value (pending creates in, records the member deleted out), in the order of their
    /// ids' bytes, each as the journal's events make it.
    private func checkQueries() throws {
        for type in [SimulationScenario.itemType, SimulationScenario.productType] {
            var listed: [LocalRecord] = []
            var query = RecordQuery(business: SimulationScenario.business, type: type, limit: 5)
            while true {
                let page = try outbox.records(query)
                listed += page.records
                guard let next = page.nextAfter, listed.count <= audit.records.count else { break }
                query.after = next
            }
            let expected = audit.records.keys.filter { key in
                key.type == type && audit.expected(key, isLocalOnly: false).valueHash != nil
            }.sorted { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) }
            guard listed.map(\.key) == expected else {
                throw InvariantBroken("a query of \(type) lists \(listed.map(\.key.id)); the records with a value are \(expected.map(\.id))")
            }
            for record in listed where ExpectedRecord(engine: record, isLocalOnly: false) != audit.expected(record.key, isLocalOnly: false) {
                throw recordBroken(record.key, "a query shows it otherwise than the journal's events make it")
            }
        }
    }

    /// Each 412 read since the last check ends as the type's rule says, visibly in the record:
    /// the member asked (the rule asks, or the rebases ran out): the record shows the conflict,
    /// the server's value at its revision beside the member's change; the server wins: the
    /// change is discarded and the record says so (until a later change or an acknowledgement),
    /// its base the server's; a rebase: the change is pending again, or was sent again.
    private func checkConflictsShown() throws {
        for (id, seq) in audit.takeConflicts() {
            guard let row = audit.rows[id], let seen = row.conflictSeen, seen.seq == seq, let key = row.revisionFrom ?? row.changes.first?.key else { continue }
            let record = try outbox.record(key)
            let expected = audit.expected(key, isLocalOnly: false)
            let rule = scenario.conflictRule(for: row.operationType)
            if row.status == .conflicted, row.latestSeq == seq {
                // A later write of the record conflicted too (its record deleted on the server
                // meanwhile): the record shows the latest conflict.
                if let shown = record?.sync.conflict, shown.operation != id, let later = audit.rows[shown.operation],
                    later.status == .conflicted, later.recordOrder > row.recordOrder
                {
                    recordTally["conflicts shown behind a later one", default: 0] += 1
                    continue
                }
                guard let conflict = record?.sync.conflict, conflict.operation == id, conflict.serverRevision == seen.revision,
                    conflict.serverValue.map({ SHA256Digest(of: $0) }) == expected.conflict?.valueHash,
                    record?.sync.pending.contains(where: { $0.operation == id && $0.status == .conflicted }) == true
                else {
                    throw recordBroken(key, "\(label(id)) met revision \(seen.revision ?? "?") on the server and the record does not show the conflict, the server's value beside the member's")
                }
                recordTally["conflicts shown to the member", default: 0] += 1
            } else if row.status == .discarded, row.discardedBy == .rule, row.latestSeq == seq.next {
                let conflictRevision = seen.revision.flatMap(UInt64.init) ?? .max
                let baseRevision = record?.server?.revision ?? 0
                // A 412 naming no current record (deleted) moves no base: the pull brings its tombstone.
                guard rule == .serverWins, baseRevision >= conflictRevision || seen.valueHash == nil,
                    expected.rolledBack?.id != id || record?.sync.rolledBack?.operation == id
                else {
                    throw recordBroken(key, "\(label(id)) lost to the server's version and the record does not say it was rolled back, with the server's value")
                }
                recordTally["server's version kept, shown rolled back", default: 0] += 1
            } else if row.rebasedAt == seq.next {
                let pendingAgain = record?.sync.pending.contains(where: { $0.operation == id }) == true
                guard case .rebase = rule, row.attempts > seen.attempts || pendingAgain else {
                    throw recordBroken(key, "\(label(id)) was rebased and is neither pending in the record nor sent again")
                }
                recordTally["rebased and sent again", default: 0] += 1
            }
        }
    }

    /// The server's JSON as the engine keeps a record's value: its members in key order
    /// (`JSONNode.sortedText()`, the rule `AnswerBody` keeps an answer's record by).
    static func reencoded(_ json: String) -> Data? {
        guard let node = try? JSONNode.read(Array(json.utf8)) else { return nil }
        return node.sortedText().map { Data($0) }
    }

    /// A broken invariant of record `key`, with its history as the engine tells it.
    func recordBroken(_ key: RecordKey, _ text: String) -> InvariantBroken {
        var lines = ["\(key): \(text)"]
        if let history = try? outbox.recordHistory(key) {
            lines.append("  verdict: \(history.verdict)")
            for entry in history.entries {
                let revision = entry.revision.map { " revision \($0)" } ?? ""
                let hash = entry.valueHash.map { " value \($0.hex.prefix(8))" } ?? ""
                lines.append("  seq \(entry.seq) \(entry.kind) \(entry.operation.map(label) ?? "-"): \(entry.what)\(revision)\(hash)")
            }
        }
        return InvariantBroken(lines.joined(separator: "\n"))
    }
}
