import Foundation
import OutboxWire
import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness
import Synchronization

/// Ways a request can go wrong between the phone and the server.
enum NetworkFault: String, Sendable, CaseIterable {
    /// Lost before reaching the server: a timeout, nothing applied.
    case lostBeforeServer
    /// The server committed; the response was lost on the way back.
    case lostAfterCommit
    /// 503 (or 500) from the server, nothing applied.
    case serverError
    /// 429 with a Retry-After.
    case rateLimited
    /// 401: the session expired; the app refreshes it later.
    case sessionExpired
    /// A captive portal's HTML 200.
    case captivePortal
    /// The first copy holds its claim finalizing while the client gives up; a retry meets 409
    /// in progress until the simulation lets it finish.
    case slowFinalizing
    /// The server applied it; then the process died before the outcome was recorded.
    case crashAfterSend
}

/// One request as it crossed the wire, and what reached the engine of it.
struct WireExchange: Sendable, Equatable {
    enum Answer: Sendable, Equatable {
        /// A response reached the engine: its status, the revision its body named (an edit
        /// applied, or a conflict's `server_revision`), and what it said of the record.
        case response(status: Int, revision: String?, body: WireBody)
        /// No response reached the engine: lost, offline, timed out.
        case noResponse
        /// A response came back to a process that died before it could record it.
        case lostWithTheProcess
    }

    /// The `If-Match` the request carried.
    var ifMatch: String?
    var answer: Answer
}

extension WireExchange.Answer {
    /// `response` as it reached the engine: its status, the revision its body names, its body.
    init(_ response: TransportResponse) {
        let revision = AnswerBody(response.body).revision.map { String($0) }
        self = .response(status: response.statusCode, revision: revision, body: WireBody(response))
    }
}

/// What a response's body said, as the engine reads it (`Docs/records.md`, "The wire"): the
/// server's error code, and the record it answered with (`record`, or a 412's `current`),
/// re-encoded with its members in key order and hashed, or that it was deleted.
struct WireBody: Sendable, Equatable {
    var code: String?
    var recordHash: SHA256Digest?
    var deleted = false
    /// The record the answer names, when it names one.
    var type: String?
    var id: String?
    /// The answer's `Outbox-Visible-At`: where the feed shows its change.
    var visibleAt: String?

    init(_ response: TransportResponse) {
        visibleAt = response.headers[WireHeader.visibleAt]
        // Read by the engine's one reader of an answer's body: its rules are not modelled twice.
        let body = AnswerBody(response.body)
        code = body.code
        deleted = body.deleted
        type = body.type
        id = body.id
        recordHash = (body.record ?? body.current).map { SHA256Digest(of: $0) }
    }
}

/// The simulated network: one seeded generator decides each request's fate, in the order the
/// requests come (the simulation sends one at a time, so the order is the seed's).
final class SimulatedNetwork: OutboxTransport {
    private struct State {
        var generator: SeededRandom
        var faultPercent: Int
        var latencySeconds: ClosedRange<Double>
        /// Virtual time requests spent on the wire, not yet added to the clock.
        var latencyOwed: Double = 0
        var requests = 0
        var feedRequests = 0
        /// Feed requests the process died holding the answer to (mid-page, mid-snapshot).
        var feedKills = 0
        var faultsInjected: [NetworkFault: Int] = [:]
        /// Every request per idempotency key, in order, not yet taken by ``takeExchanges()``.
        var exchanges: [String: [WireExchange]] = [:]
    }

    let server: ModelServer
    /// Whether the network is up, and whether it healed: from then on every request reaches the
    /// server and its answer comes back.
    let signal = NetworkSignal()
    private let state: Mutex<State>
    /// Kills the engine in the middle of an attempt: set by the simulation for each engine it
    /// opens.
    private let crashHandler = Mutex<(@Sendable () -> Void)?>(nil)
    /// The system taking the app's background time back while the next request is out: run as
    /// it is sent, then the request is cut off as a cancelled task's is (before the server).
    private let expiry = Mutex<(@Sendable () -> Void)?>(nil)

    init(seed: UInt64, server: ModelServer, faultPercent: Int) {
        self.server = server
        state = Mutex(State(generator: SeededRandom(seed: seed), faultPercent: faultPercent, latencySeconds: 0...2))
    }

    /// What to run when a request kills the engine after the server applied it.
    func onCrash(_ handler: @escaping @Sendable () -> Void) {
        crashHandler.withLock { $0 = handler }
    }

    /// Takes the background time back at the next request (`nil`: at none).
    func expireAtNextRequest(_ handler: (@Sendable () -> Void)?) {
        expiry.withLock { $0 = handler }
    }

