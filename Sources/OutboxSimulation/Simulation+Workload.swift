// Kept in one file: the workload is one weighted choice of steps and the requests each builds;
// every step is short and they share the builders below.

import Foundation
import Outbox
import OutboxAudit

/// The scripted member, the app around them, another device and the world: one action per step,
/// drawn from the seed.
extension Simulation {
    func takeStep() async throws {
        // The app's own record actions come first, while the engine is at rest.
        if try await recordActions() { try await settle() }
        if try await pullActions() { try await settle() }
        let roll = random.int(in: 0..<100)
        switch roll {
        case 0..<36: try await write()
        case 36..<44:
            let reason = random.pick([WakeReason.appLaunch, .connectivityRegained, .foreground, .saveRetryable])!
            trace.append("wake(.\(reason))")
            outbox.wake(engine: reason)
        case 44..<56:
            let seconds = Double(random.int(in: 1..<400))
            trace.append("advance \(Int(seconds)) s")
            // The server's clock first: the device's fires the timer, whose requests must find
            // the server already there (a claim's lease run out or not).
            serverClock.advance(by: seconds)
            clock.advance(by: seconds)
        case 56..<59:
            trace.append("drain()")
            await outbox.drain()
        case 59..<61: try await backgroundTime()
        case 61..<66:
            trace.append(network.signal.flip(waking: outbox) ? "the signal returns" : "the signal drops")
        case 66..<69:
            if random.chance(50) {
                trace.append("the member signs out")
                session.signOut()
            } else {
                trace.append("the member signs in")
                session.signIn(account)
            }
        case 69..<72:
            trace.append("the session is refreshed")
            session.signIn(account)
            try await outbox.resumeSession()
        case 72..<75: try await retrySomething()
        case 75..<77: try await discardSomething()
        case 77..<80: try await decideSomething()
        case 80..<82:
            let hours = Double(random.int(in: 1..<9)) * (random.chance(50) ? 1 : -1)
            trace.append("the device clock jumps \(hours > 0 ? "+" : "")\(Int(hours)) h")
            clock.set(to: clock.now().addingTimeInterval(hours * 3600))
            // A timer the jump made due runs its pass first: the wake racing it would make one
            // pass or two as the threads fall, and a seed would no longer replay exactly.
            try await settle()
            // The app hears of the change (iOS posts significantTimeChangeNotification).
            outbox.wake(.clockChanged)
        case 82..<85:
            trace.append("the process is killed between steps")
            try await crashAndReopen()
            if let last = lastStableRequest, random.chance(40) {
                // The app saves again what it was saving when it died, under the same id.
                try await settle()
                try await saveAgain(last.request, changing: last.changes, id: last.id, because: "after the crash")
            }
        case 85..<87:
            let age = Double(random.int(in: 0..<3600))
            let result = try await outbox.compact(before: clock.now().addingTimeInterval(-age))
            compactions += 1
            compactedOperations += result.operations
            trace.append("compact rows settled over \(Int(age)) s ago: \(result.operations) operations, \(result.eventsRemoved) events")
        case 87..<90:
            trace.append("the server finishes what it was finalizing")
            server.finishParked()
        case 90..<95:
            let item = random.pick(ModelServer.itemNames)!
            let revision = try server.editElsewhere(item, price: random.int(in: 1..<100))
            trace.append("another device changes \(item) on the server (now revision \(revision))")
        case 95..<98: try await resolveSomething()
        default: try await reviseSomething()
        }
        try await settle()
    }

    // MARK: Background time

    /// The system gives the app a few seconds in the background, and sometimes takes them back
    /// while a request is out: whatever happens, the drain leaves no attempt without its outcome.
    private func backgroundTime() async throws {
        let budget = Double(random.int(in: 0..<120))
        let expires = random.chance(40)
        trace.append("background time of \(Int(budget)) s" + (expires ? ", taken back at the next request" : ""))
        let engine = outbox!
        if expires { network.expireAtNextRequest { engine.expire() } }
        let report = await outbox.drain(until: clock.now().addingTimeInterval(budget))
        let expired = expires && !network.expiryPending
        network.expireAtNextRequest(nil)
        trace.append("  \(report.ending.rawValue): \(report.attempts) attempts, \(report.cancelledAttempts) cancelled")
        backgroundDrains += 1
        if report.ending == .expired { backgroundExpiries += 1 }
        guard !outbox.isClosed else { return }
        // The invariant: an expired or spent drain leaves every attempt with an outcome.
        let inFlight = try outbox.metrics().queueDepth[.syncing] ?? 0
        if inFlight > 0 { throw InvariantBroken("a background drain (\(report.ending.rawValue)) left \(inFlight) attempts without an outcome") }
        if expired, report.ending != .expired { throw InvariantBroken("the time was taken back mid-request, yet the drain says \(report.ending.rawValue)") }
        if budget < OutboxConfiguration(account: account).attemptBudgetSeconds, report.attempts > 0 {
            throw InvariantBroken("\(report.attempts) attempts started with \(Int(budget)) s left, less than one request needs")
        }
    }

