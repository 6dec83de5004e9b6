public import Foundation
import IdempotencyClaims
import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness
import Synchronization

/// How a simulation runs.
public struct SimulationOptions: Sendable {
    /// Workload steps before the network heals.
    public var steps: Int
    /// The chance, in percent, that a request meets a network fault while the network is unhealed.
    public var faultPercent: Int
    /// `maxConcurrentLanes` of the engine. At 1 a run is exactly reproducible from its seed.
    public var lanes: Int
    /// Compare the projections with a rebuild every this many steps (and at the end).
    public var projectionCheckInterval: Int
    /// Where journals go; each run uses (and removes) a fresh directory inside.
    public var directory: URL
    /// Whether the server is now and then restored from an older backup (a new epoch, revisions
    /// going back). On by default; `OUTBOX_SIM_RESTORES=0` turns it off.
    public var restores: Bool

    public init(
        steps: Int = 60,
        faultPercent: Int = 30,
        lanes: Int = 1,
        projectionCheckInterval: Int = 10,
        directory: URL = FileManager.default.temporaryDirectory,
        restores: Bool = ProcessInfo.processInfo.environment["OUTBOX_SIM_RESTORES"] != "0"
    ) {
        self.restores = restores
        self.steps = steps
        self.faultPercent = faultPercent
        self.lanes = lanes
        self.projectionCheckInterval = projectionCheckInterval
        self.directory = directory
    }
}

/// What one seed's run did, and the first invariant it broke, if any.
public struct SimulationReport: Sendable {
    public var seed: UInt64
    public var steps: Int
    public var operations: Int
    /// The member's records the run wrote, confirmed or wrote locally.
    public var records: Int
    public var crashes: Int
    /// Compactions run, and the operations they compacted.
    public var compactions: Int
    public var compactedOperations: Int
    public var requests: Int
    /// The pull: feed pages applied, resnapshots swapped in, the server's tombstone expiries and
    /// restores, and writes turned conflicted because their record was deleted on the server.
    public var pagesPulled: Int
    public var resnapshots: Int
    public var tombstonesExpired: Int
    public var restores: Int
    public var deletedOnServer: Int
    public var faults: [String: Int]
    /// How often each intent feature came up: conflicts, rebases, resolutions, corrections,
    /// coalesced writes, dependents, double taps, rows given up on, edits from another device,
    /// and the records' (writes, deletes, rollbacks, holds, chained revisions, local writes,
    /// acknowledgements, conflicts shown by their rule).
    public var features: [String: Int]
    /// The first broken invariant, with the steps that led there; `nil` when every one held.
    public var failure: String?
    /// Every step taken, in order, up to the failure if any.
    public var trace: [String]

    /// The seed, the broken invariant and the trace, ready to print.
    public var failureDescription: String {
        guard let failure else { return "seed \(seed): every invariant held" }
        let steps = trace.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
        return "seed \(seed) broke an invariant: \(failure)\nreproduce with OUTBOX_SEED=\(seed)\nsteps:\n\(steps)"
    }
}

/// A seeded, deterministic simulation of the whole engine under faults.
///
/// One seed drives everything: the engine's rules (conflict rules and coalescing per edit type,
/// a retry policy that gives up or not), the workload (creates, edits against a revision or the
/// record's base, deletes, each changing the member's records in its own commit, dependent
/// writes, inline saves, stable ids saved twice, local-only drafts, the wake signals, sign-out
/// and sign-in, retries, discards, approval decisions, conflict resolutions and corrections,
/// acknowledged rollbacks, clock jumps, crashes), the pull (the app's `pull()`s, the server
/// forgetting old changes, restores when asked for), another device editing and deleting the
/// same records on the server, the network (offline
/// windows, latency, requests lost before the server, responses lost after it committed, 5xx,
/// 429, 401 expiries, captive portals, a slow finalizing request raced by its own retry) and the
/// operation ids. The engine is stepped to quiescence after every action (`settle`), so a seed
/// replays exactly. After every step the invariants are checked, the journal's new events
/// against the member's actions, the rules and the wire (``HistoryAudit``); then the network
/// heals and the run checks that everything reaches the state its scripted fate says, in time.
public final class Simulation {
    /// What the member wrote: what the server will do with it, and the request as saved.
    struct Expectation {
        var kind: WriteKind
        var fate: Fate
        var request: OutboxRequest
        var enqueuedAt: Int
        /// The records it changes, as the member made them (or as they moved to it).
        var changes: [RecordChange]
    }

