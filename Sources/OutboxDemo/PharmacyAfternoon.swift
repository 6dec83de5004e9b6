// Kept in one file: the afternoon is one script read from top to bottom, scene after scene; split,
// its order would be lost.

public import Foundation
import Outbox
import OutboxAudit
import JournalInspect
import OutboxCrypto
import OutboxTestServer
import Synchronization
import ThrowawaySwiftStore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the demo runs.
public struct DemoOptions: Sendable {
    /// Keep the journal in this directory (for `journal-inspect` afterwards); a temporary one
    /// (removed at the end) when `nil`.
    public var journal: URL?
    /// Virtual seconds per real second: the afternoon's retries come sooner, in order.
    public var speed: Double
    /// One JSON object per line instead of text.
    public var json: Bool

    /// How long, in real seconds, the loopback server, the demo's clients and its waits for a
    /// scene to settle give each other: a guard against a hang, never a timing (a scene that
    /// does not settle within it is reported as a broken promise).
    public var patience: TimeInterval

    public init(journal: URL? = nil, speed: Double = 60, json: Bool = false, patience: TimeInterval = 60) {
        self.journal = journal
        self.speed = speed
        self.json = json
        self.patience = patience
    }
}

/// What the demo promised, and whether each promise held.
public struct DemoOutcome: Sendable {
    public struct Promise: Sendable, Equatable {
        public var text: String
        public var held: Bool
    }

    public var promises: [Promise]
    public var journal: URL
    /// Every line the demo said.
    public var lines: [Narrator.Line]
    public var allHeld: Bool { promises.allSatisfy(\.held) }
}

/// A pharmacy's afternoon, as it really runs: the engine with `URLSessionTransport` against the
/// loopback test server, a real journal, a clock that runs faster than real time.
///
/// Every write changes the member's records in the same commit (`save(_:changing:)`), and the
/// narration shows what her phone shows from them: the value as she typed it and its sync state.
/// The phone pulls the shop's change feed (`OutboxConfiguration.pull`): at launch it brings the
/// gauze the counter added that morning, and after each round of sending the lists are refreshed
/// (`pull()`), so a saved change is confirmed by the feed bringing it back. The signal drops; a product, an employee, a hire that needs the owner's approval and a
/// controlled substance are saved, each shown "waiting for internet". The signal returns; the
/// worker drains. The server commits the employee and the response is lost; the retry replays
/// under the same key and the server applies it once. The hire rests waiting for approval; the
/// controlled substance is refused, blocked, and taken off the phone's list with the server's
/// reason. In the stock room, with no signal, the antiseptic's price is raised twice and an
/// employee is promoted: the two prices reach the server in order, each against the revision
/// the one before it returned, with no conflict; the promotion is refused and rolled back on the
/// screen with the server's reason. In the evening the price is edited on two devices, the
/// counter's change reaching the server just before the phone's: the phone's edit settles
/// conflicted, the phone showing both prices; the member keeps hers, and
/// her choice reaches the server against its new revision. At closing time, with no signal, the
/// member marks the antiseptic up while the counter changes the gauze's price; when the signal
/// returns the server is busy at first, and the worker's pull brings the counter's gauze price
/// while her antiseptic price still waits, shown as she typed it; it is then sent and confirmed,
/// never flickering back. Every line printed comes from the engine or the server as they ran.
public enum PharmacyAfternoon {

