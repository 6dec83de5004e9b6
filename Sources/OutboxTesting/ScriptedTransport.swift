public import Foundation
public import Outbox
import Synchronization

/// A transport that answers from a script and records everything it was sent.
///
/// ```swift
/// let transport = ScriptedTransport(otherwise: .fail(.offline))
/// transport.script(.respond(.json(201, #"{"id":"p1"}"#)), .fail(.timedOut))
/// // ... the engine sends ...
/// transport.requests.count   // 2
/// ```
///
/// Each send takes the next step of the script; when the script is empty, ``otherwise``, which
/// every test names (there is no default: a script that ran out never answers in silence), counted
/// in ``unscriptedRequests`` so a test can say that none went unscripted.
public final class ScriptedTransport: OutboxTransport {
    /// One scripted answer.
    public enum Step: Sendable {
        /// Answer with this response.
        case respond(TransportResponse)
        /// No response: throw a `URLError` of this failure's class.
        case fail(TransportRequest.Failure)
        /// Compute the answer (a model server, a suspension point for a test).
        case handle(@Sendable (TransportRequest) async throws -> TransportResponse)
        /// Hold the request, as a slow network does, until ``answerHeld(_:)`` gives it an
        /// answer or the sending task is cancelled (then it throws `CancellationError`, as
        /// `URLSession` does). ``waitUntilHolding(_:)`` returns once it is held.
        case hold
    }

    /// A request held by a ``Step/hold`` step.
    private struct Held {
        var id: Int
        var continuation: CheckedContinuation<Step, any Error>
    }

    private struct State {
        var script: [Step] = []
        var otherwise: Step
        var requests: [TransportRequest] = []
        var unscripted = 0
        var held: [Held] = []
        var nextHeld = 0
        var holdWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Resumes the waiters whose count of held requests is reached.
        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            let ready = holdWaiters.filter { $0.count <= held.count }.map(\.continuation)
            holdWaiters.removeAll { $0.count <= held.count }
            return ready
        }
    }

    private let state: Mutex<State>

    /// - Parameter otherwise: the answer when the script is empty: `.fail(.offline)` for a device
    ///   out of signal, or a `.handle` that records the unscripted send as a failure of the test.
    public init(otherwise: Step) {
        state = Mutex(State(otherwise: otherwise))
    }

    /// Appends steps to the script.
    public func script(_ steps: Step...) {
        state.withLock { $0.script.append(contentsOf: steps) }
    }

    /// Sets the answer used when the script is empty.
    public func setOtherwise(_ step: Step) {
        state.withLock { $0.otherwise = step }
    }

    /// Every request sent so far, in order.
    public var requests: [TransportRequest] {
        state.withLock { $0.requests }
    }

    /// Steps not yet used.
    public var remainingSteps: Int {
        state.withLock { $0.script.count }
    }

    /// Sends that found the script empty and were answered by ``otherwise``.
    public var unscriptedRequests: Int {
        state.withLock { $0.unscripted }
    }

    /// Requests held now by ``Step/hold`` steps.
    public var heldRequests: Int {
        state.withLock { $0.held.count }
    }

    /// Returns once at least `count` requests are held.
    public func waitUntilHolding(_ count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.held.count < count else { return true }
                state.holdWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Answers the request held longest with `step` (which must not hold it again).
    /// - Returns: whether a request was held.
    @discardableResult
    public func answerHeld(_ step: Step) -> Bool {
        let held = state.withLock { state -> Held? in state.held.isEmpty ? nil : state.held.removeFirst() }
        held?.continuation.resume(returning: step)
        return held != nil
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var step = nextStep(for: request)
        if case .hold = step { step = try await hold() }
        switch step {
        case .respond(let response):
            return response
        case .fail(let failure):
            throw URLError(failure.urlErrorCode)
        case .handle(let handler):
            return try await handler(request)
        case .hold:
            preconditionFailure("a held request was answered with another hold")
        }
    }

    /// Waits, held, for ``answerHeld(_:)`` or the task's cancellation.
    private func hold() async throws -> Step {
        let id = state.withLock { state -> Int in
            state.nextHeld += 1
            return state.nextHeld
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Step, any Error>) in
                let (ready, cancelled) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                    if Task.isCancelled { return ([], true) }
                    state.held.append(Held(id: id, continuation: continuation))
                    return (state.readyWaiters(), false)
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                for waiter in ready { waiter.resume() }
            }
        } onCancel: {
            let held = state.withLock { state -> Held? in
                guard let index = state.held.firstIndex(where: { $0.id == id }) else { return nil }
                return state.held.remove(at: index)
            }
            held?.continuation.resume(throwing: CancellationError())
        }
    }

    private func nextStep(for request: TransportRequest) -> Step {
        let step = state.withLock { state -> Step in
            state.requests.append(request)
            guard !state.script.isEmpty else {
                state.unscripted += 1
                return state.otherwise
            }
            return state.script.removeFirst()
        }
        return step
    }
}

extension TransportResponse {
    /// A response with a JSON body and `Content-Type: application/json`.
    public static func json(_ statusCode: Int, _ body: String, headers: [String: String] = [:]) -> TransportResponse {
        var allHeaders = headers
        allHeaders["Content-Type"] = "application/json"
        return TransportResponse(statusCode: statusCode, headers: allHeaders, body: Data(body.utf8))
    }

    /// An error response with the JSON error body servers send: `{"code": ..., "message": ...}`.
    public static func error(_ statusCode: Int, code: String, message: String, headers: [String: String] = [:]) -> TransportResponse {
        // A dictionary of strings always serializes: this cannot throw.
        let body = try! JSONSerialization.data(withJSONObject: ["code": code, "message": message], options: [.sortedKeys])
        var response = json(statusCode, "", headers: headers)
        response.body = body
        return response
    }
}

extension TransportRequest.Failure {
    /// A `URLError` code of this class.
    public var urlErrorCode: URLError.Code {
        switch self {
        case .offline: .notConnectedToInternet
        case .timedOut: .timedOut
        case .connectionLost: .networkConnectionLost
        case .cannotConnect: .cannotConnectToHost
        case .hostNotFound: .cannotFindHost
        case .secureConnectionFailed: .secureConnectionFailed
        case .cancelled: .cancelled
        case .other, .missingFromBatch: .unknown
        }
    }
}
