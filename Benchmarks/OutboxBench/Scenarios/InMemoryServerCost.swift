import Foundation
import Outbox
import OutboxTesting

/// Scenario 9.4: what `InMemoryServer` (OutboxTesting's idempotent server, the claims library
/// over its in-memory store) costs per request, driven directly with the requests a lifecycle's
/// drain sends, beside the canned answer scenarios 3 and 9.3 send to. It is what those scenarios
/// paid per operation while they drained to it.
extension Scenario {
    static let inMemoryServerCost = Scenario(
        id: "9.4",
        name: "in-memory-server",
        title: "InMemoryServer's own cost per request, driven directly with the requests a drain sends, beside the canned answer",
        metrics: [
            .time("cpu", "CPU per request, every request"),
            .time("wall", "wall time per request, every request"),
            .time("cpu-first", "CPU per request, the first tenth"),
            .time("cpu-last", "CPU per request, the last tenth"),
            .count("growth", "the last tenth over the first (x)", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "InMemoryServer", sqlite: "-", floor: "canned answer", versusSQLite: "-", versusFloor: "vs canned"),
        limit: { result in
            "the requests of a lifecycle's drain (creates, one key each), sent one after another from one task. Answering needs a lookup of the key and a prepared answer, "
                + "\(TextReport.format(result.floor("cpu"))) µs of CPU (the canned answer); InMemoryServer also takes a claim and "
                + "stores the record in one transaction of its in-memory store, which works on a copy of everything the server holds"
        },
        run: { context in
            let requests = CannedTransport.requests(context.sizes.lifecycleOperations)
            let count = requests.count
            let tenth = max(1, count / 10)
            let server = InMemoryServer()
            var cpu: [Double] = []
            cpu.reserveCapacity(count)
            var created = 0
            let wall = try await Stopwatch.time {
                for request in requests {
                    let start = CPUClock.now()
                    let response = try await server.send(request)
                    cpu.append(Double(CPUClock.now() - start))
                    if response.statusCode == 201 { created += 1 }
                }
            }
            guard created == count, server.records.count == count, server.maxAppliedCount == 1 else {
                throw BenchmarkFailure(description: "InMemoryServer: \(created) of \(count) created, \(server.records.count) applied")
            }
            let canned = try await CannedTransport.cost(of: requests)
            let mean = { (slice: ArraySlice<Double>) in slice.reduce(0, +) / Double(slice.count) / 1e3 }
            let first = mean(cpu.prefix(tenth))
            let last = mean(cpu.suffix(tenth))
            return [
                "cpu": Trio(ours: mean(cpu[...]), floor: canned.cpu / 1e3),
                "wall": Trio(ours: wall / Double(count) / 1e3, floor: canned.wall / 1e3),
                "cpu-first": Trio(ours: first, floor: canned.cpu / 1e3),
                "cpu-last": Trio(ours: last, floor: canned.cpu / 1e3),
                "growth": Trio(ours: last / first),
            ]
        }
    )
}
