import Dispatch
import Foundation
import IdempotencyClaims
import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire
import Synchronization

/// What the simulated server does with a write when it first applies it, fixed when the write is
/// made and carried in its payload.
public enum Fate: String, Sendable, CaseIterable {
    /// 201 (200 for an edit): applied.
    case normal
    /// 202: applied and held for approval (creates only; the answer names no revision).
    case approval
    /// 422: refused as invalid; nothing applied.
    case reject
    /// 403: refused for the member; nothing applied.
    case forbid
}

/// The server half as the simulation runs it: ``IdempotencyClaims`` over an in-memory store,
/// counting the effects of every key, in order, and holding records that are edited against
/// their revision.
///
/// Creates (`POST`) are applied once per key. Edits (`PUT` or `PATCH /items/<name>`) carry the
/// revision they started from as `If-Match: "<revision>"`. The claim is checked first, so a replay
/// of an applied edit gets its stored answer; then the revision: a record that moved on is
/// answered 412 `{"code":"revision_conflict","server_revision":...,"current":...}`, and the claim
/// is released with the write (nothing applied, nothing stored), so the same key can be sent
/// again against the new revision.
///
/// Every write of a record is answered as `Docs/records.md` ("The wire") says: a create
/// (`POST /products`) or an edit with its `revision`, the `record` as the server now holds it,
/// its `type` and `id`; a delete (`DELETE /products/<id>`, `If-Match` optional) with
/// `deleted: true` and the tombstone's revision. The server keeps every revision of every record
/// it held, so the phone's base can be checked against what the server held at that revision.
final class ModelServer: Sendable {
    /// The server's records.
    struct Records: Sendable {
        /// Every write of the engine's applied, in the order applied.
        var applied: [Applied] = []
        /// The records edits change, by name.
        var items: [String: Item] = [:]
        /// The products creates made (and deletes removed), by id.
        var products: [String: Item] = [:]
        /// Every revision of every record the server held, by `type/id`: its JSON as answered,
        /// `nil` for a tombstone; a revision may have held more than one value across restores.
        var history: [String: [Int: [String?]]] = [:]
        /// Changes another device made to them, and products it deleted.
        var editsElsewhere = 0
        var deletesElsewhere = 0
        /// The change feed (`Docs/wire-feed.md`): the epoch (one more after each
        /// restore), the last change's number, the floor below which changes are forgotten, and
        /// every change of the epoch in order, each at `(epoch, n, 0)`.
        var epoch: UInt64 = 1
        var changeNumber: UInt64 = 0
        var floor: UInt64 = 0
        var changes: [ChangeRow] = []
        /// The backup a restore goes back to: the records and how many writes were applied then.
        var backup: Backup?
        /// Keys whose write a restore undid: synced on the phone, gone from the server.
        var lostInRestore: Set<String> = []
        /// Keys whose claim expired with the feed's changes: a resend applies the write again.
        var claimsExpired: Set<String> = []
        var restores = 0
        var tombstonesExpired = 0

        /// Keeps `item` as record `type/id` holds it at its revision, and writes its change row:
        /// returns the row's position, the answer's `Outbox-Visible-At`.
        @discardableResult
        mutating func keep(_ item: Item, type: String, id: String) -> FeedPosition {
            history["\(type)/\(id)", default: [:]][item.revision, default: []].append(item.deleted ? nil : item.json)
            changeNumber += 1
            let position = FeedPosition(epoch: epoch, major: changeNumber)
            changes.append(ChangeRow(position: position, change: item.change(type: type, id: id)))
            return position
        }

        /// The feed's end now.
        var fence: FeedPosition { FeedPosition(epoch: epoch, major: changeNumber) }
    }

    /// What a restore goes back to.
    struct Backup: Sendable {
        var items: [String: Item]
        var products: [String: Item]
        var appliedCount: Int
    }

    /// A record of the server's: its revision and its fields, or a tombstone.
    struct Item: Sendable, Equatable {
        var revision: Int
        var fields: [String: String]
        var deleted = false

