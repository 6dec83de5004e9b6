import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import OutboxTesting
import Synchronization
import Testing

/// What the journal holds as an endpoint is what reaches the server, byte for byte: the real
/// engine and `URLSessionTransport` against the loopback server, which records every request
/// target as it arrived.
@Suite("Endpoints sent byte for byte", .timeLimit(.minutes(10)))
struct EndpointBytesTests {
    /// A journal and a server that keeps every request it was told of.
    final class Rig: Sendable {
        /// What the server and the transport's `authorize` hook were told.
        final class Log: Sendable {
            let received = Mutex<[ServerEvent]>([])
            let authorizations = Atomic<Int>(0)
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-endpoints-\(UUID().uuidString)")
        let clock = ManualClock()
        let log = Log()
        let server: TestServer
        let transport: URLSessionTransport
        let outbox: Outbox

        init() throws {
            let log = self.log
            server = try TestServer(.init(readTimeout: EndToEndTests.patience, observer: { event in log.received.withLock { $0.append(event) } }))
            transport = URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: EndToEndTests.patience) {
                log.authorizations.add(1, ordering: .relaxed)
                return ["Authorization": "Bearer fresh-token"]
            }
            outbox = try Outbox(directory: directory, transport: transport, configuration: OutboxConfiguration(
                account: "folake", clock: clock, maxConcurrentLanes: 4, operationPolicies: ["product.create": .idempotent]))
        }

        deinit {
            outbox.close()
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The request targets the server received under `id`'s key.
        func targets(of id: OperationID) -> [String] {
            log.received.withLock { $0.filter { $0.idempotencyKey == id.idempotencyKey }.map(\.target) }
        }

        /// Appends an `enqueued` event as an older engine could have: without today's validation.
        func appendUnchecked(_ request: OutboxRequest) async throws -> OperationID {
            let id = OperationID()
            _ = try await outbox.writer.append([JournalStore.Draft(operationID: id, body: .enqueued(Enqueued(
                request: request, requestHash: SHA256Digest(of: request.payload), account: "folake")))])
            return id
        }
    }

    static func request(_ endpoint: String, number: Int) -> OutboxRequest {
        OutboxRequest(
            businessID: "folakes-pharmacy",
            operationType: "product.create",
            endpoint: endpoint,
            payload: Data(#"{"id":"product-\#(number)"}"#.utf8),
            category: "Products",
            entityLabel: "Product \(number)",
            summary: "New product"
        )
    }

    /// Valid endpoints a URL library is tempted to rewrite: escapes of "/", " ", "." and of
    /// UTF-8 (in either case), sub-delimiters, ":", "@", "~", empty segments, an empty query, a
    /// query holding "?", "/" and dot segments.
    static let trickyEndpoints = [
        "/products?x=%2F", "/products/a%2Fb", "/products/a%2fb", "/products/a%20b", "/products;v=1",
        "/products/;=&+,!$'()*", "/products/a:b@c", "/products/~me", "/products?q=a+b&r=%20&s=/x?y", "/products?",
        "/products/%C3%BC%2e%2E", "/products//double", "/products?x=/../y&z=./w", "/products/.hidden/..x",
    ]

    @Test func everyTrickyEndpointReachesTheServerAsJournaled() async throws {
        let rig = try Rig()
        var ids: [OperationID] = []
        for (number, endpoint) in Self.trickyEndpoints.enumerated() {
            ids.append(try await rig.outbox.enqueue(Self.request(endpoint, number: number)))
        }
        await rig.outbox.drain()
        for (id, endpoint) in zip(ids, Self.trickyEndpoints) {
            let journaled = try #require(try rig.outbox.operation(id)).request.endpoint
            #expect(journaled == endpoint)
            #expect(rig.targets(of: id) == [journaled], "journaled \(journaled)")
        }
        // The ones on /products itself were created; the others met a 404 (or, at a record's
        // path, a 405 for a POST), sent as they were.
        #expect(try rig.outbox.operation(ids[0])?.status == .synced)
        #expect(try rig.outbox.operation(ids[1])?.status == .failed)
    }

    /// Rows an older engine accepted under its looser rule: those that can be sent as stored
    /// are, byte for byte; those that cannot are never sent at all, and wait for a person.
    @Test func aStoredEndpointIsSentAsStoredOrNotAtAll() async throws {
        let rig = try Rig()
        let sendable = try await rig.appendUnchecked(Self.request("/products?legacy=%2F;x", number: 0))
        let unsendable = [
            "/products%zz", #"/\evil.example"#, "/products/../admin", "/products/.", "/ürün", "/a|b", "/products#top",
            "/products?q=a b",
        ]
        var refused: [OperationID] = []
        for (number, endpoint) in unsendable.enumerated() {
            refused.append(try await rig.appendUnchecked(Self.request(endpoint, number: number + 1)))
        }
        await rig.outbox.drain()

        #expect(rig.targets(of: sendable) == ["/products?legacy=%2F;x"])
        #expect(try rig.outbox.operation(sendable)?.status == .synced)
        for (id, endpoint) in zip(refused, unsendable) {
            let row = try #require(try rig.outbox.operation(id))
            #expect(row.request.endpoint == endpoint, "the journal keeps the endpoint as stored")
            #expect(rig.targets(of: id).isEmpty, "\(endpoint) reached the server")
            #expect(row.status == .blocked, "\(endpoint)")
            #expect(row.lastErrorCode == ErrorCode.endpointUnsendable, "\(endpoint)")
            #expect(row.state.lastOutcome == .notSent, "\(endpoint)")
        }
        #expect(rig.log.authorizations.load(ordering: .relaxed) == 1, "credentials were asked for the one request sent")
        #expect(try rig.server.appliedCounts() == [sendable.idempotencyKey: 1])

        // Retrying cannot change the stored endpoint: the row is blocked again, still unsent.
        try await rig.outbox.retry(refused[0])
        await rig.outbox.drain()
        #expect(try rig.outbox.operation(refused[0])?.status == .blocked)
        #expect(try rig.outbox.operation(refused[0])?.attemptCount == 2)
        #expect(rig.targets(of: refused[0]).isEmpty)
    }

    @Test func theTransportRefusesBeforeAskingForCredentials() async throws {
        let rig = try Rig()
        for endpoint in ["/products%zz", #"/\evil.example"#, "/products/../admin"] {
            await #expect(throws: URLSessionTransport.UnsendableEndpoint.self) {
                _ = try await rig.transport.send(TransportRequest(
                    method: "POST", endpoint: endpoint, headers: ["Idempotency-Key": "k-1"], body: Data(#"{"id":"p-1"}"#.utf8)))
            }
        }
        #expect(rig.log.authorizations.load(ordering: .relaxed) == 0)
        #expect(rig.log.received.withLock { $0.isEmpty })
    }
}
