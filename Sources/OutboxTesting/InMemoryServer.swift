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
///
/// Records and revisions: a `POST` whose body is a JSON object with an `"id"` string creates
/// the record at `<endpoint>/<id>` (`/products` and `p-1`: `/products/p-1`). A `PUT` (the whole
/// record) or `PATCH` (a JSON merge patch) to that path updates it, under the same rules as the
/// loopback test server: the key's claim is looked up first (a copy of an applied update is
/// replayed, never refused), then `If-Match`; a revision the record has moved past is answered
/// 412 `revision_conflict` with `server_revision`, `current` and an `ETag`, and keeps no claim,
/// nor does a 404 for a record that is not there. Without `If-Match` the last writer wins.
/// ``changeRecord(at:patch:)`` changes a record as another device would. Revisions count every
/// write the server stores (1, 2, 3, ... across records), so they only grow.
///
/// `POST /sync/batch` takes a `BatchRequest` and answers each operation as its single request
/// (see `InMemoryServer+Batch.swift`): ``inject(_:forKey:)`` scripts one operation's fault,
/// ``batches`` counts what came.
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

    /// A record as it stands now: what an update is checked against.
    public struct CurrentRecord: Sendable, Equatable {
        /// Where it is updated, e.g. `/products/p-1`.
        public var path: String
        /// Its JSON: the create's or last `PUT`'s body as sent, or merged with each `PATCH`.
        public var body: Data
        public var revision: Int

        public init(path: String, body: Data, revision: Int) {
            self.path = path
            self.body = body
            self.revision = revision
        }
    }

    struct Claim {
        var body: Data
        var response: TransportResponse
    }

    struct State {
        var faults: [Fault] = []
        /// Faults for the next request or batched operation with a key, in order per key.
        var keyedFaults: [String: [Fault]] = [:]
        /// Every batch read, in order.
        var batches: [BatchRequest] = []
        var claims: [String: Claim] = [:]
        var records: [Record] = []
        var current: [String: CurrentRecord] = [:]
        /// The last revision handed out, by an applied write or a change made elsewhere.
        var lastRevision = 0
        var applied: [String: Int] = [:]
        var requests: [TransportRequest] = []
        var online = true
    }

    let state = Mutex(State())
    /// The most operations a batch may hold; more are answered 413 `batch_too_large`.
    public let maxBatchOperations: Int

    /// - Parameter maxBatchOperations: the most operations one `POST /sync/batch` may hold
    ///   (100 by default); a larger batch is answered 413 `batch_too_large` as a whole.
    public init(maxBatchOperations: Int = 100) {
        precondition(maxBatchOperations > 0, "maxBatchOperations must be positive")
        self.maxBatchOperations = maxBatchOperations
    }

    /// Scripts faults for the next requests, in order. A `POST /sync/batch` is one request:
    /// the fault it meets applies to the batch as a whole (see ``inject(_:forKey:)`` for one of
    /// its operations).
    public func inject(_ faults: Fault...) {
        state.withLock { $0.faults.append(contentsOf: faults) }
    }

    /// Scripts a fault for the next request, or the next operation of a batch, carrying `key`
    /// as its `Idempotency-Key`; several for one key apply in order. It comes before any fault
    /// queued by ``inject(_:)`` for that request. In a batch:
    ///
    /// | fault | the operation |
    /// |---|---|
    /// | ``Fault/respond(_:)`` | answered with that response (a 503, say), nothing applied |
    /// | ``Fault/noResponse(_:)`` | left out of the answer, nothing applied |
    /// | ``Fault/applyThenDropResponse`` | applied, and left out of the answer |
    /// | ``Fault/holdForApproval(requestID:)`` | held for approval: 202 with the request id |
    /// | ``Fault/apply`` | applied (or replayed) as usual |
    public func inject(_ fault: Fault, forKey key: String) {
        state.withLock { $0.keyedFaults[key, default: []].append(fault) }
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

    /// The record at `path` (e.g. `/products/p-1`) as it stands now; `nil` when there is none.
    public func currentRecord(at path: String) -> CurrentRecord? {
        state.withLock { $0.current[path] }
    }

    /// Changes the record at `path` as another device would, outside any claim: `patch` merged
    /// into it (RFC 7396; by default nothing, so only its revision moves). An update whose
    /// `If-Match` names the old revision is answered 412 from then on.
    /// - Returns: the record as changed; `nil` when there is none at `path`, or `patch` is not
    ///   a JSON object.
    @discardableResult
    public func changeRecord(at path: String, patch: Data = Data("{}".utf8)) -> CurrentRecord? {
        state.withLock { state in
            guard var record = state.current[path], Self.isObject(patch),
                let merged = try? JSONMergePatch.apply(Array(patch), to: Array(record.body))
            else { return nil }
            state.lastRevision += 1
            record.body = Data(merged)
            record.revision = state.lastRevision
            state.current[path] = record
            return record
        }
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
            let isBatch = Self.isBatch(request)
            if isBatch { state.recordBatch(request) }
            guard state.online else { return .failure(URLError(.notConnectedToInternet)) }
            if isBatch { return Self.answerBatch(request, in: &state, maxOperations: maxBatchOperations) }
            let keyed = request.headers[OutboxHeader.idempotencyKey].flatMap { state.takeKeyedFault(for: $0) }
            let fault = keyed ?? (state.faults.isEmpty ? nil : state.faults.removeFirst())
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
    /// An update that is refused (404, 412) stores nothing, not even the claim.
    static func apply(_ request: TransportRequest, to state: inout State, approval: String?) -> TransportResponse {
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
        let isUpdate = request.method == "PUT" || request.method == "PATCH"
        var updated: CurrentRecord?
        if isUpdate {
            switch checkedUpdate(request, in: state) {
            case .success(let record): updated = record
            case .failure(let refusal): return refusal.response
            }
        }
        state.lastRevision += 1
        let revision = state.lastRevision
        state.records.append(Record(key: key, endpoint: request.endpoint, body: request.body, revision: revision))
        state.applied[key, default: 0] += 1
        if var updated {
            updated.revision = revision
            state.current[updated.path] = updated
        } else if let id = createdID(request) {
            let path = request.endpoint + "/" + id
            state.current[path] = CurrentRecord(path: path, body: request.body, revision: revision)
        }
        var response: TransportResponse = if let approval {
            .json(202, #"{"request_id":"\#(approval)","status":"pending_approval"}"#)
        } else {
            .json(isUpdate ? 200 : 201, #"{"revision":"\#(revision)"}"#)
        }
        if isUpdate, approval == nil { response.headers[WireHeader.eTag] = "\"\(revision)\"" }
        state.claims[key] = Claim(body: request.body, response: response)
        return response
    }

    /// A refused update's answer: stored nowhere.
    private struct Refusal: Error {
        var response: TransportResponse
    }

    /// The record an update would leave (its revision not yet assigned), or why it is refused:
    /// 404 for no record, 400 for an `If-Match` that cannot be read, 412 for one naming a
    /// revision the record has moved past, 422 for a body that is not a JSON object.
    private static func checkedUpdate(_ request: TransportRequest, in state: State) -> Result<CurrentRecord, Refusal> {
        guard var record = state.current[request.endpoint] else {
            return .failure(Refusal(response: .error(404, code: "not_found", message: "There is no record at \(request.endpoint).")))
        }
        let header = request.headers.first { $0.key.lowercased() == WireHeader.ifMatch.lowercased() }?.value
        let condition: IfMatch?
        do {
            condition = try IfMatch.parse(header)
        } catch {
            return .failure(Refusal(response: .error(400, code: "if_match_invalid", message: error.message)))
        }
        if let condition, !condition.matches(revision: record.revision) {
            var body = Data(#"{"code":"\#(WireErrorCode.revisionConflict)","message":"This record changed elsewhere: it is at revision \#(record.revision).","server_revision":"\#(record.revision)","current":"#.utf8)
            body += record.body
            body += Data("}".utf8)
            return .failure(Refusal(response: TransportResponse(
                statusCode: 412, headers: ["Content-Type": "application/json", WireHeader.eTag: "\"\(record.revision)\""], body: body)))
        }
        guard isObject(request.body) else {
            return .failure(Refusal(response: .error(422, code: WireErrorCode.validationFailed, message: "An update's body must be a JSON object.")))
        }
        if request.method == "PATCH" {
            guard let merged = try? JSONMergePatch.apply(Array(request.body), to: Array(record.body)) else {
                return .failure(Refusal(response: .error(422, code: WireErrorCode.validationFailed, message: "The patch could not be applied.")))
            }
            record.body = Data(merged)
        } else {
            record.body = request.body
        }
        return .success(record)
    }

    /// The `"id"` of a create's body, when it is a JSON object with one.
    private static func createdID(_ request: TransportRequest) -> String? {
        guard request.method == "POST",
            let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let id = object["id"] as? String, !id.isEmpty
        else { return nil }
        return id
    }

    private static func isObject(_ body: Data) -> Bool {
        (try? JSONSerialization.jsonObject(with: body)) is [String: Any]
    }
}