    enum WriteKind {
        /// A product, created (`POST /products`), perhaps on a shelf's lane.
        case create
        /// A stock movement of a product, sent only after the product's create (`dependsOn`).
        case movement
        /// A change to a record the server holds, against the revision the member knows.
        case edit
        /// A product deleted (`DELETE /products/<id>`), after its create in the record's order.
        case delete
    }

    public let seed: UInt64
    public let options: SimulationOptions

    var random: SeededRandom
    /// What the workload draws for records (their values, deletes, `revisionFrom`, local drafts,
    /// acknowledgements): a stream of its own, so the draws above mean what they did before.
    var recordRandom: SeededRandom
    /// What the workload draws for the pull (the app's pulls, deletes elsewhere, the server's
    /// expiry, backups and restores): a stream of its own likewise.
    var pullRandom: SeededRandom
    let pull: PullConfiguration
    let scenario: SimulationScenario
    let account = "member-42"
    let directory: URL
    let clock = ManualClock()
    let serverClock = ManualClaimClock()
    let session: SwitchableSession
    let server: ModelServer
    let network: SimulatedNetwork
    let idSource: SeededIDs
    /// The app's own stable ids, made when a form opens.
    let stableIDs: SeededIDs
    var outbox: Outbox!
    var audit: HistoryAudit
    var expectations: [OperationID: Expectation] = [:]
    var order: [OperationID] = []
    /// Operations the invariants looked at since they were made, and the journal's last seq then.
    var checked: Set<OperationID> = []
    var checkedThrough: JournalSequence = .zero
    /// Products created, for the stock movements that depend on them.
    var products: [(id: OperationID, product: String)] = []
    /// The revision of each record as the member learned it from a conflict.
    var revisionsFromConflicts: [String: Int] = [:]
    /// The latest request saved under a stable id, with its record changes: what a double tap
    /// or a retry after a crash saves again.
    var lastStableRequest: (request: OutboxRequest, changes: [RecordChange], id: OperationID)?
    /// Products the member chose to delete.
    var deletedProducts: Set<String> = []
    /// The highest revision of each record's base seen so far, across crashes.
    var highestBase: [RecordKey: (epoch: UInt64, revision: UInt64)] = [:]
    /// How often the records' promises were seen kept, for the report.
    var recordTally: [String: Int] = [:]
    var trace: [String] = [] {
        didSet {
            if verbose, let line = trace.last { FileHandle.standardError.write(Data("sim \(seed): \(line)\n".utf8)) }
        }
    }
    let verbose = ProcessInfo.processInfo.environment["OUTBOX_SIM_VERBOSE"] != nil
    var crashes = 0
    var compactions = 0
    var backgroundDrains = 0
    var backgroundExpiries = 0
    var compactedOperations = 0
    var doubleTaps = 0
    var payloadNumber = 0

    public init(seed: UInt64, options: SimulationOptions = SimulationOptions()) {
        self.seed = seed
        self.options = options
        random = SeededRandom(seed: seed)
        recordRandom = SeededRandom(seed: seed ^ 0x2EC0_2D5)
        pullRandom = SeededRandom(seed: seed ^ 0x9_0111)
        pull = Self.pullConfiguration(random: &pullRandom)
        let maxLimit = [2, 5, 1_000][pullRandom.int(in: 0..<3)]
        var rules = SeededRandom(seed: seed ^ 0x5CE_7A61_0)
        scenario = SimulationScenario(random: &rules)
        audit = HistoryAudit(scenario: scenario)
        directory = options.directory.appendingPathComponent("outbox-sim-\(seed)-\(UUID().uuidString)")
        session = SwitchableSession(account: account)
        server = ModelServer(clock: serverClock, maxLimit: maxLimit)
        network = SimulatedNetwork(seed: seed ^ 0x5EED_0F_0E7, server: server, faultPercent: options.faultPercent)
        idSource = SeededIDs(seed: seed ^ 0x1D5)
        stableIDs = SeededIDs(seed: seed ^ 0x57AB_1E)
    }

