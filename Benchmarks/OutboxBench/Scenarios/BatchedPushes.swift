import Foundation
import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import Synchronization

/// Scenario 11: draining queued writes to the loopback test server with latency added to every
/// request, as a phone's network adds it: one request per write (1 lane, then 8 at once) against
/// batches of 50 (`OutboxConfiguration.batching`). The engine, its journal and the server are the
/// same in all three; only how the writes travel differs.
extension Scenario {
    static let batchedPushes = Scenario(
        id: "11",
        name: "batched-pushes",
        title: "Draining queued writes to the loopback server with latency added per request: batches of 50 beside one request per write",
        metrics: [
            .time("drain", "drain time", .milliseconds),
            .rate("rate", "writes/s"),
            .count("requests", "requests sent", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "batches of 50", sqlite: "8 lanes, 1 each", floor: "1 lane, 1 each",
                               versusSQLite: "vs 8 lanes", versusFloor: "vs 1 lane", thirdIsBaseline: true),
        limit: { result in
            "every request waits the added latency; one request per write pays it once per write (over 8 lanes, once per "
                + "8 writes), a batch once per 50. Batches of 50: \(TextReport.format(result.ours("requests"))) requests; "
                + "8 lanes: \(TextReport.format(result.sqlite("requests"))); 1 lane: \(TextReport.format(result.floor("requests"))). "
                + "Each write is still its own attempt, claimed and applied on its own by the server, every one exactly once"
        },
        run: { context in
            let writes = context.sizes.drainedWrites
            let latency = context.sizes.requestLatencySeconds
            let batched = try await BatchedPushesBench.drain(writes, latency: latency, context: context) {
                $0.batching = OutboxConfiguration.Batching(maxOperations: 50)
                $0.maxConcurrentLanes = 1
            }
            let eightLanes = try await BatchedPushesBench.drain(writes, latency: latency, context: context) { $0.maxConcurrentLanes = 8 }
            let oneLane = try await BatchedPushesBench.drain(writes, latency: latency, context: context) { $0.maxConcurrentLanes = 1 }
            func rate(_ seconds: Double) -> Double { Double(writes) / seconds }
            return [
                "drain": Trio(ours: batched.seconds * 1000, sqlite: eightLanes.seconds * 1000, floor: oneLane.seconds * 1000),
                "rate": Trio(ours: rate(batched.seconds), sqlite: rate(eightLanes.seconds), floor: rate(oneLane.seconds)),
                "requests": Trio(ours: Double(batched.requests), sqlite: Double(eightLanes.requests), floor: Double(oneLane.requests)),
            ]
        }
    )
}

enum BatchedPushesBench {
    enum Failure: Error, CustomStringConvertible {
        case notAppliedOnce(String)

        var description: String {
            switch self {
            case .notAppliedOnce(let what): "scenario 11: \(what)"
            }
        }
    }

    /// Saves `writes` writes while nobody is signed in (so nothing is sent), then signs in and
    /// times one drain to a fresh loopback server that adds `latency` to every request.
    static func drain(
        _ writes: Int, latency: Double, context: Context, _ configure: (inout OutboxConfiguration) -> Void
    ) async throws -> (seconds: Double, requests: Int) {
        let server = try TestServer(.init(latency: latency))
        defer { server.stop() }
        let directory = try context.freshDirectory("batched-pushes")
        defer { context.remove(directory) }
        let session = SwitchableSession(account: nil)
        var configuration = Workload.configuration(durability: .full)
        configuration.session = session
        configure(&configuration)
        let counting = CountingTransport(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: 30))
        let outbox = try Outbox(directory: directory, transport: counting, configuration: configuration)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<writes { ids.append(try await outbox.enqueue(Workload.request(number))) }
        session.signIn(Workload.account)
        let start = DispatchTime.now().uptimeNanoseconds
        await outbox.drain()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let applied = try server.appliedCounts()
        guard try ids.allSatisfy({ try outbox.operationState($0)?.status == .synced && applied[$0.idempotencyKey] == 1 }) else {
            throw Failure.notAppliedOnce("after one drain, not every write was synced and applied exactly once")
        }
        return (seconds, counting.count)
    }
}

/// A transport that counts the requests it passes on.
final class CountingTransport: OutboxTransport {
    private let transport: any OutboxTransport
    private let sent = Atomic<Int>(0)

    init(_ transport: any OutboxTransport) {
        self.transport = transport
    }

    var count: Int { sent.load(ordering: .relaxed) }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent.add(1, ordering: .relaxed)
        return try await transport.send(request)
    }
}