        /// The record as the server answers it: its fields and revision, keys sorted.
        var json: String {
            let members = (fields.map { ($0.key, $0.value) } + [("revision", String(revision))])
                .sorted { $0.0 < $1.0 }
                .map { #""\#($0.0)":"\#($0.1)""# }
            return "{" + members.joined(separator: ",") + "}"
        }

        /// The record's change row as the feed carries it (its record's bytes as answered).
        func change(type: String, id: String) -> FeedChange {
            FeedChange(type: type, id: id, revision: UInt64(revision), record: deleted ? nil : Data(json.utf8))
        }
    }

    struct Applied: Sendable, Equatable {
        var key: String
        /// Its claim's scope: a restore forgets the claims of the writes it undoes, and an expiry
        /// those as old as the changes it forgets.
        var scope: ClaimScope
        /// Where the feed shows it (its change row, or the fence when it wrote none).
        var position: FeedPosition?
        /// Applied again after its claim expired with the feed's old changes.
        var afterClaimExpired = false
        var entity: String?
        var body: Data
        /// Applied by a first copy that held its claim finalizing while the engine moved on (it
        /// timed out and retried, gave up, or a person dropped or replaced the write).
        var byParkedCopy: Bool
    }

    /// The records edits change, each at revision 1 when the run starts (and known so to the
    /// member).
    static let itemNames = ["item-1", "item-2", "item-3"]

    private struct Refusal: Error {
        var status: Int
        var code: String
        var message: String
    }

    /// The record moved on since the revision the edit started from.
    private struct RevisionConflict: Error {
        var item: Item
    }

    /// A first copy holding its claim "finalizing": its write waits for ``finishParked()``.
    private struct Parked {
        var release: DispatchSemaphore
        var done: DispatchSemaphore
    }

    let store: InMemoryClaimStore<Records>
    let claims: IdempotencyClaims<InMemoryClaimStore<Records>>
    private let parked = Mutex<[Parked]>([])
    private let problemsFound = Mutex<[String]>([])
    private let approvalNumbers = Atomic<Int>(0)

    /// The most changes a feed or snapshot page holds.
    let maxLimit: Int

    init(clock: any ClaimClock, maxLimit: Int = FeedHandling.defaultLimits.maxLimit) {
        self.maxLimit = maxLimit
        var records = Records()
        for name in Self.itemNames {
            let item = Item(revision: 1, fields: ["price": "10"])
            records.items[name] = item
            records.keep(item, type: SimulationScenario.itemType, id: name)
        }
        store = InMemoryClaimStore(records: records)
        claims = IdempotencyClaims(store: store, clock: clock)
    }

    /// Every write applied, in order.
    var applied: [Applied] { store.records().applied }

    /// How many times each key's write was applied.
    var appliedCounts: [String: Int] {
        applied.reduce(into: [:]) { $0[$1.key, default: 0] += 1 }
    }

    var editsElsewhere: Int { store.records().editsElsewhere }
    var deletesElsewhere: Int { store.records().deletesElsewhere }

    /// What the server held of record `type/id` at `revision`, in every epoch: `nil` for a
    /// tombstone; empty when it never held that revision.
    func record(type: String, id: String, revision: Int) -> [String?] {
        store.records().history["\(type)/\(id)"]?[revision] ?? []
    }

    /// What the server found wrong in its own answers: a conflict that left its claim behind.
    var problems: [String] { problemsFound.withLock { $0 } }

    /// The products the server holds live, by id.
    var liveProducts: [String] {
        store.records().products.filter { !$0.value.deleted }.keys.sorted()
    }

    /// Another device deletes product `id` (or, with `item`, the record edits change): a
    /// tombstone at the next revision. Returns it; `nil` when the record is not live.
    func deleteElsewhere(product id: String, item: Bool = false) throws -> Int? {
        try store.transaction { txn in
            guard var record = item ? txn.records.items[id] : txn.records.products[id], !record.deleted else { return nil }
            record.revision += 1
            record.deleted = true
            record.fields = [:]
            if item { txn.records.items[id] = record } else { txn.records.products[id] = record }
            txn.records.keep(record, type: item ? SimulationScenario.itemType : SimulationScenario.productType, id: id)
            txn.records.deletesElsewhere += 1
            return record.revision
        }
    }

