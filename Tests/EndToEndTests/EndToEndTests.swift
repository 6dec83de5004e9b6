import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import TestHarness
import Synchronization
import Testing

/// The real engine with `URLSessionTransport`, against the loopback test server over a real
/// socket: exactly-once proven end to end, not only against test doubles.
@Suite("End to end over loopback", .timeLimit(.minutes(10)))
struct EndToEndTests {
    /// How long a client here waits for the loopback server, and how long the server waits for a
    /// request's bytes or keeps an idle connection: a hang guard, never a timing. A request the
    /// transport gave up on is a no-response to the engine, which sends it again, and a test
    /// that counts attempts would count one more whenever a loaded machine stalled the server
    /// for the seconds these were before.
    static let patience: TimeInterval = 120

    /// A journal, a manual clock and a server, torn down together.
    final class Rig: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-e2e-\(UUID().uuidString)")
        let clock = ManualClock()
        let server: TestServer
        let network: SwitchableNetwork
        let outbox: Outbox
        private let events = EventLog()

        init(timeoutSeconds: TimeInterval = EndToEndTests.patience, _ configure: (inout OutboxConfiguration) -> Void = { _ in },
             server configureServer: (inout TestServer.Configuration) -> Void = { _ in }) throws {
            let events = self.events
            var serverConfiguration = TestServer.Configuration(readTimeout: EndToEndTests.patience, observer: { event in events.append(event) })
            configureServer(&serverConfiguration)
            server = try TestServer(serverConfiguration)
            network = SwitchableNetwork(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: timeoutSeconds) {
                ["Authorization": "Bearer fresh-token"]
            })
            // Every type queues unless a test lists it with a policy of its own.
            var configuration = OutboxConfiguration(account: "folake", clock: clock, defaultPolicy: .idempotent)
            configure(&configuration)
            outbox = try Outbox(directory: directory, transport: network, configuration: configuration)
        }

        deinit {
            outbox.close()
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Every business request the server handled, in order.
        var serverEvents: [ServerEvent] { events.all }

        /// Drains until nothing is queued: ``EndToEndTests/drainUntilSettled(_:clock:)``.
        func drainUntilSettled() async throws {
            try await EndToEndTests.drainUntilSettled(outbox, clock: clock)
        }
    }

    /// Drains `outbox`, then lets `clock` reach each retry, until nothing is queued (at most
    /// twenty passes); answers whether nothing is. A pass may queue a row again (a rebase) and
    /// wake the worker for it: the worker is let finish that before anything is decided.
    @discardableResult
    static func drainUntilSettled(_ outbox: Outbox, clock: ManualClock) async throws -> Bool {
        for _ in 0..<20 {
            await outbox.drain()
            await outbox.settle()
            guard try outbox.metrics().queueDepth[.queued, default: 0] > 0 else { return true }
            // Nothing scheduled: the row is due now; drain again.
            guard let next = outbox.nextWake else { continue }
            clock.set(to: max(clock.now(), next))
        }
        return false
    }

    /// What the server's observer was told, from its threads.
    final class EventLog: Sendable {
        private let events = Mutex<[ServerEvent]>([])

        func append(_ event: ServerEvent) {
            events.withLock { $0.append(event) }
        }

        var all: [ServerEvent] { events.withLock { $0 } }
    }

    /// A network the test can take down (offline, requests fail at once with no response), and
    /// that keeps every request it sent.
    final class SwitchableNetwork: OutboxTransport {
        private let transport: URLSessionTransport
        private let online = Atomic<Bool>(true)
        private let sent = Mutex<[TransportRequest]>([])

        init(_ transport: URLSessionTransport) {
            self.transport = transport
        }

        func setOnline(_ value: Bool) {
            online.store(value, ordering: .relaxed)
        }

        /// The requests that went out, in order (none while offline).
        var requests: [TransportRequest] { sent.withLock { $0 } }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            guard online.load(ordering: .relaxed) else { throw URLError(.notConnectedToInternet) }
            sent.withLock { $0.append(request) }
            return try await transport.send(request)
        }
    }

    static func product(_ number: Int) -> OutboxRequest {
        OutboxRequest(
            businessID: "folakes-pharmacy",
            operationType: "product.create",
            endpoint: "/products",
            payload: Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number) ml","price":12.5}"#.utf8),
            category: "Products",
            entityLabel: "Antiseptic \(number) ml",
            summary: "New product"
        )
    }

    // MARK: The transport's own mapping

    @Test func statusHeadersAndBodyPassThrough() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: Self.patience)
        let body = Data(#"{"id":"p-1","name":"Gauze"}"#.utf8)
        let response = try await transport.send(TransportRequest(
            method: "POST", endpoint: "/products",
            headers: ["Idempotency-Key": "k-1", "Content-Type": "application/json", "X-Business-ID": "b-9"], body: body
        ))
        #expect(response.statusCode == 201)
        #expect(response.header("location") == "/products/p-1")
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        let json = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        #expect(json["id"] as? String == "p-1" && json["revision"] as? Int == 1)
        #expect(try server.records().first?.businessID == "b-9")

        let replay = try await transport.send(TransportRequest(
            method: "POST", endpoint: "/products",
            headers: ["Idempotency-Key": "k-1", "Content-Type": "application/json", "X-Business-ID": "b-9"], body: body
        ))
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(replay.body == response.body)
    }

    @Test func aRefusedConnectionIsNoResponse() async throws {
        // A port held bound and never listening: nobody else can take it while the test runs.
        let refusing = try RefusingPort()
        let url = try #require(URL(string: "http://127.0.0.1:\(refusing.port)"))
        let transport = URLSessionTransport(baseURL: url, timeoutSeconds: 5)
        do {
            _ = try await transport.send(TransportRequest(method: "POST", endpoint: "/products", headers: [:], body: Data("{}".utf8)))
            Issue.record("a refused connection answered")
        } catch {
            #expect(TransportRequest.Failure(error) == .cannotConnect)
        }
        withExtendedLifetime(refusing) {}
    }

    @Test func aTimeoutIsNoResponse() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.slow, key: "held")])
        let transport = URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: 0.3)
        do {
            _ = try await transport.send(TransportRequest(
                method: "POST", endpoint: "/products", headers: ["Idempotency-Key": "held"], body: Data(#"{"id":"p-2"}"#.utf8)))
            Issue.record("a held request answered")
        } catch {
            #expect(TransportRequest.Failure(error) == .timedOut)
        }
        server.release()
    }

    @Test func aRedirectIsNotFollowed() async throws {
        // The 3xx is the answer: recorded as unexpected, never sent on elsewhere.
        let transport = URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:9")!, timeoutSeconds: 1)
        #expect(try transport.url(for: "/products?draft=1").absoluteString == "http://127.0.0.1:9/products?draft=1")
        let nested = URLSessionTransport(baseURL: URL(string: "https://api.example.com/v1/")!)
        #expect(try nested.url(for: "/products").absoluteString == "https://api.example.com/v1/products")
    }

    // MARK: Exactly once

    @Test func threeResponsesLostAfterCommitStillApplyOnceEach() async throws {
        let rig = try Rig()
        var ids: [OperationID] = []
        for number in 1...3 { ids.append(try await rig.outbox.enqueue(Self.product(number))) }
        rig.server.addFaults(ids.map { Fault(.dropAfterCommit, key: $0.idempotencyKey) })
        try await rig.drainUntilSettled()

        for id in ids {
            let row = try #require(try rig.outbox.operation(id))
            #expect(row.status == .synced)
            #expect(row.attemptCount == 2)
            #expect(row.latestOutcome == .replayed)
        }
        let applied = try rig.server.appliedCounts()
        #expect(applied.count == 3)
        #expect(ids.allSatisfy { applied[$0.idempotencyKey] == 1 })
        #expect(try rig.server.records().count == 3)
    }

    @Test func thePharmacysAfternoon() async throws {
        let rig = try Rig()
        rig.network.setOnline(false)
        let request = Self.product(500)
        guard case .queued(let id) = try await rig.outbox.save(request) else {
            Issue.record("a save with no signal is queued")
            return
        }
        #expect(try rig.outbox.syncTab(isOnline: false).banner.text == "Connect to the internet to sync these changes")

        rig.network.setOnline(true)
        rig.outbox.wake(.connectivityRegained)
        try await rig.drainUntilSettled()
        #expect(try rig.outbox.operation(id)?.status == .synced)
        let records = try rig.server.records()
        #expect(records.count == 1)
        #expect(records.first?.body == request.payload, "exactly as typed")
        #expect(records.first?.idempotencyKey == id.idempotencyKey)
        #expect(try rig.outbox.syncTab(isOnline: true).banner.text == "You're all synced")
    }

    /// The server announces how long it keeps claims on every answer to a write; a write first
    /// sent longer ago than that (less the margin) is blocked for a person, never replayed under
    /// a key the server may have forgotten.
    @Test(arguments: [(hoursLater: 12.0, blocked: false), (hoursLater: 36, blocked: true)])
    func theServersAnnouncedRetentionBlocksAWriteItMayHaveForgotten(hoursLater: Double, blocked: Bool) async throws {
        let rig = try Rig(server: { $0.claimPolicy.retention = 2 * 86_400 })
        rig.server.addFaults([Fault(.unavailable, retryAfterSeconds: 0)])
        let id = try await rig.outbox.enqueue(Self.product(1))
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(id)?.state.lastOutcome == .response(statusCode: 503))
        rig.clock.advance(by: hoursLater * 3_600)
        await rig.outbox.drain()
        let row = try #require(try rig.outbox.operation(id))
        if blocked {
            // 2 days announced, less the 1-day margin: past it, the second attempt never leaves.
            #expect(row.status == .blocked && row.lastErrorCode == ErrorCode.claimMayBeForgotten)
            #expect(row.attemptCount == 1)
        } else {
            #expect(row.status == .synced && row.attemptCount == 2)
        }
    }

    /// Batched, the announcement is on the batch's envelope: learnt from one batch, it blocks a
    /// write sent before it that comes due later.
    @Test func aBatchsEnvelopeAnnouncesTheRetentionToo() async throws {
        let rig = try Rig({ $0.batching = OutboxConfiguration.Batching() }, server: { $0.claimPolicy.retention = 2 * 86_400 })
        let old = try await rig.outbox.enqueue(Self.product(1))
        rig.network.setOnline(false)
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(old)?.attemptCount == 1, "sent once, no answer; due again after its backoff")
        rig.network.setOnline(true)
        let fresh = try await rig.outbox.enqueue(Self.product(2))
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(fresh)?.status == .synced, "its batch's envelope carried the retention")
        rig.clock.advance(by: 36 * 3_600)
        await rig.outbox.drain()
        let row = try #require(try rig.outbox.operation(old))
        #expect(row.status == .blocked && row.lastErrorCode == ErrorCode.claimMayBeForgotten && row.attemptCount == 1)
    }

    @Test func aSubmissionThatNeedsApprovalRestsWithItsRequestID() async throws {
        let rig = try Rig()
        rig.server.addFaults([Fault(.pendingApproval)])
        let request = Self.product(7)
        guard case .pendingApproval(let requestID) = try await rig.outbox.save(request) else {
            Issue.record("a 202 is pending approval")
            return
        }
        #expect(requestID.hasPrefix("apr-"))
        let held = try #require(try rig.outbox.ledger(LedgerQuery(status: .pendingApproval)).entries.first)
        #expect(try rig.outbox.operation(held.operationID)?.approvalRequestID == requestID)
        #expect(try rig.outbox.badgeCount() == 0)

        // A replay of the same key returns the same 202 envelope.
        let transport = URLSessionTransport(baseURL: rig.server.baseURL, timeoutSeconds: Self.patience)
        let replay = try await transport.send(TransportRequest(
            method: "POST", endpoint: "/products",
            headers: ["Idempotency-Key": held.operationID.idempotencyKey, "Content-Type": "application/json",
                      "X-Business-ID": request.businessID],
            body: request.payload
        ))
        #expect(replay.statusCode == 202)
        #expect(replay.header("Idempotent-Replayed") == "true")
        let envelope = try #require(try JSONSerialization.jsonObject(with: replay.body) as? [String: String])
        #expect(envelope["request_id"] == requestID)
    }

    @Test func aKeyReusedWithAnotherBodyIsBlockedWithTheConflictShown() async throws {
        let rig = try Rig()
        rig.network.setOnline(false)
        let request = Self.product(8)
        let id = try await rig.outbox.enqueue(request)
        // Another body already went out under this operation's key.
        let transport = URLSessionTransport(baseURL: rig.server.baseURL, timeoutSeconds: Self.patience)
        let first = try await transport.send(TransportRequest(
            method: "POST", endpoint: "/products",
            headers: ["Idempotency-Key": id.idempotencyKey, "X-Business-ID": request.businessID],
            body: Data(#"{"id":"product-8","name":"Something else"}"#.utf8)
        ))
        #expect(first.statusCode == 201)

        rig.network.setOnline(true)
        await rig.outbox.drain()
        let row = try #require(try rig.outbox.operation(id))
        #expect(row.status == .blocked)
        #expect(row.lastErrorCode == "idempotency_conflict")
        let shown = try #require(try rig.outbox.syncTab(isOnline: true).card("Products")?.rows.first)
        #expect(shown.lastErrorCode == "idempotency_conflict")
        #expect(shown.lastErrorMessage?.isEmpty == false)
        #expect(try rig.server.appliedCounts()[id.idempotencyKey] == 1, "the other body, applied once; ours never")
    }
}
