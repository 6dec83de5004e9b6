public import Foundation
import IdempotencyClaims
import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness

/// Writes with files under a seeded storm: the signal coming and going, the app killed in the
/// middle of a segment, a grant, a completion or a write (and closed and launched again between
/// passes, the device restarted), the engine closed while a segment is out with the process
/// living on, every grant expiring mid-upload, the store and server answering 503, answers lost
/// after the server or store took the request (a completion's among them), grants refused for a
/// while and the member retrying, writes discarded, a week passing.
///
/// An ending happens inside the request a seeded fault chose (``UploadNetwork``), never at a
/// moment of the thread scheduler's: the network closes the engine there, and the storm awaits
/// the end of the old engine's pass (`waitForWorkerToStop()`: the pass awaits the upload run it
/// started beside its sends) before the next engine opens, so no two engines ever upload at
/// once; a request of the old engine after that fails the run. What the pass's other stream
/// (its sends beside the uploads) did by the ending is the scheduler's, so a seed's run may
/// differ there; every invariant holds either way. Nothing waits on wall time: the clock is a
/// ``ManualClock`` the storm moves, every wait is for a pass of an in-memory engine, and each
/// loop has a bound that fails the run with a message (requests per step, endings per step,
/// rounds to heal).
///
/// After every step, and after every open:
/// - the journal's new events read through ``HistoryAudit`` with the writes' requests: no write
///   sent before each of its files completed, no segment landed twice in the journal, no
///   completion before every segment landed, and the audit's promises about attempts;
/// - no write reached the server before each file it names was completed there as its bytes;
/// - every completed object's SHA-256 is its file's, and the object is the file;
/// - the journal never says a segment landed that the store does not hold with that ETag;
/// - each segment was stored at most once more than the copies the engine did not learn of
///   (the app ended before it journaled the landing, or the answer was lost): one segment sent
///   again per interruption, never one the journal says landed; none after its completion; and
///   an ending leaves at most one such copy (one segment is in flight at a time);
/// - no file a write still needs (every status but settled, a synced one for the keep period)
///   is missing or damaged; and after an open, no file is kept that no write needs.
///
/// Once the network heals, every write not discarded is synced, applied once.
public final class AttachmentSimulation {
    /// What a run did, and the first promise it broke, if any.
    public struct Report: Sendable {
        public var seed: UInt64
        public var writes = 0
        public var files = 0
        /// Files whose bytes an earlier file of the run had: kept once for both.
        public var sharedFiles = 0
        /// Engines ended inside a request (the app killed), and closed by the member between passes.
        public var kills = 0
        public var relaunches = 0
        public var segmentsStored = 0
        /// Segments stored more than once: each after an interruption in flight.
        public var segmentsSentAgain = 0
        public var requests = 0
        public var faults: [String: Int] = [:]
        /// What the audit saw: grants, segments landed, completions, refusals, retries...
        public var features: [String: Int] = [:]
        public var failure: String?
        public var trace: [String] = []

        /// The seed, the broken promise and the trace, ready to print.
        public var failureDescription: String {
            guard let failure else { return "seed \(seed): every invariant held" }
            let steps = trace.suffix(60).joined(separator: "\n  ")
            return "seed \(seed) broke an invariant: \(failure)\nreproduce with OUTBOX_SEED=\(seed)\nlast steps:\n  \(steps)"
        }
    }

    /// The segment size grants set: small, so files take several.
    static let segmentBytes: Int64 = 700
    /// The lifetime grants state; the engine uses 80% of it.
    static let grantLifetimeSeconds = 600.0
    static let operationType = "delivery.create"
    /// Endings in one step before the storm gives up on the engine coming to rest.
    static let endingsPerStepLimit = 60
    /// Rounds of the longest backoff after the network heals before a write not settled fails the run.
    static let healRounds = 40

