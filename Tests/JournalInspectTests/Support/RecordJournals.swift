import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxTesting

/// A journal written through the engine, holding one record of every sync state: each product
/// written with `enqueue(_:changing:)` and answered by a scripted server, one after another.
struct EverySyncStateJournal: Sendable {
    static let business = "pharmacy-7"

    static func key(_ id: String, type: String = "product") -> RecordKey {
        RecordKey(business: business, type: type, id: id)
    }

    /// A product's value as the member typed it.
    static func value(_ name: String, price: Double) -> Data {
        Data(#"{"name":"\#(name)","price":\#(price)}"#.utf8)
    }

    let directory: URL
    /// Synced: the server's answer (revision 3, its own record) is the base; the view is it.
    let synced: RecordKey
    let syncedWrite: OperationID
    /// The server's record, as the engine stores it (members in key order).
    let syncedServerValue: Data
    /// Synced at revision 2 (the written value), then an edit saved offline: pending over the base.
    let pending: RecordKey
    let pendingWrite: OperationID
    let pendingValue: Data
    let pendingBaseValue: Data
    /// The server applied it (201, no revision): the member's change stays, confirmed.
    let confirmed: RecordKey
    let confirmedWrite: OperationID
    /// A 412 with the server's revision 5 and its value: the member's change beside it.
    let conflict: RecordKey
    let conflictWrite: OperationID
    let conflictServerValue: Data
    /// Synced at revision 1, then a new price refused (422) and a later edit held on it.
    let rolledBack: RecordKey
    let refusedWrite: OperationID
    let heldWrite: OperationID
    let rolledBackBaseValue: Data
    /// A draft (a local-only type), written on the phone.
    let localOnly: RecordKey
    let localValue: Data
    /// Synced at revision 1, then deleted offline: a pending delete.
    let deleted: RecordKey
    let deleteWrite: OperationID

    /// The products, in the order of their ids' bytes, that a page lists (the deleted one left out).
    var listedProducts: [RecordKey] { [confirmed, conflict, pending, rolledBack, synced] }

    static func write(into directory: URL) async throws -> EverySyncStateJournal {
        let clock = ManualClock(now: fixtureStart)
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        var configuration = OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash)
        configuration.recordTypes = ["draft": .localOnly]
        let ids = SeededIDs(seed: 25)
        configuration.operationIDSource = { ids.next() }
        let outbox = try Outbox(directory: directory, transport: transport, configuration: configuration)
        defer { outbox.close() }

        func edit(_ key: RecordKey, _ change: RecordChange, answer: ScriptedTransport.Step?) async throws -> OperationID {
            if let answer { transport.script(answer) }
            let request = OutboxRequest(
                businessID: business, operationType: "product.update", method: "PUT", endpoint: "/products/\(key.id)",
                payload: change.value ?? Data("{}".utf8), category: "Products", entityLabel: "Product \(key.id)", summary: "Changed")
            let id = try await outbox.enqueue(request, changing: [change])
            clock.advance(by: 60)
            return id
        }
        func json(_ status: Int, _ body: String) -> ScriptedTransport.Step { .respond(.json(status, body)) }

        let synced = key("p-synced")
        let syncedWrite = try await edit(synced, .put(synced, value("Gauze 10 cm", price: 3.5)),
                                         answer: json(200, #"{"revision":3,"record":{"price":3.5,"name":"Gauze 10 cm","stock":40}}"#))
        await outbox.drain()

        let pending = key("p-pending")
        let pendingBase = value("Antiseptic 500 ml", price: 14)
        _ = try await edit(pending, .put(pending, pendingBase), answer: json(200, #"{"revision":2}"#))
        await outbox.drain()

        let confirmed = key("p-confirmed")
        let confirmedWrite = try await edit(confirmed, .put(confirmed, value("Plasters", price: 2)), answer: json(201, "{}"))
        await outbox.drain()

        let conflict = key("p-conflict")
        let conflictWrite = try await edit(conflict, .put(conflict, value("Cotton wool", price: 4)), answer: json(
            412, #"{"code":"revision_conflict","message":"Changed elsewhere","server_revision":"5","current":{"price":4.2}}"#))
        await outbox.drain()

        let rolledBack = key("p-refused")
        let refusedBase = value("Vitamin C", price: 6)
        _ = try await edit(rolledBack, .put(rolledBack, refusedBase), answer: json(200, #"{"revision":1}"#))
        await outbox.drain()
        let refusedWrite = try await edit(rolledBack, .put(rolledBack, value("Vitamin C", price: -6)), answer: json(
            422, #"{"code":"validation_failed","message":"Price must be positive"}"#))
        let heldWrite = try await edit(rolledBack, .put(rolledBack, value("Vitamin C 1000 mg", price: -6)), answer: nil)
        await outbox.drain()

        let deleted = key("p-deleted")
        _ = try await edit(deleted, .put(deleted, value("Old stock", price: 1)), answer: json(200, #"{"revision":1}"#))
        await outbox.drain()

        let localOnly = key("d-1", type: "draft")
        let localValue = Data(#"{"note":"order more gauze"}"#.utf8)
        try await outbox.writeLocal([.put(localOnly, localValue)])

        // Offline from here on: these wait.
        let pendingValue = value("Antiseptic 500 ml", price: 13.5)
        let pendingWrite = try await edit(pending, .put(pending, pendingValue), answer: nil)
        let deleteWrite = try await edit(deleted, .delete(deleted), answer: nil)
        await outbox.drain()

        return EverySyncStateJournal(
            directory: directory, synced: synced, syncedWrite: syncedWrite,
            syncedServerValue: Data(#"{"name":"Gauze 10 cm","price":3.5,"stock":40}"#.utf8),
            pending: pending, pendingWrite: pendingWrite, pendingValue: pendingValue, pendingBaseValue: pendingBase,
            confirmed: confirmed, confirmedWrite: confirmedWrite,
            conflict: conflict, conflictWrite: conflictWrite, conflictServerValue: Data(#"{"price":4.2}"#.utf8),
            rolledBack: rolledBack, refusedWrite: refusedWrite, heldWrite: heldWrite, rolledBackBaseValue: refusedBase,
            localOnly: localOnly, localValue: localValue, deleted: deleted, deleteWrite: deleteWrite)
    }
}