    // MARK: Writes

    /// The member saves a create, an edit, a delete or a stock movement, each with the change it
    /// makes to the member's records (a movement changes none); some under a stable id, saved a
    /// second time (a double tap).
    private func write() async throws {
        let inline = random.chance(25)
        let stable = random.chance(40)
        var (kind, fate, request, changes) = switch random.int(in: 0..<100) {
        case 0..<45: newCreate()
        case 45..<80: try newEdit()
        default:
            if products.isEmpty {
                newCreate()
            } else if recordRandom.chance(25), let delete = newDelete() {
                delete
            } else {
                newMovement()
            }
        }
        if stable { request.operationID = stableIDs.next() }
        let id = try await submit(request, changing: changes, inline: inline, fate: fate)
        register(id, kind: kind, fate: fate, request: request, changes: changes)
        if kind == .create, let product = Self.field("product", of: request.payload) { products.append((id, product)) }
        guard stable else { return }
        lastStableRequest = (request, changes, id)
        if random.chance(25) {
            try await settle()
            try await saveAgain(request, changing: changes, id: id, because: "a double tap")
        }
    }

    private func newCreate() -> (WriteKind, Fate, OutboxRequest, [RecordChange]) {
        let fate: Fate = switch random.int(in: 0..<100) {
        case 0..<70: .normal
        case 70..<80: .approval
        case 80..<90: .reject
        default: .forbid
        }
        let entity = random.chance(60) ? "shelf-\(random.int(in: 1..<5))" : nil
        payloadNumber += 1
        let entityJSON = entity.map { #","entity":"\#($0)""# } ?? ""
        let payload = Data(#"{"n":\#(payloadNumber),"product":"p-\#(payloadNumber)","fate":"\#(fate.rawValue)"\#(entityJSON)}"#.utf8)
        let request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: "product.create", endpoint: "/products", payload: payload,
            entityID: entity, category: "Products", entityLabel: "Product \(payloadNumber)", summary: "New product"
        )
        return (.create, fate, request, [.put(Self.productKey("p-\(payloadNumber)"), productValue())])
    }

    /// A change to one of the server's records, against the revision the member knows of it, or
    /// (when the phone has the record's base) against the base's revision as it is sent.
    private func newEdit() throws -> (WriteKind, Fate, OutboxRequest, [RecordChange]) {
        let item = random.pick(ModelServer.itemNames)!
        let draft = random.chance(45)
        let fate = editFate()
        payloadNumber += 1
        let price = random.int(in: 1..<100)
        let note = draft ? #","note":"draft \#(payloadNumber)""# : ""
        let payload = Data(#"{"n":\#(payloadNumber),"entity":"\#(item)","price":\#(price)\#(note),"fate":"\#(fate.rawValue)"}"#.utf8)
        var request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: draft ? SimulationScenario.draftEdit : SimulationScenario.priceEdit,
            method: draft ? "PUT" : "PATCH", endpoint: "/items/\(item)", payload: payload, entityID: item,
            category: "Items", entityLabel: "Item \(item)", summary: draft ? "Draft" : "New price",
            baseRevision: String(knownRevision(of: item))
        )
        let key = Self.itemKey(item)
        if recordRandom.chance(scenario.revisionFromPercent), try outbox.record(key)?.server != nil {
            request.baseRevision = nil
            request.revisionFrom = key
        }
        return (.edit, fate, request, [.put(key, itemValue(item, price: price, draft: draft))])
    }

    /// A stock movement of one or two products created earlier (perhaps still offline): sent
    /// only once each create (or what replaced it) is synced.
    private func newMovement() -> (WriteKind, Fate, OutboxRequest, [RecordChange]) {
        let recent = Array(products.suffix(6))
        var dependencies = [random.pick(recent)!]
        if recent.count > 1, random.chance(20), let second = random.pick(recent), second.id != dependencies[0].id {
            dependencies.append(second)
        }
        let fate = editFate()
        payloadNumber += 1
        let payload = Data(#"{"n":\#(payloadNumber),"movement":"m-\#(payloadNumber)","product":"\#(dependencies[0].product)","qty":\#(random.int(in: 1..<50)),"fate":"\#(fate.rawValue)"}"#.utf8)
        let request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: "stock.move", endpoint: "/stock-movements", payload: payload,
            category: "Stock", entityLabel: "Stock of \(dependencies[0].product)", summary: "Stock received",
            dependsOn: dependencies.map(\.id)
        )
        return (.movement, fate, request, [])
    }

    private func editFate() -> Fate {
        switch random.int(in: 0..<100) {
        case 0..<85: .normal
        case 85..<95: .reject
        default: .forbid
        }
    }

    /// The revision the member knows of `item`: learned from the edits the server applied and
    /// from conflicts; 1, as every record starts, before anything was learned.
    func knownRevision(of item: String) -> Int {
        max(audit.learnedRevisions[item] ?? 1, revisionsFromConflicts[item] ?? 1)
    }

    /// Enqueues or saves `request` with its record changes; answers the operation's id.
    private func submit(_ request: OutboxRequest, changing changes: [RecordChange], inline: Bool, fate: Fate) async throws -> OperationID {
        let number = payloadNumber
        let what = "#\(order.count + 1) n\(number) \(request.operationType) (\(fate)\(request.entityID.map { ", \($0)" } ?? "")"
            + "\(request.baseRevision.map { ", revision \($0)" } ?? "")\(request.revisionFrom.map { ", If-Match from \($0.id)'s base" } ?? "")"
            + "\(request.dependsOn.isEmpty ? "" : ", after \(request.dependsOn.map(label).joined(separator: " "))")"
            + "\(request.operationID == nil ? "" : ", stable id")\(Self.describe(changes)))"
        guard inline else {
            let id = try await outbox.enqueue(request, changing: changes)
            if let stable = request.operationID, id != stable {
                throw InvariantBroken("enqueue answered \(id) for a write the app gave the id \(stable)")
            }
            trace.append("enqueue \(what)")
            return id
        }
        let result = try await outbox.save(request, changing: changes)
        let id: OperationID
        switch result {
        case .queued(let queued), .blocked(let queued, _, _), .conflicted(let queued, _), .failed(let queued, _, _): id = queued
        case .synced, .pendingApproval, .rejected: id = try request.operationID ?? resolveID(payload: request.payload)
        case .alreadySaved: throw InvariantBroken("a write under a new id was answered as already saved")
        }
        audit.savedInline(id)
        trace.append("save \(what) -> \(result.traceText)")
        return id
    }

    /// Saves `request` again under its stable id: the same bytes are the same operation, nothing
    /// written; other bytes are refused.
    private func saveAgain(_ request: OutboxRequest, changing changes: [RecordChange], id: OperationID, because reason: String) async throws {
        doubleTaps += 1
        let before = try outbox.lastSeq()
        if random.chance(15) {
            var other = request
            other.payload = Self.payload(request.payload, changing: ["tapped": "again"])
            trace.append("\(label(id)) saved again \(reason), under its id with other bytes")
            do {
                _ = try await outbox.enqueue(other, changing: changes)
                throw InvariantBroken("an id saved again with other bytes was accepted")
            } catch OutboxError.operationIDReused(let reused) where reused == id {}
        } else if random.chance(50) {
            let result = try await outbox.save(request, changing: changes)
            trace.append("\(label(id)) saved again \(reason) -> \(result.traceText)")
            guard case .alreadySaved(let snapshot) = result, snapshot.id == id else {
                throw InvariantBroken("\(label(id)) saved again under its id was answered \(result.traceText)")
            }
        } else {
            let again = try await outbox.enqueue(request, changing: changes)
            trace.append("\(label(id)) enqueued again \(reason)")
            guard again == id else { throw InvariantBroken("\(label(id)) enqueued again under its id made \(again)") }
        }
        let after = try outbox.lastSeq()
        guard after == before else { throw InvariantBroken("\(label(id)) saved again \(reason) wrote \(after.rawValue - before.rawValue) events") }
    }

    private func register(_ id: OperationID, kind: WriteKind, fate: Fate, request: OutboxRequest, changes: [RecordChange]) {
        expectations[id] = Expectation(kind: kind, fate: fate, request: request, enqueuedAt: order.count, changes: changes)
        order.append(id)
        audit.labels[id] = label(id)
    }

    /// The id of the operation just saved with `payload`: the newest one holding it.
    private func resolveID(payload: Data) throws -> OperationID {
        let events = try outbox.events(from: audit.lastSeq.next, limit: .max)
        for event in events.reversed() {
            if case .enqueued(let enqueued) = event.body, enqueued.request.payload == payload, let id = event.operationID {
                return id
            }
        }
        throw InvariantBroken("a save that returned has no enqueued event")
    }

    // MARK: What a person decides

    /// The member's rows in `statuses`, as the journal's history shows them now (the audit
    /// checks after every step that it agrees with the engine's own status).
    func rows(_ statuses: Set<OutboxStatus>) throws -> [OperationID] {
        try syncAudit()
        return order.filter { id in audit.rows[id].map { statuses.contains($0.status) } ?? false }
    }

    private func retrySomething() async throws {
        if random.chance(20), let id = random.pick(try rows([.conflicted])) {
            trace.append("the member taps Retry on conflicted \(label(id))")
            var refused = false
            do { try await outbox.retry(id) } catch OutboxError.illegalTransition { refused = true }
            guard refused else { throw InvariantBroken("retry was accepted for conflicted \(label(id)): it would resend without a decision") }
            return
        }
        guard let id = random.pick(try rows([.failed, .blocked])) else { return }
        trace.append("the member retries \(label(id))")
        try await outbox.retry(id)
        audit.personDid(.retry, to: id)
    }

    private func discardSomething() async throws {
        guard let id = random.pick(try rows([.queued, .failed, .blocked, .conflicted])) else { return }
        trace.append("the member discards \(label(id))")
        try await outbox.discard(id)
        audit.personDid(.discard, to: id)
    }

    private func decideSomething() async throws {
        guard let id = random.pick(try rows([.pendingApproval])) else { return }
        let approved = random.chance(60)
        trace.append("the owner \(approved ? "approves" : "rejects") \(label(id))")
        try await outbox.recordApprovalDecision(id, approved: approved)
        audit.personDid(.approvalDecision, to: id)
    }

    /// The member opens a "Changed elsewhere" card and keeps the server's version, their own
    /// merged with it, or corrects it.
    private func resolveSomething() async throws {
        guard let id = random.pick(try rows([.conflicted])) else { return }
        try await resolve(id)
    }

    /// The member decides on conflicted row `id`.
    func resolve(_ id: OperationID) async throws {
        guard let old = expectations[id] else { return }
        if audit.rows[id]?.heldOn != nil {
            try await resolveHeld(id, old)
            return
        }
        guard let snapshot = try outbox.operation(id), let conflict = snapshot.conflict, let revision = conflict.serverRevision else {
            throw InvariantBroken("conflicted \(label(id)) shows no server revision")
        }
        // Deleted on the server: a pulled tombstone, or a 412 whose record is gone (`current` null).
        if snapshot.lastErrorCode == ErrorCode.deletedOnServer || conflict.serverCurrent == nil {
            try await resolveDeleted(id, old, revision: revision)
            return
        }
        // The server's record as it answered: kept (sealed at rest in an encrypted journal) and
        // readable with the key.
        guard let current = conflict.serverCurrent, Self.field("revision", of: current) == revision else {
            throw InvariantBroken("conflicted \(label(id)) does not show the server's record at revision \(revision)")
        }
        if let item = old.request.entityID, let number = Int(revision) {
            revisionsFromConflicts[item] = max(revisionsFromConflicts[item] ?? 0, number)
        }
        switch random.int(in: 0..<100) {
        case 0..<35:
            trace.append("the member keeps the server's version of \(label(id))")
            try await outbox.resolveConflict(id, keeping: .theirs)
            audit.personDid(.keepTheirs, to: id)
        case 35..<75:
            try await keepMine(id, old, onto: revision, merging: ["merged_with": revision])
        default:
            try await revise(id, old)
        }
    }

    /// The member keeps their version of conflicted row `id`, against the server's `revision`
    /// (one that takes its revision from the record's base is sent against the base), its
    /// payload and (now and then) its record's value merged with `merge`.
    func keepMine(_ id: OperationID, _ old: Expectation, onto revision: String, merging merge: [String: String]) async throws {
        let payload = corrected(old.request.payload, merge)
        let changing = changedValues(old.changes, merging: merge)
        guard let new = try await outbox.resolveConflict(id, keeping: .mine(payload: payload, baseRevision: revision), changing: changing) else {
            throw InvariantBroken("keeping the member's version of \(label(id)) made no operation")
        }
        audit.personDid(.keepMine, to: id)
        // The worker sends the new row meanwhile (and the process may die doing it).
        try await settle()
        let sentAgainst = old.request.revisionFrom == nil ? revision : nil
        guard let saved = try outbox.operation(new)?.request, saved.payload == payload, saved.baseRevision == sentAgainst else {
            throw InvariantBroken("keeping the member's version of \(label(id)) did not save the merge against revision \(revision)")
        }
        register(new, kind: old.kind, fate: .normal, request: saved, changes: changing ?? old.changes)
        trace.append("the member keeps their version of \(label(id)), merged onto revision \(revision)\(changing == nil ? "" : ", its record's value merged too"): \(label(new))")
    }

    /// The member decides on a row held because it was made on a rolled-back write: keeps the
    /// server's version, keeps theirs against the revision the record's base (or the member)
    /// knows, or corrects it.
    private func resolveHeld(_ id: OperationID, _ old: Expectation) async throws {
        let roll = recordRandom.int(in: 0..<100)
        if roll < 35 {
            trace.append("the member drops \(label(id)), held on a rolled-back write")
            try await outbox.resolveConflict(id, keeping: .theirs)
            audit.personDid(.keepTheirs, to: id)
        } else if roll < 70, old.kind == .edit, let item = old.request.entityID {
            let base = try outbox.record(Self.itemKey(item))?.server?.revision
            let revision = String(max(UInt64(knownRevision(of: item)), base ?? 0))
            try await keepMine(id, old, onto: revision, merging: ["kept_after_rollback": "yes"])
        } else {
            try await revise(id, old)
        }
    }

    /// The member corrects a failed or blocked row.
    private func reviseSomething() async throws {
        guard let id = random.pick(try rows([.failed, .blocked])), let old = expectations[id] else { return }
        try await revise(id, old)
    }

    private func revise(_ id: OperationID, _ old: Expectation) async throws {
        let payload = corrected(old.request.payload, [:])
        let changing = changedValues(old.changes, merging: ["corrected": "yes"])
        let new = try await outbox.revise(id, payload: payload, changing: changing)
        audit.personDid(.revise, to: id)
        // The worker sends the new row meanwhile (and the process may die doing it).
        try await settle()
        guard let saved = try outbox.operation(new)?.request, saved.payload == payload else {
            throw InvariantBroken("the correction of \(label(id)) is not in the journal as made")
        }
        register(new, kind: old.kind, fate: .normal, request: saved, changes: changing ?? old.changes)
        trace.append("the member corrects \(label(id)): \(label(new))\(saved.baseRevision.map { " against revision \($0)" } ?? "")\(changing == nil ? "" : ", its record's value corrected too")")
    }

    /// `payload` corrected: a new number, the server's fate normal, `changes` applied.
    private func corrected(_ payload: Data, _ changes: [String: String]) -> Data {
        payloadNumber += 1
        var all: [String: Any] = changes
        all["n"] = payloadNumber
        all["fate"] = Fate.normal.rawValue
        return Self.payload(payload, changing: all)
    }

    /// `payload` with `changes` made, its keys sorted.
    static func payload(_ payload: Data, changing changes: [String: Any]) -> Data {
        var object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any] ?? [:]
        for (key, value) in changes { object[key] = value }
        // Built from JSON values just read, strings and integers: serialization cannot fail.
        return try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// A string field of a JSON object.
    static func field(_ name: String, of json: Data) -> String? {
        ((try? JSONSerialization.jsonObject(with: json)) as? [String: Any])?[name] as? String
    }
}

extension Outbox.SaveResult {
    var traceText: String {
        switch self {
        case .synced: "synced"
        case .pendingApproval: "sent for approval"
        case .queued: "queued"
        case .rejected(let code, _): "rejected (\(code))"
        case .blocked(_, let code, _): "blocked (\(code))"
        case .conflicted(_, let revision): "conflicted (server at \(revision ?? "?"))"
        case .failed(_, let code, _): "failed (\(code))"
        case .alreadySaved(let snapshot): "already saved (\(snapshot.status))"
        }
    }
}