    public let seed: UInt64
    let steps: Int
    var random: SeededRandom
    let scenario = SimulationScenario(uploads: AttachmentSimulation.operationType, retryPolicy: .standard)
    let root: URL
    let directory: URL
    let originals: URL
    let clock = ManualClock()
    let store: InMemoryObjectStore
    let server: InMemoryServer
    let network: UploadNetwork
    let ids: SeededIDs
    let encryptionKey: SealingKey?
    var audit: HistoryAudit
    var outbox: Outbox!
    var life: EngineLife!

    /// The writes in the order enqueued, the files each carries, and every file's bytes.
    var writes: [OperationID] = []
    var carried: [OperationID: [AttachmentID]] = [:]
    var bytes: [AttachmentID: Data] = [:]
    /// Each distinct content attached so far, in order: what a later file may reuse.
    var contents: [Data] = []
    var refusingGrants = false
    /// The journal's last seq when the files were last checked, and the engines opened by then.
    var checkedThrough: JournalSequence = .zero
    var opensChecked = 0
    var report: Report
    var trace: [String] = [] {
        didSet {
            if verbose, let line = trace.last { FileHandle.standardError.write(Data("attachment-sim \(seed): \(line)\n".utf8)) }
        }
    }
    let verbose = ProcessInfo.processInfo.environment["OUTBOX_SIM_VERBOSE"] != nil

