public import Foundation
import Outbox
import JournalInspect
import OutboxTestServer
import Synchronization

/// How the demo runs.
public struct DemoOptions: Sendable {
    /// Keep the journal in this directory (for `journal-inspect` afterwards); a temporary one
    /// (removed at the end) when `nil`.
    public var journal: URL?
    /// Virtual seconds per real second: the afternoon's retries come sooner, in order.
    public var speed: Double
    /// One JSON object per line instead of text.
    public var json: Bool

    public init(journal: URL? = nil, speed: Double = 60, json: Bool = false) {
        self.journal = journal
        self.speed = speed
        self.json = json
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
/// The signal drops; a product, an employee, a hire that needs the owner's approval and a
/// controlled substance are saved. The signal returns; the worker drains. The server commits the
/// employee and the response is lost; the retry replays under the same key and the server applies
/// it once. The hire rests waiting for approval; the controlled substance is refused and blocked.
/// In the evening the antiseptic's price is edited on two devices: the phone's edit, sent against
/// the revision it started from, settles conflicted with the other price shown; the member keeps
/// hers, and her choice reaches the server against its new revision. Every line printed comes
/// from the engine or the server as they ran.
public enum PharmacyAfternoon {
    /// Runs the afternoon; every line, finished, goes to `write`.
    /// - Throws: when the server cannot start or the journal cannot open; a broken promise is
    ///   not thrown but reported in the outcome.
    public static func run(_ options: DemoOptions, write: @escaping @Sendable (String) -> Void) async throws -> DemoOutcome {
        let clock = AcceleratedClock(start: Self.afternoon(), speed: options.speed)
        let narrator = Narrator(json: options.json, clock: { clock.now() }, write: write)
        let directory = options.journal
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("outbox-demo-\(UUID().uuidString)")
        let labels = Labels()
        let server = try TestServer(.init(readTimeout: 5, observer: { event in
            narrator.say(.server, Self.describe(event, labels: labels))
        }))
        defer { server.stop() }
        let signal = Signal(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: 5))
        let outbox = try Outbox(directory: directory, transport: signal, configuration: OutboxConfiguration(
            account: "folake", clock: clock,
            // Every type the pharmacy writes, each replayed under its Idempotency-Key; the engine
            // refuses a type listed nowhere.
            operationPolicies: ["product.create": .idempotent, "product.update": .idempotent, "employee.create": .idempotent],
            appVersion: "outbox-demo"
        ))
        let watcher = Self.narrateCommits(of: outbox, labels: labels, narrator: narrator)

        narrator.say(.scene, "Outbox \(Outbox.engineVersion): Folake's pharmacy, journal at \(directory.path), server at \(server.baseURL.absoluteString)",
                     ["journal": directory.path, "server": server.baseURL.absoluteString])
        outbox.wake(.appLaunch)

        narrator.say(.scene, "The signal drops while a supplier unloads a new antiseptic.")
        signal.isOnline = false
        let antiseptic = try await save(Self.product("antiseptic-500", "Antiseptic 500 ml", price: 12.5), on: outbox, labels: labels, narrator: narrator)
        try showTab(outbox, online: false, narrator: narrator)

        let chidi = try await save(Self.employee("chidi", "Chidi Okafor", role: "cashier"), on: outbox, labels: labels, narrator: narrator)
        let amaka = try await save(Self.employee("amaka", "Amaka Eze", role: "pharmacist"), on: outbox, labels: labels, narrator: narrator)
        let tramadol = try await save(Self.product("tramadol-50", "Tramadol 50 mg", price: 31), on: outbox, labels: labels, narrator: narrator)
        try showTab(outbox, online: false, narrator: narrator)

        server.addFaults([
            Fault(.dropAfterCommit, key: chidi.idempotencyKey),
            Fault(.pendingApproval, key: amaka.idempotencyKey),
            Fault(.forbidden, key: tramadol.idempotencyKey, message: "Only the owner may add a controlled substance."),
        ])
        narrator.say(.scene, "Meanwhile the server is set to lose its answer to Chidi Okafor's write, to hold Amaka Eze's hire for the owner's approval, and to refuse a controlled substance to a cashier.")

        narrator.say(.scene, "The signal returns.")
        signal.isOnline = true
        outbox.wake(.connectivityRegained)
        let ids = [antiseptic, chidi, amaka, tramadol]
        let settled = await waitUntilSettled(ids, outbox: outbox, timeoutSeconds: 60)
        if !settled { narrator.say(.check, "The rows did not settle within a minute of real time.") }

        try showTab(outbox, online: true, narrator: narrator)
        // Read now: the evening's edits write the antiseptic's later revisions.
        let createdAntiseptic = try server.records().first { $0.idempotencyKey == antiseptic.idempotencyKey }

        // A price edited on two devices.
        narrator.say(.scene, "Evening. The signal drops again; Folake raises the antiseptic's price to 13.50 on her phone.")
        signal.isOnline = false
        let baseRevision = try outbox.operation(antiseptic)?.serverRevision ?? "1"
        let edit = try await save(Self.priceEdit("antiseptic-500", "Antiseptic 500 ml", price: 13.5, baseRevision: baseRevision),
                                  on: outbox, labels: labels, narrator: narrator)
        let ades = try server.changeRecord(type: "product", id: "antiseptic-500", businessID: Self.business, patch: Data(#"{"price":14.0}"#.utf8))
        narrator.say(.server, "At the counter, Ade sets the same antiseptic to 14.00 on the shop's tablet: revision \(ades.revision) on the server.",
                     ["revision": String(ades.revision)])
        narrator.say(.scene, "The signal returns.")
        signal.isOnline = true
        outbox.wake(.connectivityRegained)
        _ = await waitUntilSettled([edit], outbox: outbox, timeoutSeconds: 60)
        let conflictTab = try showTab(outbox, online: true, narrator: narrator)
        let conflicted = try outbox.operation(edit)
        let theirs = conflicted?.conflict?.serverRevision ?? String(ades.revision)
        narrator.say(.scene, "Folake compares the two prices on the Sync tab and keeps hers, against the server's revision \(theirs).")
        let resolution = try await outbox.resolveConflict(edit, keeping: .mine(payload: Self.pricePatch(13.5), baseRevision: theirs))
        outbox.wake(.foreground)
        var resolved = false
        if let resolution { resolved = await waitUntilSettled([resolution], outbox: outbox, timeoutSeconds: 60) }
        if !resolved { narrator.say(.check, "The member's choice did not settle within a minute of real time.") }
        let finalAntiseptic = try server.records().first { $0.type == "product" && $0.id == "antiseptic-500" }
        narrator.say(.server, "The antiseptic on the server: \(finalAntiseptic.map { String(decoding: $0.body, as: UTF8.self) } ?? "missing"), revision \(finalAntiseptic?.revision ?? 0)")

        let metrics = try outbox.metrics()
        narrator.say(.engine, "Metrics: \(metrics.totalAttempts) attempts; accepted \(metrics.accepted), replayed \(metrics.replayed), "
                     + "blocked \(metrics.blocked); \(metrics.journalEvents) events, \(metrics.journalEventBytes) bytes in the journal",
                     ["attempts": String(metrics.totalAttempts), "events": String(metrics.journalEvents)])
        let rows = try Dictionary(uniqueKeysWithValues: (ids + [edit] + (resolution.map { [$0] } ?? [])).map { ($0, try outbox.operation($0)) })
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

        let promises = [
            DemoOutcome.Promise(text: "Antiseptic 500 ml synced, applied once, exactly as typed",
                                held: rows[antiseptic]??.status == .synced && applied[antiseptic.idempotencyKey] == 1
                                    && createdAntiseptic?.body == Self.product("antiseptic-500", "Antiseptic 500 ml", price: 12.5).payload),
            DemoOutcome.Promise(text: "Chidi Okafor's answer was lost; the retry, under the same key, synced as a replay, and the server applied it once",
                                held: rows[chidi]??.status == .synced && rows[chidi]??.latestOutcome == .replayed
                                    && applied[chidi.idempotencyKey] == 1),
            DemoOutcome.Promise(text: "Amaka Eze rests waiting for approval, with its request id, off the badge",
                                held: rows[amaka]??.status == .pendingApproval && rows[amaka]??.approvalRequestID != nil
                                    && tab.approvalCard?.count == 1),
            DemoOutcome.Promise(text: "Tramadol 50 mg is blocked, with the server's reason shown, and never applied",
                                held: rows[tramadol]??.status == .blocked
                                    && rows[tramadol]??.lastErrorMessage == "Only the owner may add a controlled substance."
                                    && applied[tramadol.idempotencyKey] == nil),
            DemoOutcome.Promise(text: "The badge counts the one row that needs a person; the tab counts two",
                                held: badge == 1 && tab.totalCount == 2),
            DemoOutcome.Promise(text: "The price edited on two devices was not overwritten: the edit settled conflicted with Ade's price shown, and was never applied",
                                held: conflicted?.status == .conflicted && conflicted?.conflict?.serverRevision == String(ades.revision)
                                    && applied[edit.idempotencyKey] == nil
                                    && conflictTab.conflictCard?.rows.first?.serverValue?.contains("14") == true
                                    && tab.conflictCard == nil),
            DemoOutcome.Promise(text: "Folake's choice replaced the conflicted edit and reached the server: 13.50 at the next revision",
                                held: rows[edit]??.status == .superseded && resolution.flatMap { rows[$0]??.status } == .synced
                                    && finalAntiseptic.map { String(decoding: $0.body, as: UTF8.self).contains("13.5") && $0.revision == ades.revision + 1 } == true),
            DemoOutcome.Promise(text: "Every write the server accepted was applied exactly once",
                                held: applied.values.allSatisfy { $0 == 1 } && applied.count == 4),
        ]
        for promise in promises {
            narrator.say(.check, (promise.held ? "✓ " : "✗ ") + promise.text, ["held": String(promise.held)])
        }
        if options.journal == nil { try? FileManager.default.removeItem(at: directory) }
        return DemoOutcome(promises: promises, journal: directory, lines: narrator.lines)
    }

    // MARK: The member's actions

    private static func save(_ request: OutboxRequest, on outbox: Outbox, labels: Labels, narrator: Narrator) async throws -> OperationID {
        let result = try await outbox.save(request)
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

    private static func waitUntilSettled(_ ids: [OperationID], outbox: Outbox, timeoutSeconds: Double) async -> Bool {
        let changes = outbox.changes()
        func settled() -> Bool {
            ids.allSatisfy { (try? outbox.operationState($0)).flatMap { $0.map { $0.status != .queued && $0.status != .syncing } } ?? false }
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                if settled() { return true }
                for await _ in changes where settled() { return true }
                return settled()
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeoutSeconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
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
        default:
            return "#\(event.seq) \(event.kind) \(event.operationID == nil ? "" : name)"
        }
    }

    static func describe(_ event: ServerEvent, labels: Labels) -> String {
        let name = event.idempotencyKey.flatMap(OperationID.init).map { labels[$0] } ?? "a request"
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

    static func product(_ id: String, _ name: String, price: Double) -> OutboxRequest {
        OutboxRequest(
            businessID: "folakes-pharmacy", operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"\#(id)","name":"\#(name)","price":\#(price)}"#.utf8),
            entityID: id, category: "Products", entityLabel: name, summary: "New product"
        )
    }

    static let business = "folakes-pharmacy"

    /// A price change to a product the server holds at `baseRevision`.
    static func priceEdit(_ id: String, _ name: String, price: Double, baseRevision: String) -> OutboxRequest {
        OutboxRequest(
            businessID: business, operationType: "product.update", method: "PATCH", endpoint: "/products/\(id)",
            payload: pricePatch(price), entityID: id, category: "Products", entityLabel: name,
            summary: "New price \(String(format: "%.2f", price))", baseRevision: baseRevision
        )
    }

    static func pricePatch(_ price: Double) -> Data {
        Data(#"{"price":\#(price)}"#.utf8)
    }

    static func employee(_ id: String, _ name: String, role: String) -> OutboxRequest {
        OutboxRequest(
            businessID: "folakes-pharmacy", operationType: "employee.create", endpoint: "/employees",
            payload: Data(#"{"id":"\#(id)","name":"\#(name)","role":"\#(role)"}"#.utf8),
            entityID: id, category: "Employees", entityLabel: name, summary: "New \(role)"
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

    subscript(id: OperationID) -> String {
        get { names.withLock { $0[id] } ?? String(id.idempotencyKey.prefix(8)) }
        set { names.withLock { $0[id] = newValue } }
    }
}

/// A network the demo can take down: offline, every request fails at once with no response.
final class Signal: OutboxTransport {
    private let transport: URLSessionTransport
    private let online = Atomic<Bool>(true)

    init(_ transport: URLSessionTransport) {
        self.transport = transport
    }

    var isOnline: Bool {
        get { online.load(ordering: .relaxed) }
        set { online.store(newValue, ordering: .relaxed) }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard isOnline else { throw URLError(.notConnectedToInternet) }
        return try await transport.send(request)
    }
}

/// Text `journal-inspect` writes, kept for the narration.
final class CapturedText: TextOutput {
    private let buffer = Mutex("")

    func write(_ text: String) {
        buffer.withLock { $0 += text }
    }

    var text: String { buffer.withLock { $0 } }
}