    /// Runs the afternoon; every line, finished, goes to `write`.
    /// - Throws: when the server cannot start or the journal cannot open; a broken promise is
    ///   not thrown but reported in the outcome.
    public static func run(_ options: DemoOptions, write: @escaping @Sendable (String) -> Void) async throws -> DemoOutcome {
        let patience = options.patience
        let clock = AcceleratedClock(start: Self.afternoon(), speed: options.speed)
        let narrator = Narrator(json: options.json, clock: { clock.now() }, write: write)
        let directory = options.journal
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("outbox-demo-\(UUID().uuidString)")
        let labels = Labels()
        let wire = WireLog()
        // The loopback server and its clients wait `patience` of real time for each other: a
        // guard against a hang, never a timing. At 5 s a loaded machine (the demo runs in the
        // package's tests, beside the others) could time a request out, and the engine would
        // send it again: an attempt the afternoon never scripted.
        // The shop's object store, where photos go: a throwaway OpenStack Swift on loopback, its
        // uploads granted and completed by the server.
        let photos = try TemporarySwiftStore.start()
        defer { photos.stop() }
        try photos.createContainer("pharmacy-photos")
        let photoKey = UUID().uuidString
        try photos.setTempURLKey(photoKey)
        var serving = TestServer.Configuration(readTimeout: patience, observer: { event in
            wire.answered(event)
            narrator.say(.server, Self.describe(event, labels: labels, wire: wire))
        })
        serving.uploads = UploadStore(storageURL: photos.storageURL, authToken: photos.authToken, tempURLKey: photoKey,
                                      container: "pharmacy-photos", segmentBytes: 1 << 20)
        let server = try TestServer(serving)
        defer { server.stop() }
        // The shop's tablet at the counter: another device, its own requests, never the phone's signal.
        let counter = Counter(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: patience), business: Self.business)
        let gauzeCreate = OperationID()
        labels[gauzeCreate] = "Gauze 10 cm"
        narrator.say(.scene, "This morning, at the counter, Ade added Gauze 10 cm at 2.00 on the shop's tablet.")
        let gauzeCreated = try await counter.create(Self.product("gauze-10", "Gauze 10 cm", price: 2), key: gauzeCreate)
        let signal = Signal(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: patience), wire: wire)
        var configuration = OutboxConfiguration(
            account: "folake", clock: clock,
            // Every type the pharmacy writes, each replayed under its Idempotency-Key; the engine
            // refuses a type listed nowhere. Edits are not coalesced: each reaches the server.
            operationPolicies: ["product.create": .idempotent, "product.update": .idempotent,
                                "employee.create": .idempotent, "employee.update": .idempotent],
            appVersion: "outbox-demo"
        )
        // The phone pulls the shop's change feed: what changed elsewhere (at the counter) reaches
        // its lists, beneath the member's own unsent changes.
        configuration.pull = PullConfiguration(types: ["product": PullConfiguration.PulledType(), "employee": PullConfiguration.PulledType()], businesses: [Self.business])
        let outbox = try Outbox(directory: directory, transport: signal, configuration: configuration)
        let watcher = Self.narrateCommits(of: outbox, labels: labels, narrator: narrator)
        let screen = MemberScreen(outbox: outbox, business: Self.business, labels: labels, narrator: narrator, signal: signal)
        let antiseptic = Self.productKey("antiseptic-500")
        let gauze = Self.productKey("gauze-10")

        narrator.say(.scene, "Outbox \(Outbox.engineVersion): Folake's pharmacy, journal at \(directory.path), server at \(server.baseURL.absoluteString)",
                     ["journal": directory.path, "server": server.baseURL.absoluteString])
        narrator.say(.scene, "Folake opens the app; the phone pulls the shop's products.")
        outbox.wake(.appLaunch)
        let launched = await waitUntil(outbox: outbox, seconds: patience) { (try? outbox.record(gauze))??.server != nil }
        if !launched { narrator.say(.check, "The shop's products did not reach the phone within \(Int(patience)) s of real time.") }
        let launchGauze = try outbox.record(gauze)
        try screen.show(["product"])

        narrator.say(.scene, "The signal drops while a supplier unloads a new antiseptic.")
        signal.isOnline = false
        let created = try await save(Self.product("antiseptic-500", "Antiseptic 500 ml", price: 12.5), on: outbox, labels: labels, narrator: narrator)
        let offlineCreate = try outbox.record(antiseptic)
        try screen.show()
        try showTab(outbox, online: false, narrator: narrator)

        let chidi = try await save(Self.employee("chidi", "Chidi Okafor", role: "cashier"), on: outbox, labels: labels, narrator: narrator)
        let amaka = try await save(Self.employee("amaka", "Amaka Eze", role: "pharmacist"), on: outbox, labels: labels, narrator: narrator)
        let tramadol = try await save(Self.product("tramadol-50", "Tramadol 50 mg", price: 31), on: outbox, labels: labels, narrator: narrator)
        try screen.show()
        try showTab(outbox, online: false, narrator: narrator)

        server.addFaults([
            Fault(.dropAfterCommit, key: chidi.idempotencyKey),
            Fault(.pendingApproval, key: amaka.idempotencyKey),
            Fault(.forbidden, key: tramadol.idempotencyKey, message: Self.controlledSubstance),
        ])
        narrator.say(.scene, "Meanwhile the server is set to lose its answer to Chidi Okafor's write, to hold Amaka Eze's hire for the owner's approval, and to refuse a controlled substance to a cashier.")

        signalReturns(signal, outbox, narrator: narrator)
        let ids = [created, chidi, amaka, tramadol]
        await settle(ids, "The rows", outbox: outbox, narrator: narrator, patience: patience)

        try showTab(outbox, online: true, narrator: narrator)
        try screen.show()
        // Read now: the later edits write the antiseptic's later revisions.
        let createdAntiseptic = try server.records().first { $0.idempotencyKey == created.idempotencyKey }
        let tramadolShown = try outbox.record(Self.productKey("tramadol-50"))
        let productsListed = try outbox.records(RecordQuery(business: Self.business, type: "product")).records.map(\.key.id)

        // Two offline edits of one product, and a refused change of an employee.
        narrator.say(.scene, "Late afternoon, in the stock room with no signal. Folake raises the antiseptic's price to 13.00, then, on second thought, to 13.50, and makes Chidi Okafor a supervisor.")
        signal.isOnline = false
        let firstPrice = try await save(Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 13), on: outbox, labels: labels, narrator: narrator)
        let secondPrice = try await save(Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 13.5), on: outbox, labels: labels, narrator: narrator)
        let promotion = try await save(Self.roleChange("chidi", "Chidi Okafor", role: "supervisor"), on: outbox, labels: labels, narrator: narrator)
        let offlineEdits = try outbox.record(antiseptic)
        let offlinePromotion = try outbox.record(Self.employeeKey("chidi"))
        try screen.show()
        // What support reads for the same record: its history's verdict, the values named as typed.
        narrator.say(.engine, "Why the phone shows 13.50 (recordHistory): " + (try outbox.recordHistory(antiseptic, showingValues: true).verdict))
        server.addFaults([
            Fault(.slow, key: firstPrice.idempotencyKey),
            Fault(.validationFailed, key: promotion.idempotencyKey, message: Self.tooSoon),
        ])
        narrator.say(.scene, "Meanwhile the server is set to hold the first price a moment before answering, and to refuse the promotion.")
        signalReturns(signal, outbox, narrator: narrator)
        let held = await within(seconds: patience) {
            await server.waitUntilHeld(key: firstPrice.idempotencyKey)
            return true
        }
        if !held { narrator.say(.check, "The first price did not reach the server within \(Int(patience)) s of real time.") }
        let whileSending = try outbox.record(antiseptic)
        try screen.show()
        server.release(key: firstPrice.idempotencyKey)
        await settle([firstPrice, secondPrice, promotion], "The stock room's edits", outbox: outbox, narrator: narrator, patience: patience)
        let edited = try outbox.record(antiseptic)
        let refused = try outbox.record(Self.employeeKey("chidi"))
        let editsSent = wire.requests(keys: [firstPrice.idempotencyKey, secondPrice.idempotencyKey])
        let editsAnswered = [firstPrice, secondPrice].flatMap { wire.answers(key: $0.idempotencyKey) }
        narrator.say(.server, "The antiseptic's two prices reached the server in this order: "
                     + editsSent.map { "\(MemberScreen.shown($0.body, type: "product")) with If-Match \($0.ifMatch ?? "none")" }.joined(separator: ", then ")
                     + "; the phone's base is now revision \(edited?.server.map { String($0.revision) } ?? "none").",
                     ["if_match": editsSent.map { $0.ifMatch ?? "" }.joined(separator: ","), "base_revision": edited?.server.map { String($0.revision) } ?? ""])
        try screen.show()

        // A price edited on two devices.
        narrator.say(.scene, "Evening. The signal drops again; Folake raises the antiseptic's price to 14.50 on her phone.")
        signal.isOnline = false
        let edit = try await save(Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 14.5), on: outbox, labels: labels, narrator: narrator)
        try screen.show(["product"])
        // Ade's change lands just before her edit reaches the server (the change_record fault): a
        // pull before the send cannot bring it beneath her edit.
        server.addFaults([Fault(.changeRecord, key: edit.idempotencyKey, patch: Data(#"{"price":14.0}"#.utf8))])
        narrator.say(.scene, "At the counter, Ade is setting the same antiseptic to 14.00 on the shop's tablet: his change reaches the server just before hers.")
        signalReturns(signal, outbox, narrator: narrator)
        await settle([edit], "The evening's edit", outbox: outbox, narrator: narrator, patience: patience)
        let ades = try server.records().first { $0.type == "product" && $0.id == "antiseptic-500" }
        let adesRevision = ades?.revision ?? 0
        narrator.say(.server, "Ade's \(MemberScreen.shown(ades?.body, type: "product")) on the server: revision \(adesRevision), from the shop's tablet.",
                     ["revision": String(adesRevision)])
        let conflictTab = try showTab(outbox, online: true, narrator: narrator)
        let conflictShown = try outbox.record(antiseptic)
        try screen.show(["product"])
        let conflicted = try outbox.operation(edit)
        let theirs = conflicted?.conflict?.serverRevision ?? String(adesRevision)
        narrator.say(.scene, "Folake compares the two prices and keeps hers, against the server's revision \(theirs).")
        let resolution = try await outbox.resolveConflict(edit, keeping: .mine(payload: Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 14.5).payload,
                                                                              baseRevision: theirs))
        outbox.wake(.foreground)
        await settle(resolution.map { [$0] } ?? [], "The member's choice", outbox: outbox, narrator: narrator, patience: patience)
        let finalAntiseptic = try server.records().first { $0.type == "product" && $0.id == "antiseptic-500" }
        narrator.say(.server, "The antiseptic on the server: \(finalAntiseptic.map { String(decoding: $0.body, as: UTF8.self) } ?? "missing"), revision \(finalAntiseptic?.revision ?? 0)")
        let settledRecord = try outbox.record(antiseptic)
        try screen.show(["product"])

        // A price changed at the counter reaches the phone while the member's own unsent edit of
        // another product stays on screen.
        narrator.say(.scene, "Closing time. The signal drops once more; Folake marks the antiseptic up to 15.00.")
        signal.isOnline = false
        let closing = try await save(Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 15), on: outbox, labels: labels, narrator: narrator)
        let watch = ScreenWatch(outbox, keys: [antiseptic, gauze], signal: signal)
        let gauzeRevision = try await counter.change(product: "gauze-10", patch: Data(#"{"price":2.25}"#.utf8))
        narrator.say(.server, "At the counter, Ade changes the gauze to 2.25 on the shop's tablet (POST /_control/records/product/gauze-10): revision \(gauzeRevision) on the server.",
                     ["revision": String(gauzeRevision)])
        let closingOffline = try outbox.record(antiseptic)
        let gauzeOffline = try outbox.record(gauze)
        try screen.show(["product"])
        server.addFaults([
            Fault(.unavailable, key: closing.idempotencyKey, retryAfterSeconds: 60),
            Fault(.slow, key: closing.idempotencyKey),
        ])
        narrator.say(.scene, "Meanwhile the server is set to be busy when her price first arrives (\"try again in a minute\"), then to hold it a moment before answering.")
        signalReturns(signal, outbox, narrator: narrator)
        // The worker sends (the server is busy) and pulls in the same pass; the price goes again a
        // minute later, and the server holds it: the list is read while it waits.
        let closingHeld = await within(seconds: patience) {
            await server.waitUntilHeld(key: closing.idempotencyKey)
            return true
        }
        let gauzePulled = await waitUntil(outbox: outbox, seconds: patience) { (try? outbox.record(gauze))??.server?.revision == UInt64(gauzeRevision) }
        if !closingHeld { narrator.say(.check, "The closing price did not reach the server again within \(Int(patience)) s of real time.") }
        if !gauzePulled { narrator.say(.check, "The counter's gauze price did not reach the phone within \(Int(patience)) s of real time.") }
        let closingWaiting = try outbox.record(antiseptic)
        let gauzeReached = try outbox.record(gauze)
        narrator.say(.engine, "The phone pulled the counter's gauze price while Folake's 15.00 waits to be sent:")
        try screen.show(["product"])
        // The list the member sees while the price is held is among the observation's own.
        await watch.caughtUp()
        server.release(key: closing.idempotencyKey)
        await settle([closing], "The closing price", outbox: outbox, narrator: narrator, patience: patience)
        let closingSettled = try outbox.record(antiseptic)
        let gauzeSettled = try outbox.record(gauze)
        try screen.show(["product"])
        _ = await watch.stop()
        let antisepticSeen = watch.sightings(of: "antiseptic-500")
        let gauzeSeen = watch.sightings(of: "gauze-10").map(\.shown)
        narrator.say(.engine, "What the list showed, each list its observation yielded since her edit: the antiseptic "
                     + Self.distinctRuns(antisepticSeen.map { "\($0.shown) (\($0.state))" }).joined(separator: ", then ")
                     + "; the gauze " + Self.distinctRuns(gauzeSeen).joined(separator: ", then ") + ".")

        // After closing: a delivery note photographed with no signal.
        narrator.say(.scene, "After closing, a supplier drops off cotton wool at the stock room, where there is no signal. Folake photographs the delivery note and saves the product with it.")
        signal.isOnline = false
        let note = Attachment(bytes: Self.deliveryNotePhoto(), contentType: "image/jpeg", name: "delivery-note.jpg")
        let cottonKey = Self.productKey("cotton-100")
        let cottonRequest = Self.product("cotton-100", "Cotton wool 100 g", price: 3.5, deliveryNote: note.id)
        labels[cottonKey] = cottonRequest.entityLabel
        let cotton = try await outbox.enqueue(cottonRequest, changing: [.put(cottonKey, cottonRequest.payload)], attaching: [note])
        labels[cotton] = cottonRequest.entityLabel
        narrator.say(.engine, "Saved on this device with its photo (\(note.size ?? 0) bytes, kept whole before the save), waiting for internet: Cotton wool 100 g",
                     ["operation": cotton.idempotencyKey, "attachment": note.id.description])
        let cottonOffline = try outbox.record(cottonKey)
        narrator.say(.engine, "Her phone: Cotton wool 100 g: \(cottonOffline.map { MemberScreen.state($0, online: false) } ?? "not on the list")")
        signalReturns(signal, outbox, narrator: narrator)
        await settle([cotton], "The cotton wool and its delivery note", outbox: outbox, narrator: narrator, patience: patience)
        let cottonTrail = try outbox.history(cotton).map(\.kind)
        let segments = cottonTrail.filter { $0 == .segmentLanded }.count
        let stored = await Self.readBack(photos, container: "pharmacy-photos", object: note.id.description, patience: patience)
        let noteDigest = SHA256Digest(of: Self.deliveryNotePhoto())
        narrator.say(.server, "The delivery note in the object store: \(stored.map { "\($0.count) bytes, SHA-256 \(SHA256Digest(of: $0).hex.prefix(16))..." } ?? "missing"); "
                     + "its \(segments) segments landed, then the server completed it, then the product was sent.")

        let metrics = try outbox.metrics()
        narrator.say(.engine, "Metrics: \(metrics.totalAttempts) attempts; accepted \(metrics.accepted), replayed \(metrics.replayed), "
                     + "blocked \(metrics.blocked); \(metrics.journalEvents) events, \(metrics.journalEventBytes) bytes in the journal",
                     ["attempts": String(metrics.totalAttempts), "events": String(metrics.journalEvents)])
        let written = ids + [firstPrice, secondPrice, promotion, edit, closing, cotton] + (resolution.map { [$0] } ?? [])
        let rows = try Dictionary(uniqueKeysWithValues: written.map { ($0, try outbox.operation($0)) })
        let badge = try outbox.badgeCount()
        let tab = try outbox.syncTab(isOnline: true)
        outbox.close()
        watcher.cancel()
        _ = await watcher.result

        // The proof, read back from the journal as support would.
        let inspection = CapturedText()
        _ = JournalInspect.run([directory.path, "timeline", chidi.idempotencyKey], context: InspectContext(
            now: clock.now(), standardOutput: inspection, standardError: inspection, style: Style(enabled: false)))
        narrator.say(.engine, "journal-inspect \(directory.lastPathComponent) timeline \(chidi.idempotencyKey.prefix(8)):\n" + inspection.text
            .trimmingCharacters(in: .newlines))

        let applied = try server.appliedCounts()
        for id in ids {
            narrator.say(.server, "\(labels[id]): applied \(applied[id.idempotencyKey] ?? 0) time\(applied[id.idempotencyKey] == 1 ? "" : "s")",
                         ["key": id.idempotencyKey, "applied": String(applied[id.idempotencyKey] ?? 0)])
        }
        let accepted = ([gauzeCreate, created, chidi, amaka, firstPrice, secondPrice, closing, cotton] + (resolution.map { [$0] } ?? []))
            .map { ($0.idempotencyKey, 1) }
        // The photo's grant and completion are claimed by the server too, each once.
        let uploadKeys = Set(applied.keys).subtracting(accepted.map(\.0))
        let uploadsOnce = uploadKeys.allSatisfy { applied[$0] == 1 }
        narrator.say(.server, "The photo's grant and completion, claimed by the server: \(uploadKeys.count) requests, applied \(uploadKeys.map { String(applied[$0] ?? 0) }.joined(separator: ", ")) time(s)")
        let writesApplied = AppliedCounts(applied.filter { !uploadKeys.contains($0.key) }.map { (key: $0.key, count: $0.value) })
        let closingPrice = Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 15).payload
        let firstTwoFifty = gauzeSeen.firstIndex(of: "2.25")

        let promises = [
            DemoOutcome.Promise(text: "Antiseptic 500 ml synced, applied once, exactly as typed",
                                held: rows[created]??.status == .synced && applied[created.idempotencyKey] == 1
                                    && createdAntiseptic?.body == Self.product("antiseptic-500", "Antiseptic 500 ml", price: 12.5).payload),
            DemoOutcome.Promise(text: "The phone showed the member's price while offline, waiting for internet: the new antiseptic at 12.50, then 13.50 over the server's 12.50",
                                held: offlineCreate?.value == Self.product("antiseptic-500", "Antiseptic 500 ml", price: 12.5).payload
                                    && offlineCreate?.server == nil && offlineCreate.map { MemberScreen.state($0, online: false) } == "waiting for internet"
                                    && offlineEdits?.value == Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 13.5).payload
                                    && offlineEdits?.sync.pending.map(\.operation) == [firstPrice, secondPrice]
                                    && offlineEdits?.server?.revision == 1 && MemberScreen.shown(offlineEdits?.server?.value, type: "product") == "12.50"
                                    && offlineEdits.map { MemberScreen.state($0, online: false) } == "waiting for internet"),
            DemoOutcome.Promise(text: "Chidi Okafor's answer was lost; the retry, under the same key, synced as a replay, and the server applied it once",
                                held: rows[chidi]??.status == .synced && rows[chidi]??.latestOutcome == .replayed
                                    && applied[chidi.idempotencyKey] == 1),
            DemoOutcome.Promise(text: "Amaka Eze rests waiting for approval, with its request id, off the badge",
                                held: rows[amaka]??.status == .pendingApproval && rows[amaka]??.approvalRequestID != nil
                                    && tab.approvalCard?.count == 1),
            DemoOutcome.Promise(text: "Tramadol 50 mg is blocked, with the server's reason shown, and never applied",
                                held: rows[tramadol]??.status == .blocked
                                    && rows[tramadol]??.lastErrorMessage == Self.controlledSubstance
                                    && applied[tramadol.idempotencyKey] == nil),
            DemoOutcome.Promise(text: "A refused change was rolled back on screen with the server's reason: Chidi Okafor is a cashier again, and Tramadol 50 mg is off the list",
                                held: offlinePromotion.flatMap { $0.value }.map { MemberScreen.shown($0, type: "employee") } == "supervisor"
                                    && rows[promotion]??.status == .failed && applied[promotion.idempotencyKey] == nil
                                    && refused?.value != nil && refused?.value == refused?.server?.value
                                    && MemberScreen.shown(refused?.value, type: "employee") == "cashier"
                                    && refused?.sync.rolledBack?.operation == promotion && refused?.sync.rolledBack?.message == Self.tooSoon
                                    && tramadolShown?.value == nil && tramadolShown?.sync.rolledBack?.operation == tramadol
                                    && tramadolShown?.sync.rolledBack?.message == Self.controlledSubstance
                                    && !productsListed.contains("tramadol-50") && productsListed.contains("antiseptic-500")),
            DemoOutcome.Promise(text: "Two offline edits of one record reached the server in order, without a conflict: If-Match \"1\", then \"2\"; the phone's base is the server's 13.50 at revision 3",
                                held: editsSent.map(\.idempotencyKey) == [firstPrice.idempotencyKey, secondPrice.idempotencyKey] && editsSent.map(\.ifMatch) == [#""1""#, #""2""#]
                                    && editsAnswered.map(\.outcome) == [.applied, .applied] && editsAnswered.map(\.status) == [200, 200]
                                    && rows[firstPrice]??.status == .synced && rows[secondPrice]??.status == .synced
                                    && whileSending.map { MemberScreen.state($0, online: true) } == "sending..."
                                    && edited?.server?.revision == 3 && MemberScreen.shown(edited?.server?.value, type: "product") == "13.50"
                                    && edited?.sync.isSynced == true),
            DemoOutcome.Promise(text: "The badge counts the two rows that need a person; the tab counts three",
                                held: badge == 2 && tab.totalCount == 3),
            DemoOutcome.Promise(text: "The price edited on two devices was not overwritten: the edit settled conflicted, the phone showing Folake's 14.50 beside Ade's 14.00, and was never applied",
                                held: conflicted?.status == .conflicted && conflicted?.conflict?.serverRevision == String(adesRevision)
                                    && applied[edit.idempotencyKey] == nil
                                    && conflictTab.conflictCard?.rows.first?.serverValue?.contains("14") == true
                                    && MemberScreen.shown(conflictShown?.value, type: "product") == "14.50"
                                    && conflictShown?.sync.conflict?.operation == edit
                                    && MemberScreen.shown(conflictShown?.sync.conflict?.serverValue, type: "product") == "14.00"
                                    && tab.conflictCard == nil),
            DemoOutcome.Promise(text: "Folake's choice replaced the conflicted edit and reached the server: 14.50 at the next revision, now the phone's base",
                                held: rows[edit]??.status == .superseded && resolution.flatMap { rows[$0]??.status } == .synced
                                    && finalAntiseptic.map { MemberScreen.shown($0.body, type: "product") == "14.50" && $0.revision == adesRevision + 1 } == true
                                    && settledRecord?.server?.revision == UInt64(adesRevision + 1) && settledRecord?.sync.isSynced == true
                                    && MemberScreen.shown(settledRecord?.value, type: "product") == "14.50"),
            DemoOutcome.Promise(text: "At launch the phone pulled the shop's products: the counter's Gauze 10 cm at 2.00, revision 1, on the list",
                                held: gauzeCreated == 1 && launchGauze?.server?.revision == 1 && MemberScreen.shown(launchGauze?.value, type: "product") == "2.00"
                                    && launchGauze?.sync.isSynced == true),
            DemoOutcome.Promise(text: "The counter's gauze price reached the phone by the feed while Folake's unsent 15.00 for the antiseptic stayed on screen",
                                held: MemberScreen.shown(gauzeOffline?.value, type: "product") == "2.00"
                                    && closingOffline?.value == closingPrice && closingOffline.map { MemberScreen.state($0, online: false) } == "waiting for internet"
                                    && gauzeReached?.server?.revision == UInt64(gauzeRevision) && gauzeReached?.sync.isSynced == true
                                    && MemberScreen.shown(gauzeReached?.value, type: "product") == "2.25"
                                    && closingWaiting?.value == closingPrice && closingWaiting?.sync.pending.map(\.operation) == [closing]
                                    && closingWaiting?.server?.revision == settledRecord?.server?.revision
                                    && closingWaiting.map { MemberScreen.state($0, online: true) } == "sending..."),
            DemoOutcome.Promise(text: "Folake's 15.00 was sent, applied once and confirmed by the feed at the next revision, and never flickered back: every list the observation yielded since her edit showed 15.00, and the gauze never went back to 2.00 once it showed 2.25",
                                held: rows[closing]??.status == .synced && applied[closing.idempotencyKey] == 1
                                    && closingSettled?.value == closingSettled?.server?.value && closingSettled?.sync.isSynced == true
                                    && MemberScreen.shown(closingSettled?.value, type: "product") == "15.00"
                                    && closingSettled?.server?.revision == settledRecord?.server.map { $0.revision + 1 }
                                    && MemberScreen.shown(gauzeSettled?.value, type: "product") == "2.25"
                                    && !antisepticSeen.isEmpty && antisepticSeen.allSatisfy { $0.shown == "15.00" }
                                    && firstTwoFifty.map { !gauzeSeen[$0...].contains("2.00") } == true),
            DemoOutcome.Promise(text: "The delivery note photographed with no signal reached the object store whole (its SHA-256 the photo's), and only then was Cotton wool 100 g sent, applied once",
                                held: cottonOffline.map { MemberScreen.state($0, online: false) } == "delivery-note.jpg waiting for internet"
                                    && rows[cotton]??.status == .synced && stored.map { SHA256Digest(of: $0) } == noteDigest
                                    && segments == 3 && uploadsOnce
                                    && cottonTrail.firstIndex(of: .attachmentCompleted).map { done in
                                        cottonTrail.firstIndex(of: .attemptStarted).map { done < $0 } ?? false } == true),
            DemoOutcome.Promise(text: "Every write the server accepted was applied exactly once",
                                held: writesApplied == Dictionary(uniqueKeysWithValues: accepted)),
        ]
        for promise in promises {
            narrator.say(.check, (promise.held ? "✓ " : "✗ ") + promise.text, ["held": String(promise.held)])
        }
        if options.journal == nil { try? FileManager.default.removeItem(at: directory) }
        return DemoOutcome(promises: promises, journal: directory, lines: narrator.lines)
    }

    static let controlledSubstance = "Only the owner may add a controlled substance."

    /// The delivery note's photo: 2.5 MB of bytes, the same every run (three segments of 1 MiB).
    static func deliveryNotePhoto() -> Data {
        Data((0..<2_500_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
    }

    /// A product whose payload names its delivery note's photo.
    static func product(_ id: String, _ name: String, price: Double, deliveryNote: AttachmentID) -> OutboxRequest {
        var request = product(id, name, price: price)
        request.payload = Data(#"{"id":"\#(id)","name":"\#(name)","price":\#(price),"delivery_note":"\#(deliveryNote)"}"#.utf8)
        return request
    }

    /// The object as the store holds it, read with the account's token; `nil` when it is not there.
    static func readBack(_ store: TemporarySwiftStore, container: String, object: String, patience: TimeInterval) async -> Data? {
        var request = URLRequest(url: store.objectURL(container: container, object: object), timeoutInterval: patience)
        request.setValue(store.authToken, forHTTPHeaderField: "X-Auth-Token")
        guard let (data, response) = try? await URLSession.shared.data(for: request),
            (response as? HTTPURLResponse)?.statusCode == 200
        else { return nil }
        return data
    }

    /// `values` with each run of equal neighbours told once: "15.00 (waiting for internet), then 15.00 (sending...)".
    static func distinctRuns(_ values: [String]) -> [String] {
        values.reduce(into: []) { runs, value in
            if runs.last != value { runs.append(value) }
        }
    }
    static let tooSoon = "Chidi Okafor started today: a supervisor needs 90 days of service."

    // MARK: The member's actions

    /// Saves a write with its record change: the request's payload is the record's whole new value.
    private static func save(_ request: OutboxRequest, on outbox: Outbox, labels: Labels, narrator: Narrator) async throws -> OperationID {
        let key = recordKey(of: request)
        labels[key] = request.entityLabel
        let result = try await outbox.save(request, changing: [.put(key, request.payload)])
        let id: OperationID
        let text: String
        switch result {
        case .queued(let queued):
            id = queued
            text = "Saved on this device, waiting for internet"
        case .blocked(let blocked, _, let message):
            id = blocked
            text = "Saved, but blocked: \(message)"
        case .synced, .pendingApproval, .rejected, .conflicted, .failed, .alreadySaved:
            // With no signal the save cannot reach the server: any other answer breaks the story.
            throw DemoError.unexpected("a save with no signal answered \(result)")
        }
        labels[id] = request.entityLabel
        narrator.say(.engine, "\(text): \(request.entityLabel) (\(request.summary.lowercased()))",
                     ["operation": id.idempotencyKey, "result": "queued"])
        return id
    }

    /// Shows the member the Sync tab, and answers it.
    @discardableResult
    private static func showTab(_ outbox: Outbox, online: Bool, narrator: Narrator) throws -> SyncTab {
        let tab = try outbox.syncTab(isOnline: online)
        var lines = ["Sync tab: \(tab.banner.text). Badge \(try outbox.badgeCount())."]
        for card in (tab.conflictCard.map { [$0] } ?? []) + tab.cards + (tab.approvalCard.map { [$0] } ?? []) {
            lines.append("  \(card.category): \(card.countText)")
            for row in card.rows {
                lines.append("    \(row.entityLabel), \(row.summary.lowercased()), \(row.status.rawValue)"
                    + (row.lastErrorMessage.map { ": \($0)" } ?? "")
                    + (row.serverValue.map { "; on the server now: \($0)" } ?? ""))
            }
        }
        narrator.say(.engine, lines.joined(separator: "\n"), ["banner": tab.banner.text, "total": String(tab.totalCount)])
        return tab
    }

    /// The signal comes back: the phone's network is up, and the worker is woken.
    private static func signalReturns(_ signal: Signal, _ outbox: Outbox, narrator: Narrator) {
        narrator.say(.scene, "The signal returns.")
        signal.isOnline = true
        outbox.wake(.connectivityRegained)
    }

    /// Waits until `ids` leave `queued` and `syncing`, then refreshes the lists (`pull()`): the
    /// feed brings back each saved change, and the screen stops saying "saved" for one it has
    /// not seen come back. Says so when they do not settle within `patience` of real time (a
    /// promise read afterwards then fails).
    private static func settle(_ ids: [OperationID], _ what: String, outbox: Outbox, narrator: Narrator, patience: TimeInterval) async {
        guard !ids.isEmpty else {
            narrator.say(.check, "\(what) was not made.")
            return
        }
        if !(await waitUntilSettled(ids, outbox: outbox, timeoutSeconds: patience)) {
            narrator.say(.check, "\(what) did not settle within \(Int(patience)) s of real time.")
        }
        do {
            let report = try await outbox.pull()
            let feed = report.feed(Self.business)
            narrator.say(.engine, "Lists refreshed (pull): \(feed?.changesApplied ?? 0) change\(feed?.changesApplied == 1 ? "" : "s") from the shop's feed"
                         + (feed?.stoppedBy.map { ", stopped: \($0)" } ?? ""),
                         ["changes": String(feed?.changesApplied ?? 0), "reached_end": String(feed?.reachedEnd ?? false)])
        } catch {
            narrator.say(.check, "The lists could not be refreshed: \(error)")
        }
    }

    /// What `operation` answered, or `false` when it did not finish within `seconds` of real time.
    private static func within(seconds: Double, _ operation: @escaping @Sendable () async -> Bool) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private static func waitUntilSettled(_ ids: [OperationID], outbox: Outbox, timeoutSeconds: Double) async -> Bool {
        await waitUntil(outbox: outbox, seconds: timeoutSeconds) {
            ids.allSatisfy { (try? outbox.operationState($0)).flatMap { $0.map { $0.status != .queued && $0.status != .syncing } } ?? false }
        }
    }

    /// Whether `condition` came true, read after each commit, within `seconds` of real time.
    private static func waitUntil(outbox: Outbox, seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let changes = outbox.changes()
        return await within(seconds: seconds) {
            if condition() { return true }
            for await _ in changes where condition() { return true }
            return condition()
        }
    }

    // MARK: Narration of what ran

    /// Prints every event as its commit lands, in seq order.
    private static func narrateCommits(of outbox: Outbox, labels: Labels, narrator: Narrator) -> Task<Void, Never> {
        let changes = outbox.changes()
        return Task {
            for await change in changes {
                let count = Int(change.seqs.upperBound.rawValue - change.seqs.lowerBound.rawValue) + 1
                guard let events = try? outbox.events(from: change.seqs.lowerBound, limit: count) else { return }
                for event in events {
                    if case .enqueued(let enqueued) = event.body, let id = event.operationID {
                        labels[id] = enqueued.request.entityLabel
                        continue
                    }
                    narrator.say(.engine, Self.describe(event, labels: labels), ["seq": String(event.seq.rawValue), "kind": event.kind.rawValue])
                }
            }
        }
    }

    static func describe(_ event: JournalEvent, labels: Labels) -> String {
        let name = event.operationID.map { labels[$0] } ?? "the journal"
        switch event.body {
        case .attemptStarted(let started):
            return "#\(event.seq) attempt \(started.attempt) of \(name), woken by \(started.trigger)"
                + (started.sentRevision.map { ", sent against revision \($0)" } ?? "")
        case .attemptFinished(let finished):
            var text = "#\(event.seq) attempt \(finished.attempt) of \(name): \(finished.outcome) → \(finished.disposition)"
            if let next = finished.nextAttemptAt { text += ", retry at \(Self.time(next))" }
            if let message = finished.errorMessage, finished.disposition != .transientFailure { text += ": \(message)" }
            if let request = finished.approvalRequestID { text += ", approval request \(request)" }
            return text
        case .attemptAbandoned(let abandoned):
            return "#\(event.seq) attempt \(abandoned.attempt) of \(name) abandoned"
        case .sessionPaused(let paused):
            return "#\(event.seq) the worker paused: \(paused.reason)"
        case .pageApplied(let page):
            let count = page.confirmations.count
            return "#\(event.seq) pulled \(count) change\(count == 1 ? "" : "s") from the shop's feed (\(page.from) to \(page.to))"
        default:
            return "#\(event.seq) \(event.kind) \(event.operationID == nil ? "" : name)"
        }
    }

    static func describe(_ event: ServerEvent, labels: Labels, wire: WireLog) -> String {
        var name = event.idempotencyKey.flatMap(OperationID.init).map { labels[$0] } ?? "a request"
        if let key = event.idempotencyKey, let ifMatch = wire.requests(keys: [key]).last?.ifMatch { name += ", If-Match \(ifMatch)" }
        let answer = event.status.map { "answered \($0)" } ?? "connection dropped before any answer"
        let what: String = switch event.outcome {
        case .applied: "applied"
        case .replayed: "already applied: the stored answer replayed"
        case .conflict: "key conflict"
        case .inProgress: "still finalizing"
        case .revisionConflict: "changed elsewhere since the edit began"
        case .refused: event.fault.map { "refused (\($0.rawValue))" } ?? "refused"
        }
        return "\(event.method) \(event.path) for \(name): \(what), \(answer)"
    }

    private static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }

    /// 15:00 UTC today: the afternoon the demo narrates.
    static func afternoon() -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(bySettingHour: 15, minute: 0, second: 0, of: Date()) ?? Date()
    }

    // MARK: The writes

    static let business = "folakes-pharmacy"

    static func productKey(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }
    static func employeeKey(_ id: String) -> RecordKey { RecordKey(business: business, type: "employee", id: id) }

    /// The record a write changes: its type is the operation's (`product` for `product.update`),
    /// its id the write's entity.
    static func recordKey(of request: OutboxRequest) -> RecordKey {
        RecordKey(business: request.businessID, type: String(request.operationType.prefix { $0 != "." }), id: request.entityID ?? "")
    }

    static func productJSON(_ id: String, _ name: String, price: Double) -> Data {
        Data(#"{"id":"\#(id)","name":"\#(name)","price":\#(price)}"#.utf8)
    }

    static func product(_ id: String, _ name: String, price: Double) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "product.create", endpoint: "/products",
            payload: productJSON(id, name, price: price),
            entityID: id, category: "Products", entityLabel: name, summary: "New product"
        )
    }

    /// A new price for a product: the whole record, sent against the record's server revision as
    /// the engine knows it when the write is sent.
    static func priceEdit(_ id: String, _ name: String, price: Double) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "product.update", method: "PUT", endpoint: "/products/\(id)",
            payload: productJSON(id, name, price: price), entityID: id, category: "Products", entityLabel: name,
            summary: "New price \(String(format: "%.2f", price))", revisionFrom: productKey(id)
        )
    }

    static func employeeJSON(_ id: String, _ name: String, role: String) -> Data {
        Data(#"{"id":"\#(id)","name":"\#(name)","role":"\#(role)"}"#.utf8)
    }

    static func employee(_ id: String, _ name: String, role: String) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "employee.create", endpoint: "/employees",
            payload: employeeJSON(id, name, role: role),
            entityID: id, category: "Employees", entityLabel: name, summary: "New \(role)"
        )
    }

    /// A new role for an employee: the whole record, against its server revision.
    static func roleChange(_ id: String, _ name: String, role: String) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "employee.update", method: "PUT", endpoint: "/employees/\(id)",
            payload: employeeJSON(id, name, role: role), entityID: id, category: "Employees", entityLabel: name,
            summary: "Now a \(role)", revisionFrom: employeeKey(id)
        )
    }
}

enum DemoError: Error, CustomStringConvertible {
    case unexpected(String)

    var description: String {
        switch self {
        case .unexpected(let text): text
        }
    }
}

/// What the member calls each operation, for the narration.
final class Labels: Sendable {
    private let names = Mutex<[OperationID: String]>([:])
    private let recordNames = Mutex<[RecordKey: String]>([:])

    subscript(id: OperationID) -> String {
        get { names.withLock { $0[id] } ?? String(id.idempotencyKey.prefix(8)) }
        set { names.withLock { $0[id] = newValue } }
    }

    /// The records the member wrote, by the name she gave each.
    subscript(key: RecordKey) -> String? {
        get { recordNames.withLock { $0[key] } }
        set { recordNames.withLock { $0[key] = newValue } }
    }

    var records: [RecordKey: String] { recordNames.withLock { $0 } }
}

/// Text `journal-inspect` writes, kept for the narration.
final class CapturedText: TextOutput {
    private let buffer = Mutex("")

    func write(_ text: String) {
        buffer.withLock { $0 += text }
    }

    var text: String { buffer.withLock { $0 } }
}
