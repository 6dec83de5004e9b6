import Dispatch
import Foundation
import IdempotencyClaims
import Outbox
import Synchronization

/// What the simulated server does with a write when it first applies it, fixed when the write is
/// made and carried in its payload.
public enum Fate: String, Sendable, CaseIterable {
    /// 201: applied.
    case normal
    /// 202: applied and held for approval.
    case approval
    /// 422: refused as invalid; nothing applied.
    case reject
    /// 403: refused for the member; nothing applied.
    case forbid
}

/// The server half as the simulation runs it: ``IdempotencyClaims`` over an in-memory store,
/// counting the effects of every key, in order.
final class ModelServer: Sendable {
    /// The server's records: every applied write, in the order applied.
    struct Records: Sendable {
        var applied: [Applied] = []
    }

    struct Applied: Sendable, Equatable {
        var key: String
        var entity: String?
        var body: Data
    }

    private struct Refusal: Error {
        var status: Int
        var code: String
        var message: String
    }

    /// A first copy holding its claim "finalizing": its write waits for ``finishParked()``.
    private struct Parked {
        var release: DispatchSemaphore
        var done: DispatchSemaphore
    }

    private let store = InMemoryClaimStore(records: Records())
    private let claims: IdempotencyClaims<InMemoryClaimStore<Records>>
    private let parked = Mutex<[Parked]>([])
    private let approvalNumbers = Atomic<Int>(0)

    init(clock: any ClaimClock) {
        claims = IdempotencyClaims(store: store, clock: clock)
    }

    /// Every write applied, in order.
    var applied: [Applied] { store.records().applied }

    /// How many times each key's write was applied.
    var appliedCounts: [String: Int] {
        applied.reduce(into: [:]) { $0[$1.key, default: 0] += 1 }
    }

    /// Answers one request, applying its write at most once per key.
    func handle(_ request: TransportRequest) throws -> TransportResponse {
        try answer(request, park: false)
    }

    /// Takes the request's claim and leaves its write finalizing until ``finishParked()``; a
    /// second copy meanwhile is answered `idempotency_in_progress`. Returns once the claim is
    /// taken (or the request was answered without taking one).
    func handleSlowly(_ request: TransportRequest) {
        let taken = DispatchSemaphore(value: 0)
        let entry = Parked(release: DispatchSemaphore(value: 0), done: DispatchSemaphore(value: 0))
        let thread = Thread { [self] in
            _ = try? answer(request, park: true, taken: taken, release: entry.release)
            taken.signal()
            entry.done.signal()
        }
        parked.withLock { $0.append(entry) }
        thread.start()
        taken.wait()
    }

    /// Lets every finalizing write complete, and waits until each has.
    func finishParked() {
        let all = parked.withLock { parked in
            defer { parked.removeAll() }
            return parked
        }
        for entry in all {
            entry.release.signal()
            entry.done.wait()
        }
    }

    var hasParked: Bool { parked.withLock { !$0.isEmpty } }

    private func answer(
        _ request: TransportRequest,
        park: Bool,
        taken: DispatchSemaphore? = nil,
        release: DispatchSemaphore? = nil
    ) throws -> TransportResponse {
        let payload = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
        let fate = (payload["fate"] as? String).flatMap(Fate.init(rawValue:)) ?? .normal
        let entity = payload["entity"] as? String
        let scope = ClaimScope(
            businessID: request.headers[OutboxHeader.businessID] ?? "default",
            operationType: request.endpoint
        )
        let key = request.headers[OutboxHeader.idempotencyKey]
        let answer: ClaimAnswer
        do {
            answer = try claims.handle(
                scope: scope, key: key, body: request.body,
                whileClaimed: {
                    guard park else { return }
                    taken?.signal()
                    release?.wait()
                },
                write: { txn in
                    switch fate {
                    case .reject:
                        throw Refusal(status: 422, code: ErrorCode.validationFailed, message: "The price must be positive.")
                    case .forbid:
                        throw Refusal(status: 403, code: "not_owner", message: "Only the owner may add this.")
                    case .normal, .approval:
                        break
                    }
                    txn.records.applied.append(Applied(key: key ?? "", entity: entity, body: request.body))
                    let json: String
                    let status: Int
                    if fate == .approval {
                        status = 202
                        json = #"{"request_id":"apr-\#(approvalNumbers.add(1, ordering: .relaxed).newValue)","status":"pending_approval"}"#
                    } else {
                        status = 201
                        json = #"{"revision":\#(txn.records.applied.count)}"#
                    }
                    return ClaimResponse(
                        status: status,
                        headers: [ClaimResponse.Header(name: "Content-Type", value: "application/json")],
                        body: Data(json.utf8)
                    )
                }
            )
        } catch let refusal as Refusal {
            return .error(refusal.status, code: refusal.code, message: refusal.message)
        }
        var headers: [String: String] = [:]
        for header in answer.response.headers { headers[header.name] = header.value }
        return TransportResponse(statusCode: answer.response.status, headers: headers, body: answer.response.body)
    }
}
