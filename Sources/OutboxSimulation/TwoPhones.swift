public import Foundation
import IdempotencyClaims
import Outbox
import OutboxAudit
import OutboxTesting
import OutboxWire
import TestHarness

/// Two phones of one business, each its own engine and journal, against one model server:
/// both edit the server's records, pull, lose the network, are killed mid-attempt, meet 401s,
/// 5xx, 429s, captive portals and answers lost after the server committed; another device edits
/// too. Then the network heals, each phone's conflicts are settled by the member (the server's
/// version kept), both drain and pull to the feed's end with nothing pending, and then every
/// record's view on each phone is the server's record: value and revision, the same on both.
public final class TwoPhoneSimulation {
    /// One phone: its journal, clock, network and engine.
    final class Phone {
        let name: String
        let directory: URL
        let clock = ManualClock()
        let network: SimulatedNetwork
        let account: String
        let session: SwitchableSession
        var outbox: Outbox!
        var crashes = 0

        init(name: String, directory: URL, network: SimulatedNetwork, account: String) {
            self.name = name
            self.directory = directory
            self.network = network
            self.account = account
            session = SwitchableSession(account: account)
        }
    }

    public let seed: UInt64
    let server: ModelServer
    let serverClock = ManualClaimClock()
    let phones: [Phone]
    var random: SeededRandom
    let steps: Int
    let scenario: SimulationScenario
    let pull: PullConfiguration
    var trace: [String] = []
    var edits = 0
    var pulls = 0
    var payloadNumber = 0

    /// - Parameters:
    ///   - steps: the member's and the world's actions before the network heals.
    ///   - faultPercent: the share of requests meeting a fault while the network is not healed.
    public init(seed: UInt64, steps: Int = 60, faultPercent: Int = 20, directory: URL = FileManager.default.temporaryDirectory) {
        self.seed = seed
        self.steps = steps
        random = SeededRandom(seed: seed)
        var rules = SeededRandom(seed: seed ^ 0x2_5CE7)
        scenario = SimulationScenario(random: &rules)
        var pullRandom = SeededRandom(seed: seed ^ 0x2_9011)
        pull = Simulation.pullConfiguration(random: &pullRandom)
        let server = ModelServer(clock: serverClock, maxLimit: [2, 5, 1_000][Int(seed % 3)])
        self.server = server
        let root = directory.appendingPathComponent("outbox-two-phones-\(seed)-\(UUID().uuidString)")
        phones = ["A", "B"].enumerated().map { index, name in
            Phone(name: name, directory: root.appendingPathComponent(name),
                  network: SimulatedNetwork(seed: seed ^ (0x70_4E_00 + UInt64(index)), server: server, faultPercent: faultPercent),
                  account: "member-\(name)")
        }
    }

    /// What the run came to.
    public struct Report: Sendable {
        public var seed: UInt64
        public var edits: Int
        public var pulls: Int
        public var crashes: Int
        public var failure: String?
        public var trace: [String]
    }

    /// Runs the seed to its end, or to the first broken promise.
    public func run() async -> Report {
        defer { for phone in phones { try? FileManager.default.removeItem(at: phone.directory.deletingLastPathComponent()) } }
        var failure: String?
        trace.append("\(scenario); pulls \(pull.pageSize) changes a page from a server serving at most \(server.maxLimit)")
        do {
            for phone in phones {
                try open(phone)
                try await settle(phone)
            }
            for _ in 0..<steps { try await step() }
            try await heal()
            try checkConverged()
        } catch {
            failure = "\(error)"
        }
        for phone in phones { phone.outbox?.close() }
        server.finishParked()
        return Report(seed: seed, edits: edits, pulls: pulls, crashes: phones.reduce(0) { $0 + $1.crashes }, failure: failure, trace: trace)
    }

    // MARK: The phones' lives

    private func open(_ phone: Phone) throws {
        var configuration = OutboxConfiguration(
            account: phone.account, retryPolicy: scenario.retryPolicy, clock: phone.clock, session: phone.session,
            operationPolicies: scenario.operationPolicies, durability: .processCrash
        )
        configuration.recordTypes = SimulationScenario.recordTypes
        configuration.pull = pull
        let engine = try Outbox(directory: phone.directory, transport: phone.network, configuration: configuration)
        engine.untilWritesLanded()
        phone.network.onCrash { engine.close() }
        phone.outbox = engine
        engine.wake(.appLaunch)
    }

