import Foundation
import Outbox
import OutboxAudit
import OutboxTestServer
import Synchronization

/// A network the demo can take down: offline, every request fails at once with no response.
/// Online, each request is noted in the wire log on its way to the server.
final class Signal: OutboxTransport {
    private let transport: URLSessionTransport
    private let online = Atomic<Bool>(true)
    private let wire: WireLog

    init(_ transport: URLSessionTransport, wire: WireLog) {
        self.transport = transport
        self.wire = wire
    }

    var isOnline: Bool {
        get { online.load(ordering: .relaxed) }
        set { online.store(newValue, ordering: .relaxed) }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard isOnline else { throw URLError(.notConnectedToInternet) }
        wire.sent(request)
        return try await transport.send(request)
    }

    /// A photo's segment, straight to the store: with no signal, it meets none either.
    func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        guard isOnline else { throw URLError(.notConnectedToInternet) }
        return try await transport.upload(segment)
    }
}

/// What reached the server, and how it answered: each request's `If-Match` as it went on the
/// wire, and each answer as the server reported it.
final class WireLog: Sendable {
    /// One request, as it left for the server.
    struct Request: Sendable, Equatable {
        var method: String
        var endpoint: String
        var idempotencyKey: String?
        var ifMatch: String?
        var body: Data
    }

    private let requests = Mutex<[Request]>([])
    private let answers = Mutex<[ServerEvent]>([])

    func sent(_ request: TransportRequest) {
        let noted = Request(method: request.method, endpoint: request.endpoint,
                            idempotencyKey: Self.header("Idempotency-Key", in: request.headers),
                            ifMatch: Self.header("If-Match", in: request.headers), body: request.body)
        requests.withLock { $0.append(noted) }
    }

    func answered(_ event: ServerEvent) {
        answers.withLock { $0.append(event) }
    }

    /// The requests sent under any of `keys`, in the order they were sent.
    func requests(keys: [String]) -> [Request] {
        requests.withLock {
            $0.filter { request in
                guard let sent = request.idempotencyKey else { return false }
                return keys.contains { $0.utf8.elementsEqual(sent.utf8) }
            }
        }
    }

    /// The server's answers to `key`, in order.
    func answers(key: String) -> [ServerEvent] {
        answers.withLock { $0.filter { $0.idempotencyKey?.utf8.elementsEqual(key.utf8) == true } }
    }

    private static func header(_ name: String, in headers: [String: String]) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