    /// Another device changes record `name`: its revision moves on. Returns the new revision.
    func editElsewhere(_ name: String, price: Int) throws -> Int {
        try store.transaction { txn in
            guard var item = txn.records.items[name] else { preconditionFailure("no record \(name)") }
            // One deleted is created again.
            if item.deleted { item = Item(revision: item.revision, fields: [:]) }
            item.revision += 1
            item.fields["price"] = String(price)
            item.fields["by"] = "another-device"
            txn.records.items[name] = item
            txn.records.keep(item, type: SimulationScenario.itemType, id: name)
            txn.records.editsElsewhere += 1
            return item.revision
        }
    }

    /// Answers one request, applying its write at most once per key.
    func handle(_ request: TransportRequest) throws -> TransportResponse {
        if let feed = handleFeed(request) { return feed }
        return try answer(request, park: false)
    }

    /// Takes the request's claim and leaves its write finalizing until ``finishParked()``; a
    /// second copy meanwhile is answered `idempotency_in_progress`. Returns once the claim is
    /// taken (or the request was answered without taking one).
    func handleSlowly(_ request: TransportRequest) {
        let taken = DispatchSemaphore(value: 0)
        let entry = Parked(release: DispatchSemaphore(value: 0), done: DispatchSemaphore(value: 0))
        let thread = Thread { [self] in
            _ = try? answer(request, park: true, taken: taken, release: entry.release)
            taken.signal()
            entry.done.signal()
        }
        parked.withLock { $0.append(entry) }
        thread.start()
        taken.wait()
    }

    /// Lets every finalizing write complete, and waits until each has.
    func finishParked() {
        let all = parked.withLock { parked in
            defer { parked.removeAll() }
            return parked
        }
        for entry in all {
            entry.release.signal()
            entry.done.wait()
        }
    }

    var hasParked: Bool { parked.withLock { !$0.isEmpty } }

