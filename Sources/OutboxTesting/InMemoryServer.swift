public import Foundation
import OutboxWire
public import Outbox
import Synchronization

/// An idempotent server in memory, used as a transport: the engine's tests (and an app's) can
/// prove exactly-once without a socket.
///
/// It applies a write once per `Idempotency-Key`: a repeat with the same body replays the stored
/// response (with `Idempotent-Replayed: true`), a repeat with another body answers 409
/// `idempotency_conflict`. Faults are scripted per request:
///
/// ```swift
/// let server = InMemoryServer()
/// server.inject(.applyThenDropResponse)   // commits, then the response is lost
/// // ... the engine retries ...
/// server.appliedCount(key) == 1
/// ```
public final class InMemoryServer: OutboxTransport {
    /// What the next request meets.
    public enum Fault: Sendable {
        /// No fault: apply (or replay) as usual.
        case apply
        /// Apply the write, then lose the response on the way back.
        case applyThenDropResponse
        /// No response, and the write never reached the server.
        case noResponse(TransportFailure)
        /// Answer this without applying anything (a 5xx, a 401, a captive portal, ...).
        case respond(TransportResponse)
        /// Hold the request for approval: apply it, store and answer 202 with a request id.
        case holdForApproval(requestID: String)
    }

    /// One write the server applied.
    public struct Record: Sendable, Equatable {
        public var key: String
        public var endpoint: String
        public var body: Data
        public var revision: Int
    }

    private struct Claim {
        var body: Data
        var response: TransportResponse
    }

    private struct State {
        var faults: [Fault] = []
        var claims: [String: Claim] = [:]
        var records: [Record] = []
        var applied: [String: Int] = [:]
        var requests: [TransportRequest] = []
        var online = true
    }

    private let state = Mutex(State())

    public init() {}

    /// Scripts faults for the next requests, in order.
    public func inject(_ faults: Fault...) {
        state.withLock { $0.faults.append(contentsOf: faults) }
    }

    /// While offline every request fails with no response, and nothing is applied.
    public func setOnline(_ online: Bool) {
        state.withLock { $0.online = online }
    }

    /// Every write applied, in the order applied.
    public var records: [Record] {
        state.withLock { $0.records }
    }

    /// Every request received (including those answered with a fault), in order.
    public var requests: [TransportRequest] {
        state.withLock { $0.requests }
    }

    /// How many times the write under `key` was applied: exactly-once means 1.
    public func appliedCount(_ key: String) -> Int {
        state.withLock { $0.applied[key] ?? 0 }
    }

    /// The most times any key was applied.
    public var maxAppliedCount: Int {
        state.withLock { $0.applied.values.max() ?? 0 }
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let outcome = state.withLock { state -> Result<TransportResponse, URLError> in
            state.requests.append(request)
            guard state.online else { return .failure(URLError(.notConnectedToInternet)) }
            let fault = state.faults.isEmpty ? nil : state.faults.removeFirst()
            switch fault {
            case .noResponse(let failure)?:
                return .failure(URLError(failure.urlErrorCode))
            case .respond(let response)?:
                return .success(response)
            case .applyThenDropResponse?:
                _ = Self.apply(request, to: &state, approval: nil)
                return .failure(URLError(.networkConnectionLost))
            case .holdForApproval(let requestID)?:
                return .success(Self.apply(request, to: &state, approval: requestID))
            case .apply?, nil:
                return .success(Self.apply(request, to: &state, approval: nil))
            }
        }
        return try outcome.get()
    }

    /// The claim logic: first use applies and stores the response; a repeat replays or conflicts.
    private static func apply(_ request: TransportRequest, to state: inout State, approval: String?) -> TransportResponse {
        guard let key = request.headers[OutboxHeader.idempotencyKey], !key.isEmpty else {
            return .error(400, code: ErrorCode.idempotencyKeyRequired, message: "An Idempotency-Key header is required.")
        }
        if let claim = state.claims[key] {
            guard claim.body == request.body else {
                return .error(409, code: ErrorCode.idempotencyConflict, message: "This key was used with a different body.")
            }
            var replay = claim.response
            replay.headers[WireHeader.idempotentReplayed] = "true"
            return replay
        }
        let revision = state.records.count + 1
        state.records.append(Record(key: key, endpoint: request.endpoint, body: request.body, revision: revision))
        state.applied[key, default: 0] += 1
        let response: TransportResponse = if let approval {
            .json(202, #"{"request_id":"\#(approval)","status":"pending_approval"}"#)
        } else {
            .json(201, #"{"revision":"\#(revision)"}"#)
        }
        state.claims[key] = Claim(body: request.body, response: response)
        return response
    }
}
