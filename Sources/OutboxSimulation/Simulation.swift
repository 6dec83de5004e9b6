public import Foundation
import IdempotencyClaims
public import Outbox
import OutboxTesting
import OutboxTestSupport
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

    public init(
        steps: Int = 60,
        faultPercent: Int = 30,
        lanes: Int = 1,
        projectionCheckInterval: Int = 10,
        directory: URL = FileManager.default.temporaryDirectory
    ) {
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
    public var crashes: Int
    /// Compactions run, and the operations they compacted.
    public var compactions: Int
    public var compactedOperations: Int
    public var requests: Int
    public var faults: [String: Int]
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
/// One seed drives everything: the workload (enqueues, inline saves, the wake signals, sign-out
/// and sign-in, retries, discards, approval decisions, clock jumps, crashes), the network
/// (offline windows, latency, requests lost before the server, responses lost after it committed,
/// 5xx, 429, 401 expiries, captive portals, a slow finalizing request raced by its own retry)
/// and the operation ids. The engine is stepped to quiescence after every action (`settle`), so
/// a seed replays exactly. After every step the invariants are checked; then the network heals
/// and the run checks that everything reaches the state its scripted fate says, in time.
public final class Simulation {
    private struct Expectation {
        var fate: Fate
        var entity: String?
        var payload: Data
        var memberDiscarded = false
        var enqueuedAt: Int
    }

    private enum Failure: Error, CustomStringConvertible {
        case invariant(String)
        var description: String {
            switch self {
            case .invariant(let text): text
            }
        }
    }

    public let seed: UInt64
    public let options: SimulationOptions

    private var random: SeededRandom
    private let account = "member-42"
    private let directory: URL
    private let clock = ManualClock()
    private let serverClock = ManualClaimClock()
    private let session: SwitchableSession
    private let server: ModelServer
    private let network: SimulatedNetwork
    private let idSource: SeededIDs
    private var outbox: Outbox!
    private var expectations: [OperationID: Expectation] = [:]
    private var order: [OperationID] = []
    private var trace: [String] = [] {
        didSet {
            if verbose, let line = trace.last { FileHandle.standardError.write(Data("sim \(seed): \(line)\n".utf8)) }
        }
    }
    private let verbose = ProcessInfo.processInfo.environment["OUTBOX_SIM_VERBOSE"] != nil
    private var crashes = 0
    private var compactions = 0
    private var compactedOperations = 0
    private var payloadNumber = 0

    public init(seed: UInt64, options: SimulationOptions = SimulationOptions()) {
        self.seed = seed
        self.options = options
        random = SeededRandom(seed: seed)
        directory = options.directory.appendingPathComponent("outbox-sim-\(seed)-\(UUID().uuidString)")
        session = SwitchableSession(account: account)
        server = ModelServer(clock: serverClock)
        network = SimulatedNetwork(seed: seed ^ 0x5EED_0F_0E7, server: server, faultPercent: options.faultPercent)
        idSource = SeededIDs(seed: seed ^ 0x1D5)
    }

    /// Runs the seed to its end, or to the first broken invariant.
    public func run() async -> SimulationReport {
        defer { try? FileManager.default.removeItem(at: directory) }
        var failure: String?
        do {
            try openEngine()
            for step in 1...options.steps {
                try await takeStep()
                try checkInvariants(projections: step % options.projectionCheckInterval == 0)
            }
            try await heal()
        } catch {
            failure = "\(error)"
        }
        outbox?.close()
        server.finishParked()
        return SimulationReport(
            seed: seed, steps: trace.count, operations: expectations.count, crashes: crashes,
            compactions: compactions, compactedOperations: compactedOperations, requests: network.requestCount,
            faults: Dictionary(uniqueKeysWithValues: network.faultsInjected.map { ($0.key.rawValue, $0.value) }),
            failure: failure, trace: trace
        )
    }

    // MARK: The engine's life

    private func openEngine() throws {
        var configuration = OutboxConfiguration(
            account: account, clock: clock, session: session, maxConcurrentLanes: options.lanes,
            durability: .processCrash,
            // One seed in four runs an encrypted journal.
            encryptionKey: seed % 4 == 0 ? try SealingKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: seed >> ($0 % 8)) &+ UInt8($0) }) : nil
        )
        configuration.operationIDSource = { [idSource] in idSource.next() }
        let engine = try Outbox(directory: directory, transport: network, configuration: configuration)
        network.onCrash { engine.close() }
        outbox = engine
    }

    /// The process died: everything not committed is gone; the journal is reopened and the app
    /// launches again.
    private func crashAndReopen() async throws {
        crashes += 1
        outbox.close()
        await outbox.waitForWorkerToStop()
        try openEngine()
        outbox.wake(.appLaunch)
    }

    /// Lets the engine finish what it was set to do; a process that died meanwhile is reopened.
    /// Then the time requests spent on the wire passes, and the engine settles again.
    private func settle() async throws {
        while true {
            await outbox.settle()
            if outbox.isClosed {
                trace.append("  the process died mid-attempt; reopened")
                try await crashAndReopen()
                continue
            }
            let latency = network.takeLatency()
            guard latency > 0 else { return }
            clock.advance(by: latency)
            serverClock.advance(by: latency)
        }
    }

    // MARK: The workload

    private func takeStep() async throws {
        let roll = random.int(in: 0..<100)
        switch roll {
        case 0..<28: try await enqueue(inline: false)
        case 28..<36: try await enqueue(inline: true)
        case 36..<46:
            let reason = random.pick([WakeReason.appLaunch, .connectivityRegained, .foreground, .saveRetryable])!
            trace.append("wake(.\(reason))")
            outbox.wake(reason)
        case 46..<60:
            let seconds = Double(random.int(in: 1..<400))
            trace.append("advance \(Int(seconds)) s")
            clock.advance(by: seconds)
            serverClock.advance(by: seconds)
        case 60..<67:
            trace.append("drain()")
            await outbox.drain()
        case 67..<72:
            let online = !network.isOnline
            trace.append(online ? "the signal returns" : "the signal drops")
            network.setOnline(online)
            if online { outbox.wake(.connectivityRegained) }
        case 72..<76:
            if random.chance(50) {
                trace.append("the member signs out")
                session.signOut()
            } else {
                trace.append("the member signs in")
                session.signIn(account)
            }
        case 76..<79:
            trace.append("the session is refreshed")
            session.signIn(account)
            try await outbox.resumeSession()
        case 79..<83: try await retrySomething()
        case 83..<86: try await discardSomething()
        case 86..<89: try await decideSomething()
        case 89..<91:
            let hours = Double(random.int(in: 1..<9)) * (random.chance(50) ? 1 : -1)
            trace.append("the device clock jumps \(hours > 0 ? "+" : "")\(Int(hours)) h")
            clock.set(to: clock.now().addingTimeInterval(hours * 3600))
            // The app hears of the change (iOS posts significantTimeChangeNotification).
            outbox.wake(.clockChanged)
        case 91..<94:
            trace.append("the process is killed between steps")
            try await crashAndReopen()
        case 94..<96:
            let age = Double(random.int(in: 0..<3600))
            let result = try await outbox.compact(before: clock.now().addingTimeInterval(-age))
            compactions += 1
            compactedOperations += result.operations
            trace.append("compact rows settled over \(Int(age)) s ago: \(result.operations) operations, \(result.eventsRemoved) events")
        default:
            trace.append("the server finishes what it was finalizing")
            server.finishParked()
        }
        try await settle()
    }

    private func enqueue(inline: Bool) async throws {
        let fate: Fate = switch random.int(in: 0..<100) {
        case 0..<70: .normal
        case 70..<80: .approval
        case 80..<90: .reject
        default: .forbid
        }
        let entity = random.chance(60) ? "shelf-\(random.int(in: 1..<5))" : nil
        payloadNumber += 1
        let entityJSON = entity.map { #","entity":"\#($0)""# } ?? ""
        let payload = Data(#"{"n":\#(payloadNumber),"fate":"\#(fate.rawValue)"\#(entityJSON)}"#.utf8)
        let request = OutboxRequest(
            businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products", payload: payload,
            entityID: entity, category: "Products", entityLabel: "Product \(payloadNumber)", summary: "New product"
        )
        let id: OperationID
        if inline {
            let result = try await outbox.save(request)
            switch result {
            case .synced(let response): id = try resolveID(response: response, payload: payload)
            case .queued(let queued), .blocked(let queued, _, _): id = queued
            case .pendingApproval, .rejected: id = try resolveID(response: nil, payload: payload)
            }
            trace.append("save #\(payloadNumber) (\(fate)\(entity.map { ", \($0)" } ?? "")) -> \(result.traceText)")
        } else {
            id = try await outbox.enqueue(request)
            trace.append("enqueue #\(payloadNumber) (\(fate)\(entity.map { ", \($0)" } ?? ""))")
        }
        expectations[id] = Expectation(fate: fate, entity: entity, payload: payload, enqueuedAt: order.count)
        order.append(id)
    }

    /// The id of the operation just saved with `payload`: the newest one holding it.
    private func resolveID(response: TransportResponse?, payload: Data) throws -> OperationID {
        let events = try outbox.events(from: 1, limit: .max)
        for event in events.reversed() {
            if case .enqueued(let enqueued) = event.body, enqueued.request.payload == payload, let id = event.operationID {
                return id
            }
        }
        throw Failure.invariant("a save that returned has no enqueued event")
    }

    private func rows(_ statuses: Set<OutboxStatus>) throws -> [OperationID] {
        try order.filter { id in try outbox.operationState(id).map { statuses.contains($0.status) } ?? false }
    }

    private func retrySomething() async throws {
        guard let id = random.pick(try rows([.failed, .blocked])) else { return }
        trace.append("the member retries \(label(id))")
        try await outbox.retry(id)
    }

    private func discardSomething() async throws {
        guard let id = random.pick(try rows([.queued, .failed, .blocked])) else { return }
        trace.append("the member discards \(label(id))")
        try await outbox.discard(id)
        expectations[id]?.memberDiscarded = true
    }

    private func decideSomething() async throws {
        guard let id = random.pick(try rows([.pendingApproval])) else { return }
        let approved = random.chance(60)
        trace.append("the owner \(approved ? "approves" : "rejects") \(label(id))")
        try await outbox.recordApprovalDecision(id, approved: approved)
    }

    private func describe(_ ids: [OperationID]) throws -> String {
        let paused = try outbox.engineState().isPaused
        let rows = try ids.prefix(3).map { id -> String in
            guard let state = try outbox.operationState(id) else { return "\(label(id)) missing" }
            let due = state.nextAttemptAt.map { "due in \(Int($0.timeIntervalSince(clock.now()))) s" } ?? "due now"
            return "\(label(id)) \(state.status) \(due), \(state.attemptCount) attempts, last \(state.lastErrorCode ?? "-")"
        }
        return rows.joined(separator: "; ") + (paused ? " (worker paused)" : "") + ", next wake \(String(describing: outbox.nextWake))"
    }

    private func label(_ id: OperationID) -> String {
        "#\((expectations[id]?.enqueuedAt ?? -1) + 1)"
    }

    // MARK: Healing

    /// The network heals and the session is valid: from here everything must settle, in time.
    private func heal() async throws {
        trace.append("the network heals; the session is valid")
        network.heal()
        server.finishParked()
        session.signIn(account)
        try await outbox.resumeSession()
        outbox.wake(.connectivityRegained)
        try await settle()
        let cap = RetryPolicy.standard.maxDelaySeconds
        for _ in 0..<400 {
            try checkInvariants(projections: false)
            let stuckHeads = try queuedLaneHeads()
            guard !stuckHeads.isEmpty else { break }
            // The worker's own word for its timer: the timer task may not sleep on the clock yet.
            guard let deadline = outbox.nextWake else {
                throw Failure.invariant("stall: \(stuckHeads.count) queued rows can be sent and no timer is armed: \(try describe(stuckHeads))")
            }
            if deadline.timeIntervalSince(clock.now()) > cap + 1 {
                throw Failure.invariant("the timer sleeps \(Int(deadline.timeIntervalSince(clock.now()))) s, past the \(Int(cap)) s cap, with rows queued")
            }
            clock.set(to: max(clock.now(), deadline))
            serverClock.advance(by: cap)
            try await settle()
        }
        if let left = try queuedLaneHeads().first {
            throw Failure.invariant("liveness: \(label(left)) is still queued after the network healed")
        }
        try checkInvariants(projections: true)
        try checkFates()
    }

    /// Queued rows first in their lane: the rows a healthy network must move.
    private func queuedLaneHeads() throws -> [OperationID] {
        let reader = outbox!
        return try order.filter { id in
            guard let state = try reader.operationState(id), state.status == .queued else { return false }
            return try reader.laneHead(state.lane) == id
        }
    }

    // MARK: Invariants

    private func checkInvariants(projections: Bool) throws {
        let counts = server.appliedCounts
        // No operation applied twice.
        if let (key, count) = counts.first(where: { $0.value > 1 }) {
            throw Failure.invariant("key \(key) was applied \(count) times")
        }
        let applied = server.applied
        for id in order {
            // No enqueue that returned is ever lost.
            guard let state = try outbox.operationState(id), let expected = expectations[id] else {
                throw Failure.invariant("\(label(id)) returned from enqueue and is gone from the journal")
            }
            // Every synced operation was applied exactly once, with the bytes it was saved with.
            if state.status == .synced {
                guard counts[id.idempotencyKey] == 1,
                    let record = applied.first(where: { $0.key == id.idempotencyKey })
                else {
                    throw Failure.invariant("\(label(id)) is synced but the server applied it \(counts[id.idempotencyKey] ?? 0) times")
                }
                guard record.body == expected.payload else {
                    throw Failure.invariant("\(label(id)) reached the server with other bytes than it was saved with")
                }
            }
        }
        // Per entity, the server applied writes in the order they were enqueued (a write the
        // member discarded while its first copy was still finalizing may land late: it is out of
        // the lane's order by the member's choice).
        let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($0.element.idempotencyKey, $0.offset) })
        var lastByEntity: [String: Int] = [:]
        for record in applied {
            guard let entity = record.entity, let index = position[record.key] else { continue }
            guard let id = OperationID(record.key), expectations[id]?.memberDiscarded != true else { continue }
            if let last = lastByEntity[entity], last > index {
                throw Failure.invariant("on \(entity) the server applied #\(index + 1) after #\(last + 1)")
            }
            lastByEntity[entity] = index
        }
        if projections {
            // The projections equal a rebuild, and every status came by a legal transition.
            let mismatches = try outbox.projectionMismatches()
            if let first = mismatches.first {
                throw Failure.invariant("projections differ from a rebuild: \(first)")
            }
        }
    }

    /// At the end of a healed run every operation is where its scripted fate says.
    private func checkFates() throws {
        for id in order {
            guard let expected = expectations[id], let state = try outbox.operationState(id) else { continue }
            let status = state.status
            var allowed: Set<OutboxStatus>
            switch expected.fate {
            case .normal: allowed = [.synced]
            case .approval: allowed = [.pendingApproval, .synced, .failed]
            case .reject: allowed = [.failed, .withdrawn]
            case .forbid: allowed = [.blocked]
            }
            if expected.memberDiscarded { allowed = [.discarded] }
            if status == .queued, try outbox.laneHead(state.lane) != id {
                allowed.insert(.queued)  // behind a lane head that waits for a person
            }
            guard allowed.contains(status) else {
                throw Failure.invariant("\(label(id)) (\(expected.fate)) ended \(status), expected one of \(allowed.map(\.rawValue).sorted())")
            }
        }
    }
}

extension SaveResult {
    var traceText: String {
        switch self {
        case .synced: "synced"
        case .pendingApproval: "sent for approval"
        case .queued: "queued"
        case .rejected(let code, _): "rejected (\(code))"
        case .blocked(_, let code, _): "blocked (\(code))"
        }
    }
}