    /// Lets the phone's engine finish what it was set to do; a process that died meanwhile is
    /// opened again. Then the time its requests spent on the wire passes, and it settles again.
    private func settle(_ phone: Phone) async throws {
        while true {
            await phone.outbox.settle()
            if phone.outbox.isClosed {
                phone.crashes += 1
                trace.append("  phone \(phone.name) died mid-attempt; reopened")
                phone.outbox.close()
                await phone.outbox.waitForWorkerToStop()
                try open(phone)
                continue
            }
            let latency = phone.network.takeLatency()
            guard latency > 0 else { return }
            serverClock.advance(by: latency)
            phone.clock.advance(by: latency)
        }
    }

    private func step() async throws {
        let phone = random.pick(phones)!
        switch random.int(in: 0..<100) {
        case 0..<45:
            try await edit(on: phone)
        case 45..<65:
            try await pullNow(phone)
        case 65..<75:
            let online = phone.network.signal.flip(waking: phone.outbox)
            trace.append("phone \(phone.name) \(online ? "finds the network" : "loses the network")")
            try await settle(phone)
        case 75..<85:
            let item = random.pick(ModelServer.itemNames)!
            let revision = try server.editElsewhere(item, price: random.int(in: 1..<100))
            trace.append("another device changes \(item) on the server (now revision \(revision))")
        case 85..<93:
            try await settleConflicts(on: phone)
        default:
            let seconds = Double(random.int(in: 30..<900))
            trace.append("\(Int(seconds)) s pass")
            serverClock.advance(by: seconds)
            for each in phones {
                each.clock.advance(by: seconds)
                try await settle(each)
            }
        }
        try await resumeIfPaused(phone)
    }

