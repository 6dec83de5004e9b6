import Foundation
import JournalInspect
import struct Outbox.Attachment
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxTesting
import Testing

/// The journals of the support runbook's tickets (Docs/support-runbook.md), written through the
/// engine's public API with a manual clock, named operation ids (seeded by the ticket's number)
/// and a scripted or in-memory server: the same bytes on every run, so the runbook can quote the
/// tool's output exactly.
enum Ticket: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case antiseptic = "ticket-4411"
    case twice = "ticket-4502"
    case stuck = "ticket-4517"
    case compacted = "ticket-4620"
    case search = "ticket-4633"
    case timeZone = "ticket-4650"
    case clockBack = "ticket-4702"
    case crash = "ticket-4718"
    case heldBehind = "ticket-4731"
    case unavailable = "ticket-4744"
    case words = "ticket-4760"
    case oldPrice = "ticket-4788"
    case photo = "ticket-4801"

    var testDescription: String { rawValue }

    /// Writes the ticket's journal into `directory` and closes the engine.
    func write(into directory: URL) async throws {
        let number = UInt64(rawValue.dropFirst("ticket-".count)) ?? 0
        switch self {
        case .antiseptic: try await Self.antiseptic(directory, number)
        case .twice: try await Self.twice(directory, number)
        case .stuck: try await Self.stuck(directory, number)
        case .compacted: try await Self.compacted(directory, number)
        case .search: try await Self.search(directory, number)
        case .timeZone: try await Self.timeZone(directory, number)
        case .clockBack: try await Self.clockBack(directory, number)
        case .crash: try await Self.crash(directory, number)
        case .heldBehind: try await Self.heldBehind(directory, number)
        case .unavailable: try await Self.unavailable(directory, number)
        case .words: try await Self.words(directory, number)
        case .oldPrice: try await Self.oldPrice(directory, number)
        case .photo: try await Self.photo(directory, number)
        }
    }

    // MARK: The tickets

    /// Tuesday: the gauze synced; the antiseptic, saved offline, met a 422 once the signal came back.
    private static func antiseptic(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-12T09:12:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "folake")
        _ = try await outbox.enqueue(item("Gauze 10 cm", entity: "gauze-10"))
        await outbox.settle()
        clock.advance(by: 40)
        server.setOnline(false)
        _ = try await outbox.enqueue(item("Antiseptic 500 ml", price: -12.5, entity: "antiseptic-500"))
        await outbox.settle()
        clock.advance(by: 2)
        await outbox.settle()
        clock.advance(by: 4)
        await outbox.settle()
        server.setOnline(true)
        server.inject(.respond(.json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#)))
        clock.advance(by: 8)
        await outbox.settle()
        outbox.close()
    }

    /// One write sent twice under its key (its first answer lost), and a second write saved 97 s later.
    private static func twice(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-13T14:12:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "chidi")
        server.inject(.applyThenDropResponse)
        _ = try await outbox.enqueue(item("Antiseptic 500 ml", entity: "antiseptic-500"))
        await outbox.settle()
        clock.advance(by: 2)
        await outbox.settle()
        clock.advance(by: 95)
        _ = try await outbox.save(item("Antiseptic 500 ml", entity: "antiseptic-500-b"))
        await outbox.settle()
        outbox.close()
    }

    /// A 401 paused the worker; two more writes waited behind it, one in the same lane; the app
    /// was opened again, updated, a day later.
    private static func stuck(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-11T16:12:00Z"))
        let server = InMemoryServer()
        var outbox = try await open(directory, number, clock: clock, transport: server, account: "amaka", appVersion: "3.7.2")
        clock.advance(by: 3600)
        server.inject(.respond(.json(401, #"{"code":"token_expired","message":"Your session expired. Sign in again."}"#)))
        _ = try await outbox.enqueue(item("Vitamin C 1000 mg", entity: "shelf-4"))
        await outbox.settle()
        clock.advance(by: 600)
        _ = try await outbox.enqueue(item("Zinc tablets", entity: "shelf-4"))
        _ = try await outbox.enqueue(item("Hand cream", entity: "shelf-9"))
        await outbox.settle()
        outbox.close()
        clock.advance(by: 86_400)
        outbox = try await open(directory, number, clock: clock, transport: server, account: "amaka", appVersion: "3.8.0")
        await outbox.settle()
        outbox.close()
    }

    /// December's writes, synced and then compacted; January's since.
    private static func compacted(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2026-12-04T15:20:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "ngozi")
        server.setOnline(false)
        _ = try await outbox.enqueue(item("Gauze 10 cm", entity: "gauze-10"))
        await outbox.settle()
        server.setOnline(true)
        clock.advance(by: 2)
        await outbox.settle()
        clock.advance(by: 3 * 86_400)
        _ = try await outbox.enqueue(item("Cotton wool 100 g", entity: "cotton-100"))
        await outbox.settle()
        clock.advance(by: moment("2027-01-02T08:00:00Z").timeIntervalSince(clock.now()))
        _ = try await outbox.compact(before: moment("2027-01-01T00:00:00Z"))
        clock.advance(by: 7 * 86_400)
        _ = try await outbox.enqueue(item("Gauze 5 cm", entity: "gauze-5"))
        await outbox.settle()
        outbox.close()
    }

    /// "Crème hydratante", refused by a 403; and a "Crème de jour" that synced.
    private static func search(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-14T10:02:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "aminata")
        _ = try await outbox.enqueue(item("Crème de jour", category: "Cosmetics", entity: "creme-jour"))
        await outbox.settle()
        clock.advance(by: 1800)
        _ = try await outbox.enqueue(item("Paracetamol 500 mg", entity: "paracetamol-500"))
        await outbox.settle()
        clock.advance(by: 300)
        server.inject(.respond(.json(403, #"{"code":"forbidden","message":"Only the owner may add cosmetics"}"#)))
        _ = try await outbox.enqueue(item("Crème hydratante 50 ml", category: "Cosmetics", entity: "creme-hydratante"))
        await outbox.settle()
        outbox.close()
    }

    /// A member in São Paulo (UTC-03:00) saves an order at 09:15 her time; the server holds it
    /// for approval.
    private static func timeZone(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-15T11:40:00Z"))
        clock.setTimeZone(try zone("America/Sao_Paulo"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "lucia")
        _ = try await outbox.enqueue(item("Order 1187: 40 boxes of gloves", type: "order.create", category: "Orders",
                                          entity: "order-1187", endpoint: "/orders"))
        await outbox.settle()
        clock.advance(by: 35 * 60)
        server.inject(.holdForApproval(requestID: "apr-5521"))
        _ = try await outbox.enqueue(item("Order 1188: 12 thermometers", type: "order.create", category: "Orders",
                                          entity: "order-1188", endpoint: "/orders"))
        await outbox.settle()
        clock.advance(by: 2 * 3600)
        _ = try await outbox.enqueue(item("Order 1189: 6 scales", type: "order.create", category: "Orders",
                                          entity: "order-1189", endpoint: "/orders"))
        await outbox.settle()
        outbox.close()
    }

    /// The phone's clock ran 328 days ahead; the server was down for the ibuprofen's first
    /// attempt, and the network's time service set the clock right before its second.
    private static func clockBack(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-15T08:00:00Z"))
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":"1"}"#)))
        let outbox = try await open(directory, number, clock: clock, transport: transport, account: "tunde")
        _ = try await outbox.enqueue(item("Plasters, 20 pack", entity: "plasters-20"))
        await outbox.settle()
        clock.advance(by: 3 * 3600)
        transport.script(.respond(.json(503, #"{"code":"server_unavailable","message":"Try again in a moment"}"#)))
        _ = try await outbox.enqueue(item("Ibuprofen 400 mg", entity: "ibuprofen-400"))
        await outbox.settle()
        // The time service sets the clock back; the retry due "328 days from now" is due one
        // retry cap after the worker first sees it so.
        clock.set(to: clock.now().addingTimeInterval(-328 * 86_400))
        await outbox.drain()
        clock.advance(by: OperationTypePolicy.RetryPolicy.standard.maxDelaySeconds)
        await outbox.settle()
        clock.advance(by: 1200)
        _ = try await outbox.enqueue(item("Cough syrup", entity: "cough-syrup"))
        await outbox.settle()
        outbox.close()
    }

    /// The phone died while the stock count was on its way (the server applied it); it was
    /// switched on again three hours later.
    private static func crash(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-15T17:45:00Z"))
        let server = InMemoryServer()
        // The battery dies before the answer is recorded; the phone is switched on three hours later.
        let dying = DyingTransport(server: server) { clock.reboot(downtime: 3 * 3600) }
        let first = try await open(directory, number, clock: clock, transport: dying, account: "emeka")
        dying.attach(first)
        _ = try await first.enqueue(item("Stock count, shelf 3", type: "stock.count", category: "Stock", summary: "Shelf counted",
                                         entity: "shelf-3", endpoint: "/stock/counts"))
        await dying.died()
        let reopened = try await open(directory, number, clock: clock, transport: server, account: "emeka")
        reopened.close()
    }

    /// The gauze was refused (422); its price change, to the same product, waits behind it.
    private static func heldBehind(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-14T16:05:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "bisi")
        server.inject(.respond(.json(422, #"{"code":"validation_failed","message":"The barcode must have 13 digits"}"#)))
        _ = try await outbox.enqueue(item("Gauze 10 cm", entity: "gauze-10"))
        await outbox.settle()
        clock.advance(by: 3 * 3600)
        _ = try await outbox.enqueue(item("Gauze 10 cm", price: 3.2, type: "product.update", method: "PATCH", summary: "New price",
                                          entity: "gauze-10", endpoint: "/products/gauze-10"))
        await outbox.settle()
        outbox.close()
    }

    /// The server answered 503 to every one of 51 attempts over two days; then the app was closed.
    private static func unavailable(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-11T07:30:00Z"))
        let transport = ScriptedTransport(otherwise: .respond(.json(
            503, #"{"code":"server_unavailable","message":"Planned maintenance: back soon"}"#)))
        let outbox = try await open(directory, number, clock: clock, transport: transport, account: "yemi",
                              retryPolicy: OperationTypePolicy.RetryPolicy(initialDelaySeconds: 2, multiplier: 2, maxDelaySeconds: 3600))
        _ = try await outbox.enqueue(item("Insulin pens, 5 pack", entity: "insulin-5"))
        await outbox.settle()
        for _ in 2...51 {
            guard let next = try outbox.operations(matching: OperationQuery(statuses: [.queued])).operations.first?.nextAttemptAt else { break }
            clock.advance(by: max(0, next.timeIntervalSince(clock.now())))
            await outbox.settle()
        }
        outbox.close()
    }

    /// Three writes that will not arrive: one discarded by the member after an offline attempt,
    /// one the approver rejected with a note, one the server already had (409).
    private static func words(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-13T11:00:00Z"))
        let server = InMemoryServer()
        let outbox = try await open(directory, number, clock: clock, transport: server, account: "kemi")
        server.setOnline(false)
        let plasters = try await outbox.enqueue(item("Plasters, 40 pack", entity: "plasters-40"))
        await outbox.settle()
        clock.advance(by: 900)
        await outbox.settle()
        try await outbox.discard(plasters)
        // Each person's decision wakes the worker: its pass ends before the next write.
        await outbox.settle()
        server.setOnline(true)
        clock.advance(by: 600)
        server.inject(.holdForApproval(requestID: "apr-2208"))
        let vitamin = try await outbox.enqueue(item("Vitamin D 1000 IU", price: 14.5, entity: "vitamin-d"))
        await outbox.settle()
        clock.advance(by: 5400)
        try await outbox.recordApprovalDecision(vitamin, approved: false, reference: "Above the list price: use 8.90")
        await outbox.settle()
        clock.advance(by: 300)
        server.inject(.respond(.json(409, #"{"code":"duplicate","message":"A product with barcode 4006381333931 already exists"}"#)))
        _ = try await outbox.enqueue(item("Antiseptic 500 ml", entity: "antiseptic-500"))
        await outbox.settle()
        outbox.close()
    }

    /// Monday the antiseptic's price was 14.00 on the server (revision 3). Tuesday, offline, the
    /// member lowered it to 13.50, then renamed the product; when the signal came back the server
    /// refused the price (422): the price change was rolled back and the rename, made on it, held.
    private static func oldPrice(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-18T08:30:00Z"))
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        let outbox = try await open(directory, number, clock: clock, transport: transport, account: "adaeze")
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "antiseptic-500")
        func edit(_ label: String, price: Double, summary: String) async throws {
            let request = item(label, price: price, type: "product.update", method: "PUT", summary: summary, entity: key.id,
                               endpoint: "/products/\(key.id)")
            _ = try await outbox.enqueue(request, changing: [.put(key, request.payload)])
            await outbox.settle()
        }
        // The server answers its own record: the price as it writes numbers, 14, not as typed.
        transport.script(.respond(.json(200, #"{"revision":3,"record":{"id":"antiseptic-500","name":"Antiseptic 500 ml","price":14}}"#)))
        try await edit("Antiseptic 500 ml", price: 14.0, summary: "Price checked")
        // Tuesday, offline: the ScriptedTransport answers nothing it was not told to.
        clock.advance(by: 25 * 3600 + 15 * 60)
        try await edit("Antiseptic 500 ml", price: 13.5, summary: "New price")
        clock.advance(by: 4 * 60)
        try await edit("Antiseptic 500 ml (Dettol)", price: 13.5, summary: "New name")
        transport.script(.respond(.json(422, #"{"code":"validation_failed","message":"The price is below the cost price (13.80)"}"#)))
        guard let due = try outbox.operations(matching: OperationQuery(statuses: [.queued])).operations.compactMap(\.nextAttemptAt).min() else {
            throw FixtureError.unexpected("nothing is due")
        }
        clock.advance(by: max(0, due.timeIntervalSince(clock.now())))
        await outbox.settle()
        outbox.close()
    }

    /// Monday morning: a delivery saved with the photo of its note; the upload had landed three
    /// of its five segments when the app was swiped away, and it has not run since.
    private static func photo(_ directory: URL, _ number: UInt64) async throws {
        let clock = ManualClock(now: moment("2027-01-18T09:02:00Z"))
        let store = InMemoryObjectStore(now: { clock.now() })
        store.segmentSize = 800_000
        let server = InMemoryServer(objectStore: store)
        clock.setTimeZone(try zone("Africa/Lagos"))
        var configuration = OutboxConfiguration(account: "amaka", clock: clock, defaultPolicy: .idempotent, durability: .processCrash,
                                                appVersion: "3.8.0")
        let ids = SeededIDs(seed: number)
        configuration.operationIDSource = { ids.next() }
        // No launch pass: the upload below is the only one, cut off as a swipe would.
        let outbox = try Outbox(directory: directory, transport: server, configuration: configuration)
        let bytes = Data((0..<4_000_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        let note = Attachment(id: AttachmentID("5E1D0C7A-9B3F-4C2E-8A61-2F4D7B9C0E13")!, bytes: bytes, contentType: "image/jpeg",
                              name: "delivery-note.jpg")
        let delivery = OutboxRequest(
            businessID: "pharmacy-7", operationType: "delivery.create", endpoint: "/deliveries",
            payload: Data(#"{"id":"delivery-118","supplier":"Emzor","cartons":12,"note_photo":"\#(note.id)"}"#.utf8),
            entityID: "delivery-118", category: "Deliveries", entityLabel: "Delivery from Emzor, 12 cartons", summary: "New delivery")
        _ = try await outbox.enqueue(delivery, attaching: [note])
        clock.advance(by: 3)
        let landed: @Sendable () -> Int = { [store = outbox.store] in
            (try? store.queries.events(from: JournalSequence(rawValue: 1), limit: 10_000).filter { $0.kind == .segmentLanded }.count) ?? 0
        }
        _ = await outbox.replayPass.uploads.run {
            clock.advance(by: 4)
            return landed() >= 3
        }
        outbox.close()
    }

    // MARK: Building blocks

    private static func open(_ directory: URL, _ number: UInt64, clock: ManualClock, transport: any OutboxTransport,
                             account: String, appVersion: String = "3.8.0", retryPolicy: OperationTypePolicy.RetryPolicy = .standard) async throws -> Outbox {
        // The members are in Lagos unless a ticket says otherwise: the zone the engine records.
        if clock.timeZone.secondsFromGMT() == 0, let lagos = TimeZone(identifier: "Africa/Lagos") { clock.setTimeZone(lagos) }
        var configuration = OutboxConfiguration(account: account, retryPolicy: retryPolicy, clock: clock, defaultPolicy: .idempotent, durability: .processCrash,
                                                appVersion: appVersion)
        let ids = SeededIDs(seed: number)
        configuration.operationIDSource = { ids.next() }
        let outbox = try Outbox(directory: directory, transport: transport, configuration: configuration)
        // The launch's pass runs before anything is written: each later attempt's trigger is known.
        outbox.wake(.appLaunch)
        await outbox.settle()
        return outbox
    }

    /// A product write (or another kind), its payload naming it.
    private static func item(_ label: String, price: Double = 12.5, type: String = "product.create", method: String = "POST",
                             category: String = "Products", summary: String? = nil, entity: String,
                             endpoint: String = "/products") -> OutboxRequest {
        OutboxRequest(
            businessID: "pharmacy-7", operationType: type, method: method, endpoint: endpoint,
            payload: Data(#"{"id":"\#(entity)","name":"\#(label)","price":\#(price)}"#.utf8),
            entityID: entity, category: category, entityLabel: label,
            summary: summary ?? (type.hasSuffix(".create") ? "New \(category.lowercased().dropLast())" : "Changed")
        )
    }

    /// A moment written as the runbook writes it.
    static func moment(_ text: String) -> Date {
        guard case .absolute(let date)? = CommandLineParser.parseMoment(text) else { preconditionFailure("not a moment: \(text)") }
        return date
    }

    private static func zone(_ identifier: String) throws -> TimeZone {
        guard let zone = TimeZone(identifier: identifier) else { throw FixtureError.unexpected("no time zone \(identifier)") }
        return zone
    }
}