    /// Whether an expiry set for the next request is still waiting for one.
    var expiryPending: Bool { expiry.withLock { $0 != nil } }

    var faultsInjected: [NetworkFault: Int] { state.withLock { $0.faultsInjected } }

    /// The latency spent since the last call, to move the clock by.
    func takeLatency() -> Double {
        state.withLock { state in
            defer { state.latencyOwed = 0 }
            return state.latencyOwed
        }
    }
    var requestCount: Int { state.withLock { $0.requests } }
    /// Of them, the change feed's (pages, snapshot pages, summaries).
    var feedRequestCount: Int { state.withLock { $0.feedRequests } }
    var feedKills: Int { state.withLock { $0.feedKills } }

    static func isFeed(_ request: TransportRequest) -> Bool {
        request.method == "GET" && request.endpoint.hasPrefix("/sync/")
    }

    /// The requests sent since the last call, per idempotency key, in order.
    func takeExchanges() -> [String: [WireExchange]] {
        state.withLock { state in
            defer { state.exchanges = [:] }
            return state.exchanges
        }
    }

    private func record(_ request: TransportRequest, _ answer: WireExchange.Answer) {
        // A feed request is no write's attempt: it is counted, not kept for the audit.
        guard !Self.isFeed(request) else {
            state.withLock { $0.feedRequests += 1 }
            return
        }
        let key = request.headers[OutboxHeader.idempotencyKey] ?? ""
        let exchange = WireExchange(ifMatch: request.headers[OutboxHeader.ifMatch], answer: answer)
        state.withLock { $0.exchanges[key, default: []].append(exchange) }
    }

    /// Records that `response` reached the engine, and hands it over.
    private func delivered(_ request: TransportRequest, _ response: TransportResponse) -> TransportResponse {
        record(request, WireExchange.Answer(response))
        return response
    }

    /// Records that no response reached the engine, and throws `error` as the transport would.
    private func unanswered(_ request: TransportRequest, _ error: URLError.Code) -> URLError {
        record(request, .noResponse)
        return URLError(error)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let (isOnline, isHealed) = (signal.isOnline, signal.isHealed)
        let (online, fault, latency, retryAfter) = state.withLock { state -> (Bool, NetworkFault?, Double, Int) in
            state.requests += 1
            let latency = state.generator.double(in: state.latencySeconds)
            guard isOnline else { return (false, nil, latency, 0) }
            guard !isHealed, state.generator.int(in: 0..<100) < state.faultPercent else { return (true, nil, latency, 0) }
            let fault = NetworkFault.allCases[state.generator.int(in: 0..<NetworkFault.allCases.count)]
            state.faultsInjected[fault, default: 0] += 1
            return (true, fault, latency, state.generator.int(in: 1..<120))
        }
        // Latency is virtual time the request spends out. The clock is moved by it at the next step
        // boundary, not here: moving it mid-request would fire timers at moments only the thread
        // scheduler decides, and a seed would no longer replay exactly.
        state.withLock { $0.latencyOwed += latency }
        if let expire = expiry.withLock({ handler in defer { handler = nil }; return handler }) {
            expire()
            record(request, .noResponse)
            throw CancellationError()
        }
        guard online else { throw unanswered(request, .notConnectedToInternet) }
        switch fault {
        case nil:
            return delivered(request, try server.handle(request))
        case .lostBeforeServer:
            throw unanswered(request, .timedOut)
        case .lostAfterCommit:
            _ = try server.handle(request)
            throw unanswered(request, .networkConnectionLost)
        case .serverError:
            return delivered(request, .error(503, code: "maintenance", message: "Back soon"))
        case .rateLimited:
            return delivered(request, .error(429, code: "rate_limited", message: "Slow down", headers: [WireHeader.retryAfter: String(retryAfter)]))
        case .sessionExpired:
            return delivered(request, .error(401, code: "token_expired", message: "Sign in again"))
        case .captivePortal:
            return delivered(request, TransportResponse(statusCode: 200, headers: ["Content-Type": "text/html"], body: Data("<html>Wi-Fi sign-in</html>".utf8)))
        case .slowFinalizing:
            // A read holds no claim: it is only slow, and the engine gives up on it.
            if !Self.isFeed(request) { server.handleSlowly(request) }
            throw unanswered(request, .timedOut)
        case .crashAfterSend:
            let response = try server.handle(request)
            if Self.isFeed(request) { state.withLock { $0.feedKills += 1 } }
            record(request, .lostWithTheProcess)
            // The process dies with the response in hand: its outcome is never recorded.
            crashHandler.withLock { $0 }?()
            return response
        }
    }
}
