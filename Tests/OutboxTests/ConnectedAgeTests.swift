import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxTesting
import Synchronization
import Testing

/// Connected age over a scripted day: how long a write waited while a route to the server was
/// seen, beside its wall-clock age; the route journaled only when it changes; the service
/// objective; which waiting write is held by a person; abandoned and cancelled attempts.
@Suite("Connected age and the service objective", .timeLimit(.minutes(5)))
struct ConnectedAgeTests {
    static let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    /// What the network does to the next request.
    enum Network: Sendable {
        case offline
        case unavailable
        case up
    }

    /// The network of a test, switched as its day goes.
    final class Switch: Sendable {
        private let state: Mutex<Network>
        init(_ network: Network) { state = Mutex(network) }
        var network: Network {
            get { state.withLock { $0 } }
            set { state.withLock { $0 = newValue } }
        }
    }

    /// A transport answering as `network` says: no response, 503, or 201.
    static func server(_ network: Switch) -> ScriptedTransport {
        ScriptedTransport(otherwise: .handle { _ in
            switch network.network {
            case .offline: throw URLError(.notConnectedToInternet)
            case .unavailable: return .json(503, "{}")
            case .up: return .json(201, #"{"id":"p"}"#)
            }
        })
    }

    /// A retry a second after every failure, however many: each step of the day retries once.
    static func configure(_ configuration: inout OutboxConfiguration) {
        configuration.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 1, multiplier: 1, maxDelaySeconds: 1)
        configuration.acknowledgementObjectiveSeconds = 60
    }

    static func routes(_ outbox: Outbox) throws -> [RouteChanged] {
        try outbox.events(limit: 10_000).compactMap { event in
            if case .routeChanged(let changed) = event.body { return changed }
            return nil
        }
    }

    @Test func aScriptedDayOfRoutesComingAndGoing() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let network = Switch(.offline)
        let outbox = try journal.open(server: Self.server(network), Self.configure)
        defer { outbox.close() }
        func at(_ seconds: TimeInterval) -> Date { Self.t0.addingTimeInterval(seconds) }
        func step(_ seconds: TimeInterval, _ next: Network? = nil) async {
            if let next { network.network = next }
            journal.clock.advance(by: seconds)
            await outbox.settle()
        }

        // 08:00, no signal: the write waits, and no route was ever seen.
        let first = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        var metrics = try outbox.metrics()
        #expect(metrics.oldestPendingConnectedAgeSeconds == 0 && !metrics.routeSeen)
        // Ten minutes later the server answers, 503: a route is seen, the write still waits.
        await step(600, .unavailable)
        await step(120)
        metrics = try outbox.metrics()
        #expect(metrics.oldestPendingAgeSeconds == 720)
        #expect(metrics.oldestPendingConnectedAgeSeconds == 120, "connected from the first answer, at 600 s")
        #expect(metrics.routeSeen)
        #expect(metrics.acknowledgement.pendingPastInterval == 1, "120 s connected is past the 60 s objective")
        // The signal goes at 730 s and stays gone for most of an hour.
        await step(10, .offline)
        await step(3_000)
        metrics = try outbox.metrics()
        #expect(metrics.oldestPendingAgeSeconds == 3_730)
        #expect(metrics.oldestPendingConnectedAgeSeconds == 130, "an hour without signal adds nothing")
        #expect(!metrics.routeSeen)
        // It comes back: the write lands, and a new one lands at once.
        await step(5, .up)
        let second = try await outbox.enqueue(productRequest(2))
        await outbox.settle()
        #expect(try outbox.operation(first)?.status == .synced && outbox.operation(second)?.status == .synced)

