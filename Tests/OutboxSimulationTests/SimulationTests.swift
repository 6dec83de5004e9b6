import Foundation
import OutboxSimulation
import Testing

/// The deterministic simulation, seed after seed. `OUTBOX_SIM_SEEDS` sets how many (a soak run
/// sets thousands more); `OUTBOX_SEED` replays one.
@Suite("Deterministic simulation", .timeLimit(.minutes(15)))
struct SimulationTests {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let text = environment["OUTBOX_SEED"], let seed = UInt64(text) {
            // OUTBOX_SEED_REPEAT runs one seed many times at once: a seed must not depend on timing.
            return Array(repeating: seed, count: environment["OUTBOX_SEED_REPEAT"].flatMap(Int.init) ?? 1)
        }
        let count = environment["OUTBOX_SIM_SEEDS"].flatMap(Int.init) ?? 2000
        let base = environment["OUTBOX_SIM_BASE"].flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
        return (0..<UInt64(count)).map { base &* 1_000_003 &+ $0 }
    }

    @Test func everyInvariantHoldsForEverySeed() async throws {
        let seeds = Self.seeds
        let reports = await withTaskGroup(of: SimulationReport.self) { group in
            var reports: [SimulationReport] = []
            var next = 0
            let parallel = max(2, ProcessInfo.processInfo.activeProcessorCount)
            func start() {
                guard next < seeds.count else { return }
                let seed = seeds[next]
                next += 1
                group.addTask { await Simulation(seed: seed).run() }
            }
            for _ in 0..<parallel { start() }
            while let report = await group.next() {
                reports.append(report)
                start()
            }
            return reports
        }
        let failures = reports.filter { $0.failure != nil }
        for failure in failures.prefix(3) {
            Issue.record(Comment(rawValue: failure.failureDescription))
        }
        let operations = reports.reduce(0) { $0 + $1.operations }
        let crashes = reports.reduce(0) { $0 + $1.crashes }
        let requests = reports.reduce(0) { $0 + $1.requests }
        let faults = reports.reduce(0) { $0 + $1.faults.values.reduce(0, +) }
        let compacted = reports.reduce(0) { $0 + $1.compactedOperations }
        print("simulation: \(reports.count) seeds, \(operations) operations, \(requests) requests, \(faults) network faults, \(crashes) crashes, \(compacted) operations compacted, \(failures.count) failures")
        #expect(reports.count == seeds.count)
        #expect(failures.isEmpty)
    }

    @Test func aSeedReplaysExactly() async {
        let seed: UInt64 = 20_261_129
        let first = await Simulation(seed: seed).run()
        let second = await Simulation(seed: seed).run()
        #expect(first.trace == second.trace)
        #expect(first.faults == second.faults)
        #expect(first.requests == second.requests)
        #expect(first.trace.count >= 60, "every step is in the trace")
        #expect(first.failure == nil && second.failure == nil)
    }
}