    /// The member edits one of the server's records: a price (`PATCH`) or the whole record
    /// (`PUT`), against the base's revision as it is sent when the phone has a base, else the
    /// revision the records start at.
    private func edit(on phone: Phone) async throws {
        let item = random.pick(ModelServer.itemNames)!
        let draft = random.chance(45)
        payloadNumber += 1
        let price = random.int(in: 1..<100)
        let note = draft ? #","note":"draft \#(payloadNumber) on \#(phone.name)""# : ""
        let payload = Data(#"{"n":\#(payloadNumber),"entity":"\#(item)","price":\#(price)\#(note),"fate":"normal"}"#.utf8)
        let key = Simulation.itemKey(item)
        var request = OutboxRequest(
            businessID: SimulationScenario.business, operationType: draft ? SimulationScenario.draftEdit : SimulationScenario.priceEdit,
            method: draft ? "PUT" : "PATCH", endpoint: "/items/\(item)", payload: payload, entityID: item,
            category: "Items", entityLabel: "Item \(item)", summary: draft ? "Draft" : "New price", baseRevision: "1"
        )
        if try phone.outbox.record(key)?.server != nil {
            request.baseRevision = nil
            request.revisionFrom = key
        }
        let value = Data(#"{"item":"\#(item)","n":\#(payloadNumber)\#(note),"price":\#(price)}"#.utf8)
        _ = try await phone.outbox.enqueue(request, changing: [.put(key, value)])
        edits += 1
        trace.append("phone \(phone.name) edits \(item) (#\(payloadNumber), \(draft ? "draft" : "price") \(price))")
        try await settle(phone)
    }

    /// The app asks for a pull; answers whether it reached the feed's end.
    @discardableResult
    private func pullNow(_ phone: Phone) async throws -> Bool {
        pulls += 1
        let report = try? await phone.outbox.pull()
        try await settle(phone)
        let reached = report?.feed(SimulationScenario.business)?.reachedEnd ?? false
        trace.append("phone \(phone.name) pulls\(reached ? ", to the feed's end" : "")")
        return reached
    }

    /// The member settles each conflicted write on the phone by keeping the server's version.
    private func settleConflicts(on phone: Phone) async throws {
        for row in try phone.outbox.ledger(LedgerQuery(limit: .max)).entries where row.status == .conflicted {
            _ = try await phone.outbox.resolveConflict(row.operationID, keeping: .theirs)
            trace.append("phone \(phone.name) keeps the server's version for \(row.operationID)")
        }
        try await settle(phone)
    }

    /// The member drops each write the server refused or that gave up: a failed or blocked row
    /// holds its lane until a person decides.
    private func discardRefused(on phone: Phone) async throws {
        for row in try phone.outbox.ledger(LedgerQuery(limit: .max)).entries where row.status == .failed || row.status == .blocked {
            try await phone.outbox.discard(row.operationID)
            trace.append("phone \(phone.name) discards \(row.operationID) (\(row.status))")
        }
        try await settle(phone)
    }

    /// A 401 paused the phone's worker: the member signs in again.
    private func resumeIfPaused(_ phone: Phone) async throws {
        guard try phone.outbox.workerPause() != nil else { return }
        try await phone.outbox.resumeSession()
        trace.append("phone \(phone.name): the member signs in again")
        try await settle(phone)
    }

    // MARK: Healing, and what must hold

    /// The network heals: from here every write ends and every phone catches up.
    private func heal() async throws {
        trace.append("the network heals")
        server.finishParked()
        for phone in phones {
            phone.network.signal.heal()
            phone.outbox.wake(.connectivityRegained)
        }
        for round in 0..<60 {
            var busy = false
            for phone in phones {
                try await resumeIfPaused(phone)
                try await settleConflicts(on: phone)
                try await discardRefused(on: phone)
                let waiting = try phone.outbox.ledger(LedgerQuery(limit: .max)).entries.filter {
                    [.queued, .syncing, .conflicted, .pendingApproval].contains($0.status)
                }
                if !waiting.isEmpty { busy = true }
            }
            if !busy {
                for phone in phones {
                    var reached = false
                    for _ in 0..<5 where !reached {
                        passTime(600)
                        try await settle(phone)
                        reached = try await pullNow(phone)
                    }
                    guard reached else { throw InvariantBroken("liveness: phone \(phone.name) did not reach the feed's end on the healed network") }
                }
                // A pull may have brought a conflict to a write on its way: one more round then.
                let settled = try phones.allSatisfy { phone in
                    try phone.outbox.ledger(LedgerQuery(limit: .max)).entries.allSatisfy { ![.queued, .syncing, .conflicted].contains($0.status) }
                }
                if settled { return }
            }
            passTime(Double(round + 1) * 60)
            for phone in phones { try await settle(phone) }
        }
        let left = try phones.map { phone in
            "phone \(phone.name): " + (try phone.outbox.ledger(LedgerQuery(limit: .max)).entries
                .filter { [.queued, .syncing, .conflicted, .pendingApproval].contains($0.status) }
                .map { "\($0.operationID) \($0.status) after \($0.attempts) attempts (\($0.latestOutcome)), waiting on \(String(describing: try phone.outbox.operation($0.operationID)?.waitingOn))" }.joined(separator: ", "))
        }
        throw InvariantBroken("liveness: the phones' writes did not all end on the healed network: \(left.joined(separator: "; "))")
    }

    private func passTime(_ seconds: Double) {
        serverClock.advance(by: seconds)
        for phone in phones { phone.clock.advance(by: seconds) }
    }

    /// Every record's view on each phone is the server's record, value and revision, with
    /// nothing of the member's left over it.
    private func checkConverged() throws {
        let held = server.currentRecords.filter { $0.key.type == SimulationScenario.itemType }
        for phone in phones {
            for (key, (revision, json)) in held.sorted(by: { $0.key < $1.key }) {
                guard let record = try phone.outbox.record(key), let base = record.server else {
                    throw InvariantBroken("phone \(phone.name): \(key) has no base; the server holds it at revision \(revision)")
                }
                let expected = json.flatMap(Simulation.reencoded).map { SHA256Digest(of: $0) }
                guard base.revision == UInt64(revision), base.value.map({ SHA256Digest(of: $0) }) == expected else {
                    throw InvariantBroken("phone \(phone.name): \(key)'s base is at revision \(base.revision); the server holds it at revision \(revision)")
                }
                guard record.sync.pending.isEmpty, record.sync.confirmed.isEmpty, record.sync.conflict == nil, record.value == base.value else {
                    throw InvariantBroken("phone \(phone.name): \(key) shows \(record.sync) over the server's record with nothing pending")
                }
            }
        }
        trace.append("both phones show the server's \(held.count) records")
    }
}