        metrics = try outbox.metrics()
        #expect(metrics.acknowledgement == OutboxMetrics.AcknowledgementObjective(intervalSeconds: 60, acknowledged: 2, withinInterval: 1, pendingPastInterval: 0))
        #expect(metrics.acknowledgement.share == 0.5)
        #expect(metrics.pendingAges.isEmpty && metrics.oldestHealthyPending == nil)
        // Dozens of answers, three changes journaled.
        #expect(try Self.routes(outbox) == [RouteChanged(seen: true, at: at(600)), RouteChanged(seen: false, at: at(730)),
                                            RouteChanged(seen: true, at: at(3_735))])
        let finished = try outbox.journalEvents(of: first).compactMap { event -> AttemptFinished? in
            if case .attemptFinished(let finished) = event.body, finished.disposition == .accepted { return finished }
            return nil
        }
        #expect(finished.map { $0.connectedAgeSeconds } == [130])
        // Another objective reads the same counts: 130 s is within 300 s.
        var wider = try outbox.store.queries.metrics(now: journal.clock.now(), objectiveSeconds: 300)
        #expect(wider.acknowledgement.withinInterval == 2)
        wider = try outbox.store.queries.metrics(now: journal.clock.now(), objectiveSeconds: 1)
        #expect(wider.acknowledgement.withinInterval == 1)
    }

    @Test func aRouteSeenWhenTheAppEndedEndsAtItsLastEvent() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let network = Switch(.unavailable)
        var outbox = try journal.open(server: Self.server(network), Self.configure)
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        journal.clock.advance(by: 30)
        outbox.close()
        // The app was not running for a day: none of it is connected time.
        journal.clock.advance(by: 86_400)
        network.network = .offline
        outbox = try journal.open(server: Self.server(network), Self.configure)
        defer { outbox.close() }
        #expect(try Self.routes(outbox) == [RouteChanged(seen: true, at: Self.t0), RouteChanged(seen: false, at: Self.t0)],
                "the last process's last event was the 503's outcome, at t0")
        let metrics = try outbox.metrics()
        #expect(!metrics.routeSeen)
        #expect(metrics.pendingAges.first?.operation == id && metrics.pendingAges.first?.connectedAgeSeconds == 0)
        #expect(metrics.pendingAges.first?.ageSeconds == 86_430)
        // Reopened again, nothing more is recorded: the route is already lost.
        outbox.close()
        outbox = try journal.open(server: Self.server(network), Self.configure)
        #expect(try Self.routes(outbox).count == 2)
    }

    @Test func theOldestHealthyWriteSkipsOnesHeldByAPerson() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.error(403, code: "forbidden", message: "Only the owner may")))
        let outbox = try journal.open(server: transport, Self.configure)
        defer { outbox.close() }
        let blocked = try await outbox.enqueue(productRequest(1, entityID: "shelf-1"))
        await outbox.drain()
        #expect(try outbox.operation(blocked)?.status == .blocked)
        journal.clock.advance(by: 10)
        let behind = try await outbox.enqueue(productRequest(2, entityID: "shelf-1"))
        journal.clock.advance(by: 10)
        let free = try await outbox.enqueue(productRequest(3, entityID: "shelf-2"))
        await outbox.settle()
        let metrics = try outbox.metrics()
        #expect(metrics.pendingAges.map(\.operation) == [behind, free])
        #expect(metrics.pendingAges.map(\.heldByPerson) == [true, false])
        #expect(metrics.oldestHealthyPending?.operation == free)
        #expect(metrics.oldestPendingOperation == behind, "the oldest pending, held or not, as before")
    }

    @Test func abandonedAndCancelledAttemptsAreCounted() async throws {
        let journal = TestJournal()
        journal.clock.set(to: Self.t0)
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"id":"p"}"#)))
        transport.script(.hold)
        var outbox = try journal.open(server: transport)
        // An attempt the expiry cancels.
        _ = try await outbox.enqueue(productRequest(1))
        let drain = Task { [outbox] in await outbox.drain(until: Self.t0.addingTimeInterval(600)) }
        await transport.waitUntilHolding()
        outbox.expire()
        _ = await drain.value
        // An attempt the app's end cuts off: started, never finished, then the journal reopened.
        let cut = try await outbox.appendEnqueued(productRequest(2))
        _ = try await outbox.writer.append([JournalStore.Draft(operationID: cut, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain)))])
        outbox.close()
        outbox = try journal.open(server: transport)
        defer { outbox.close() }
        let metrics = try outbox.metrics()
        #expect(metrics.cancelledAttempts == 1 && metrics.abandonedAttempts == 1)
        #expect(try outbox.verify().isClean, "the counters rebuild as they were kept")
    }

    @Test func anObjectiveOffTheBucketsIsRefusedNamingThem() throws {
        let journal = TestJournal()
        let error = #expect(throws: OutboxError.self) { try journal.open { $0.acknowledgementObjectiveSeconds = 45 } }
        guard case .invalidConfiguration(let field, let problem)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(field == "acknowledgementObjectiveSeconds" && problem.contains("30, 60"))
    }
}