    private func answer(
        _ request: TransportRequest,
        park: Bool,
        taken: DispatchSemaphore? = nil,
        release: DispatchSemaphore? = nil
    ) throws -> TransportResponse {
        let payload = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
        let fate = (payload["fate"] as? String).flatMap(Fate.init(rawValue:)) ?? .normal
        let entity = payload["entity"] as? String
        let itemPrefix = "/items/"
        let edited = request.endpoint.hasPrefix(itemPrefix) ? String(request.endpoint.dropFirst(itemPrefix.count)) : nil
        let productPrefix = "/products/"
        let deleted = request.method == "DELETE" && request.endpoint.hasPrefix(productPrefix)
            ? String(request.endpoint.dropFirst(productPrefix.count)) : nil
        let created = request.endpoint == "/products" ? payload["product"] as? String : nil
        let scope = ClaimScope(
            businessID: request.headers[OutboxHeader.businessID] ?? "default",
            operationType: request.endpoint
        )
        let key = request.headers[OutboxHeader.idempotencyKey]
        let answer: ClaimAnswer
        do {
            answer = try claims.handle(
                scope: scope, key: key, body: request.body,
                whileClaimed: {
                    guard park else { return }
                    taken?.signal()
                    release?.wait()
                },
                write: { txn in
                    // The claim is taken: the revision is checked only now, so a replay of an
                    // applied edit was answered from the claim above.
                    var item: Item?
                    if let edited {
                        guard let current = txn.records.items[edited] else {
                            throw Refusal(status: 404, code: "not_found", message: "No record \(edited).")
                        }
                        // An edit of a live record names the revision it started from; one of a
                        // deleted record creates it again, against the tombstone's revision or none.
                        let ifMatch = request.headers[OutboxHeader.ifMatch]
                        // One that names none while the record lives (the phone saw it deleted)
                        // meets the record as it is.
                        guard ifMatch == nil ? current.deleted : ifMatch == "\"\(current.revision)\"" else { throw RevisionConflict(item: current) }
                        item = current
                    }
                    // A delete names the revision it started from when the phone knew one.
                    if let deleted, let current = txn.records.products[deleted], !current.deleted,
                        let ifMatch = request.headers[OutboxHeader.ifMatch], ifMatch != "\"\(current.revision)\""
                    {
                        throw RevisionConflict(item: current)
                    }
                    switch fate {
                    case .reject:
                        throw Refusal(status: 422, code: ErrorCode.validationFailed, message: "The price must be positive.")
                    case .forbid:
                        throw Refusal(status: 403, code: "not_owner", message: "Only the owner may change this.")
                    case .normal, .approval:
                        break
                    }
                    txn.records.applied.append(Applied(key: key ?? "", scope: scope, entity: entity, body: request.body, byParkedCopy: park))
                    var headers = [ClaimResponse.Header(name: "Content-Type", value: "application/json")]
                    // A write that changes no record is visible wherever the feed ends now.
                    var visibleAt = txn.records.fence
                    let json: String
                    let status: Int
                    if let edited, var changed = item {
                        changed.revision += 1
                        // An edit against a tombstone's revision creates the record again.
                        changed.deleted = false
                        if request.method == "PUT" { changed.fields = [:] }
                        for field in ["price", "note"] {
                            if let value = payload[field] { changed.fields[field] = "\(value)" }
                        }
                        txn.records.items[edited] = changed
                        visibleAt = txn.records.keep(changed, type: SimulationScenario.itemType, id: edited)
                        status = 200
                        json = #"{"id":"\#(edited)","record":\#(changed.json),"revision":"\#(changed.revision)","type":"\#(SimulationScenario.itemType)"}"#
                        headers.append(ClaimResponse.Header(name: WireHeader.eTag, value: "\"\(changed.revision)\""))
                    } else if let deleted {
                        // A delete of a product the server never held leaves a tombstone too; one
                        // already deleted stays at its revision.
                        var gone = txn.records.products[deleted] ?? Item(revision: 0, fields: [:], deleted: true)
                        if !gone.deleted || gone.revision == 0 {
                            gone.revision += 1
                            gone.deleted = true
                            gone.fields = [:]
                            txn.records.products[deleted] = gone
                            visibleAt = txn.records.keep(gone, type: SimulationScenario.productType, id: deleted)
                        }
                        status = 200
                        json = #"{"deleted":true,"id":"\#(deleted)","revision":\#(gone.revision),"type":"\#(SimulationScenario.productType)"}"#
                    } else if let created {
                        // A product created again (a copy that landed late, a correction of one
                        // that did) keeps the record it has; one deleted comes back.
                        var product = txn.records.products[created] ?? Item(revision: 0, fields: [:], deleted: true)
                        if product.deleted {
                            product = Item(revision: product.revision + 1, fields: ["n": "\(payload["n"] ?? "")", "product": created])
                            txn.records.products[created] = product
                            visibleAt = txn.records.keep(product, type: SimulationScenario.productType, id: created)
                        }
                        if fate == .approval {
                            status = 202
                            json = #"{"request_id":"apr-\#(approvalNumbers.add(1, ordering: .relaxed).newValue)","status":"pending_approval"}"#
                        } else {
                            status = 201
                            json = #"{"id":"\#(created)","record":\#(product.json),"revision":\#(product.revision),"type":"\#(SimulationScenario.productType)"}"#
                        }
                    } else {
                        status = 201
                        json = #"{"revision":\#(txn.records.applied.count)}"#
                    }
                    // A write held for approval has no position (`Docs/wire-feed.md`, "The visible-at header").
                    if status != 202 { headers.append(ClaimResponse.Header(name: WireHeader.visibleAt, value: visibleAt.text)) }
                    txn.records.applied[txn.records.applied.count - 1].position = visibleAt
                    txn.records.applied[txn.records.applied.count - 1].afterClaimExpired = txn.records.claimsExpired.contains(key ?? "")
                    return ClaimResponse(status: status, headers: headers, body: Data(json.utf8))
                }
            )
        } catch let refusal as Refusal {
            return .error(refusal.status, code: refusal.code, message: refusal.message)
        } catch let conflict as RevisionConflict {
            // The write threw, so its claim went with it: the key may be sent again against the
            // new revision.
            if case .success(let parsed) = IdempotencyKey.parse(key), (try? claims.claim(scope: scope, key: parsed)) != nil {
                problemsFound.withLock { $0.append("the 412 under key \(key ?? "") left its claim behind") }
            }
            // A record deleted since has no current value: `null`.
            let current = conflict.item.deleted ? nil : Data(conflict.item.json.utf8)
            return TransportResponse(.revisionConflict(revision: UInt64(conflict.item.revision), current: current, message: "Changed elsewhere."))
        }
        return TransportResponse(answer.response)
    }
}