    /// Runs the seed to its end, or to the first broken invariant.
    public func run() async -> SimulationReport {
        defer { try? FileManager.default.removeItem(at: directory) }
        var failure: String?
        trace.append("\(scenario); pulls \(pull.pageSize) changes a page from a server serving at most \(server.maxLimit)")
        do {
            try openEngine()
            for step in 1...options.steps {
                let before = (crashes, compactions)
                try await takeStep()
                // Every row after a crash or a compaction, and with the projections; otherwise the
                // rows with new events. Every record after a crash, and with the projections;
                // otherwise the records the new events touched.
                let projections = step % options.projectionCheckInterval == 0
                try checkInvariants(projections: projections, everyRow: projections || before != (crashes, compactions),
                                    everyRecord: projections || before.0 != crashes)
            }
            try await heal()
        } catch {
            failure = "\(error)"
        }
        outbox?.close()
        server.finishParked()
        var features = audit.tally
        features["double taps"] = doubleTaps
        features["background drains"] = backgroundDrains
        features["background drains expired"] = backgroundExpiries
        features["edits from another device"] = server.editsElsewhere
        features["records deleted by another device"] = server.deletesElsewhere
        features["feed requests"] = network.feedRequestCount
        features["kills holding a feed or snapshot page"] = network.feedKills
        features.merge(recordTally, uniquingKeysWith: +)
        return SimulationReport(
            seed: seed, steps: trace.count, operations: expectations.count, records: audit.records.count, crashes: crashes,
            compactions: compactions, compactedOperations: compactedOperations, requests: network.requestCount,
            pagesPulled: audit.tally["pages pulled"] ?? 0, resnapshots: audit.tally["resnapshots"] ?? 0,
            tombstonesExpired: server.tombstonesExpired, restores: server.restores, deletedOnServer: audit.tally["deleted on the server"] ?? 0,
            faults: Dictionary(uniqueKeysWithValues: network.faultsInjected.map { ($0.key.rawValue, $0.value) }),
            features: features, failure: failure, trace: trace
        )
    }

    // MARK: The engine's life

    func openEngine() throws {
        var configuration = OutboxConfiguration(
            account: account, retryPolicy: scenario.retryPolicy, clock: clock, session: session,
            maxConcurrentLanes: options.lanes, operationPolicies: scenario.operationPolicies,
            durability: .processCrash,
            // One seed in four runs an encrypted journal.
            encryptionKey: seed % 4 == 0 ? try SealingKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: seed >> ($0 % 8)) &+ UInt8($0) }) : nil
        )
        configuration.operationIDSource = { [idSource] in idSource.next() }
        configuration.recordTypes = SimulationScenario.recordTypes
        configuration.pull = pull
        let engine = try Outbox(directory: directory, transport: network, configuration: configuration)
        // The opening lands on the writer's queue while the app goes on; the workload's reads
        // compare the journal before and after each step, so they start once it has landed.
        engine.untilWritesLanded()
        network.onCrash { engine.close() }
        outbox = engine
    }

    /// The process died: everything not committed is gone; the journal is reopened and the app
    /// launches again.
    func crashAndReopen() async throws {
        crashes += 1
        outbox.close()
        await outbox.waitForWorkerToStop()
        try openEngine()
        outbox.wake(.appLaunch)
    }

    /// Lets the engine finish what it was set to do; a process that died meanwhile is reopened.
    /// Then the time requests spent on the wire passes, and the engine settles again.
    func settle() async throws {
        while true {
            await outbox.settle()
            if outbox.isClosed {
                trace.append("  the process died mid-attempt; reopened")
                try await crashAndReopen()
                continue
            }
            let latency = network.takeLatency()
            guard latency > 0 else { return }
            // The server's clock first: the device's fires the timer.
            serverClock.advance(by: latency)
            clock.advance(by: latency)
        }
    }

    func label(_ id: OperationID) -> String {
        "#\((expectations[id]?.enqueuedAt ?? -1) + 1)"
    }
}