    /// - Parameters:
    ///   - steps: the member's and the world's actions before the network heals.
    ///   - faultPercent: the share of requests meeting a fault while the network is not healed.
    public init(seed: UInt64, steps: Int = 40, faultPercent: Int = 25, directory: URL = FileManager.default.temporaryDirectory) {
        self.seed = seed
        self.steps = steps
        random = SeededRandom(seed: seed)
        root = directory.appendingPathComponent("outbox-attachment-sim-\(seed)-\(UUID().uuidString)")
        self.directory = root.appendingPathComponent("journal")
        originals = root.appendingPathComponent("originals")
        let clock = self.clock
        store = InMemoryObjectStore(now: { clock.now() })
        store.segmentSize = Self.segmentBytes
        store.lifetimeSeconds = Self.grantLifetimeSeconds
        server = InMemoryServer(claimClock: ManualClaimClock(), objectStore: store)
        network = UploadNetwork(seed: seed ^ 0xA77A_C4ED, faultPercent: faultPercent, server: server)
        ids = SeededIDs(seed: seed ^ 0x1D5)
        // One seed in four runs an encrypted journal.
        encryptionKey = seed % 4 == 0 ? try? SealingKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: seed >> ($0 % 8)) &+ UInt8($0) }) : nil
        audit = HistoryAudit(scenario: scenario)
        report = Report(seed: seed)
    }

    /// Runs the seed to its end, or to the first broken promise.
    public func run() async -> Report {
        defer { try? FileManager.default.removeItem(at: root) }
        do {
            try FileManager.default.createDirectory(at: originals, withIntermediateDirectories: true)
            try openEngine()
            try syncAudit()
            outbox.wake(.appLaunch)
            try await settle()
            for _ in 0..<steps {
                network.beginStep()
                try await takeStep()
                try await settle()
                try checkStep(everyWrite: network.lives != opensChecked)
                opensChecked = network.lives
            }
            try await heal()
            try checkFinal()
        } catch {
            report.failure = "\(error)"
        }
        if let outbox {
            outbox.close()
            await outbox.waitForWorkerToStop()
        }
        report.trace = trace
        report.kills = network.endings - report.relaunches
        report.requests = network.requestCount
        report.faults = Dictionary(uniqueKeysWithValues: network.faultsInjected.map { ($0.key.rawValue, $0.value) })
        report.features = audit.tally
        report.segmentsStored = store.totalPuts
        report.segmentsSentAgain = bytes.keys.reduce(0) { total, id in
            total + store.landedSegments(id).reduce(0) { $0 + max(0, store.puts(id, segment: $1) - 1) }
        }
        return report
    }

    // MARK: The engine's lives

    func openEngine() throws {
        var configuration = OutboxConfiguration(
            account: "member-42", retryPolicy: scenario.retryPolicy, clock: clock,
            operationPolicies: scenario.operationPolicies, durability: .processCrash, encryptionKey: encryptionKey
        )
        configuration.operationIDSource = { [ids] in ids.next() }
        let life = network.life()
        let engine = try Outbox(directory: directory, transport: life, configuration: configuration)
        // The opening (and the attempts it abandons) lands before the audit reads the journal.
        engine.untilWritesLanded()
        life.onEnd { [weak engine] in engine?.close() }
        outbox = engine
        self.life = life
    }

    /// The app ended (inside a request, or closed by the member): its engine's pass, and the
    /// upload run beside it, end before the next engine opens; then the journal's abandonments
    /// are read with the requests the ended process held, the segments the store holds and the
    /// journal does not say landed are noted, and the app launches.
    func reopen() async throws {
        await outbox.waitForWorkerToStop()
        try openEngine()
        try syncAudit()
        try noteUnlearnedSegments()
        try checkFilesCollected()
        outbox.wake(.appLaunch)
    }

    /// The member closes the app between passes and launches it again; `meanwhile` happens while
    /// it is closed.
    func relaunch(_ why: String, meanwhile: () -> Void = {}) async throws {
        trace.append(why)
        report.relaunches += 1
        network.end(life, "(closed)")
        meanwhile()
        try await reopen()
    }

    /// Lets the engine finish what it was set to do; an engine ended meanwhile is followed by
    /// the next one, which settles in turn.
    func settle() async throws {
        for _ in 0..<Self.endingsPerStepLimit {
            await outbox.settle()
            trace.append(contentsOf: network.takeEvents())
            if let problem = network.problems.first { throw InvariantBroken(problem) }
            guard outbox.isClosed else { return }
            try await reopen()
        }
        throw InvariantBroken("the app was ended \(Self.endingsPerStepLimit) times in one step and never came to rest")
    }

    /// Reads the journal's new events into the audit, with the writes' requests meanwhile.
    func syncAudit() throws {
        let events = try outbox.events(from: audit.lastSeq.next, limit: .max)
        let abandoned = Set(events.compactMap { event -> String? in
            guard case .attemptAbandoned = event.body else { return nil }
            return event.operationID?.idempotencyKey
        })
        try audit.read(events, exchanges: network.takeExchanges(abandoned: abandoned))
    }

    // MARK: The storm

    func takeStep() async throws {
        // A refusal lasts a few steps: the server's limits change back.
        if refusingGrants, random.chance(35) {
            refusingGrants = false
            trace.append("the server grants again")
            store.acceptGrants()
        }
        switch random.int(in: 0..<100) {
        case 0..<30: try await write()
        case 30..<38:
            trace.append(network.signal.flip(waking: outbox) ? "the signal returns" : "the signal drops")
        case 38..<52:
            let seconds = random.int(in: 1..<700)
            trace.append("advance \(seconds) s")
            clock.advance(by: Double(seconds))
        case 52..<54:
            trace.append("a week passes")
            clock.advance(by: 8 * 86_400)
        case 54..<59:
            trace.append("every grant handed out expires")
            store.expireGrants()
        case 59..<63:
            refusingGrants = true
            trace.append("the server refuses grants")
            store.refuseGrants(status: 413, message: "Photos may be at most 5 MB.")
        case 63..<70: try await retrySomething()
        case 70..<73: try await discardSomething()
        case 73..<80: try await relaunch("the member closes the app and opens it again")
        case 80..<83:
            let downtime = Double(random.int(in: 10..<600))
            try await relaunch("the device restarts") { clock.reboot(downtime: downtime) }
        default:
            trace.append("drain()")
            await outbox.drain()
        }
    }

    /// A delivery with files more often than not: empty ones, one byte, a segment's worth and
    /// one byte over, some the bytes of an earlier file; given as bytes, a file copied or a file
    /// moved.
    func write() async throws {
        let number = writes.count + 1
        var photos: [Attachment] = []
        var moved: [URL] = []
        for index in 0..<[0, 1, 1, 2, 3][random.int(in: 0..<5)] {
            let id = AttachmentID(uuid: random.uuid())
            let content: Data
            if random.chance(20), let earlier = random.pick(contents) {
                content = earlier
                report.sharedFiles += 1
            } else {
                let segment = Int(Self.segmentBytes)
                let size = [0, 1, segment - 1, segment, segment + 1, random.int(in: 2..<4_000)][random.int(in: 0..<6)]
                content = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.int(in: 0..<256)) })
                contents.append(content)
            }
            bytes[id] = content
            network.carries(id, sha256: SHA256Digest(of: content))
            let name = "photo-\(number)-\(index).jpg"
            switch random.int(in: 0..<4) {
            case 0, 1:
                photos.append(Attachment(id: id, bytes: content, contentType: "image/jpeg", name: name))
            case let way:
                let url = originals.appendingPathComponent(name)
                try content.write(to: url)
                photos.append(Attachment(id: id, file: url, moving: way == 3, contentType: "image/jpeg", name: name))
                if way == 3 { moved.append(url) }
            }
        }
        let names = photos.map { "\"\($0.id)\"" }.joined(separator: ",")
        let request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: Self.operationType, endpoint: "/deliveries",
            payload: Data(#"{"id":"d-\#(number)","photos":[\#(names)]}"#.utf8), category: "Deliveries",
            entityLabel: "Delivery \(number)", summary: "New delivery")
        let sizes = photos.map { "\($0.size ?? -1)" }.joined(separator: ", ")
        trace.append("#\(number): a delivery with " + (photos.isEmpty ? "no file" : "\(photos.count) file(s) of \(sizes) bytes"))
        let id = try await outbox.enqueue(request, attaching: photos)
        writes.append(id)
        audit.labels[id] = "#\(number)"
        carried[id] = photos.map(\.id)
        report.writes += 1
        report.files += photos.count
        // A file given to be moved is the journal's once the write is saved.
        if let left = moved.first(where: { FileManager.default.fileExists(atPath: $0.path) }) {
            throw InvariantBroken("#\(number) was saved and \(left.lastPathComponent), given to be moved, is still where it was")
        }
    }

    /// The writes whose status (as the journal's history shows it) is one of `statuses`.
    func writes(_ statuses: Set<OutboxStatus>) -> [OperationID] {
        writes.filter { id in audit.rows[id].map { statuses.contains($0.status) } ?? false }
    }

    func retrySomething() async throws {
        guard let id = random.pick(writes([.failed, .blocked])) else { return }
        trace.append("the member retries \(audit.labels[id] ?? "?")")
        try await outbox.retry(id)
        audit.personDid(.retry, to: id)
    }

    func discardSomething() async throws {
        guard let id = random.pick(writes([.queued, .failed, .blocked])) else { return }
        trace.append("the member discards \(audit.labels[id] ?? "?")")
        try await outbox.discard(id)
        audit.personDid(.discard, to: id)
    }

    /// The network heals and the server grants again: failed writes are retried and time passes
    /// until every write not discarded is synced.
    func heal() async throws {
        trace.append("the network heals")
        network.signal.heal()
        store.acceptGrants()
        outbox.wake(.connectivityRegained)
        for _ in 0..<Self.healRounds {
            try await settle()
            try checkStep(everyWrite: true)
            if writes.allSatisfy({ [.synced, .discarded].contains(audit.rows[$0]?.status) }) { return }
            for id in writes([.failed, .blocked]) {
                trace.append("the member retries \(audit.labels[id] ?? "?")")
                try await outbox.retry(id)
                audit.personDid(.retry, to: id)
            }
            clock.advance(by: scenario.retryPolicy.maxDelaySeconds)
            await outbox.drain()
        }
        let left = writes.filter { ![.synced, .discarded].contains(audit.rows[$0]?.status) }
        throw InvariantBroken("after the network healed, \(left.map { "\(audit.labels[$0] ?? "?") \(audit.rows[$0]?.status.rawValue ?? "unknown")" }) never settled")
    }
}
