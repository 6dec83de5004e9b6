public import Foundation
public import IdempotencyClaims
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
        case noResponse(TransportRequest.Failure)
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

    /// What the server stores, committed with each claim in one transaction of its store.
    struct Stored: Sendable {
        var records: [Record] = []
        var current: [String: CurrentRecord] = [:]
        /// The last revision handed out, by an applied write or a change made elsewhere.
        var lastRevision = 0
        var applied: [String: Int] = [:]
    }

    /// The faults scripted and what came, apart from what the server stores.
    struct State {
        var faults: [Fault] = []
        /// Faults for the next request or batched operation with a key, in order per key.
        var keyedFaults: [String: [Fault]] = [:]
        /// Every batch read, in order.
        var batches: [BatchRequest] = []
        var requests: [TransportRequest] = []
        var online = true
    }

    let state = Mutex(State())
    /// The records and the claims, in the claims library's own in-memory store: a copy is
    /// replayed, a key reused with another body conflicts, exactly as on the loopback server.
    let store = InMemoryClaimStore(records: Stored())
    let claims: IdempotencyClaims<InMemoryClaimStore<Stored>>
    /// The most operations a batch may hold; more are answered 413 `batch_too_large`.
    public let maxBatchOperations: Int
    /// The upload endpoints and the object store behind them (``InMemoryObjectStore``): grant
    /// and completion requests meet this server's faults and offline switch like any request.
    public let objectStore: InMemoryObjectStore

    /// - Parameters:
    ///   - maxBatchOperations: the most operations one `POST /sync/batch` may hold (100 by
    ///     default); a larger batch is answered 413 `batch_too_large` as a whole.
    ///   - claimClock: the clock the claims' retention and leases are measured by.
    ///   - objectStore: the store uploads land in (its clock is the one grants expire by).
    public init(maxBatchOperations: Int = 100, claimClock: any ClaimClock = SystemClaimClock(),
                objectStore: InMemoryObjectStore = InMemoryObjectStore()) {
        precondition(maxBatchOperations > 0, "maxBatchOperations must be positive")
        self.maxBatchOperations = maxBatchOperations
        self.objectStore = objectStore
        claims = IdempotencyClaims(store: store, clock: claimClock)
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
        store.records().records
    }

    /// Every request received (including those answered with a fault), in order.
    public var requests: [TransportRequest] {
        state.withLock { $0.requests }
    }

    /// The record at `path` (e.g. `/products/p-1`) as it stands now; `nil` when there is none.
    public func currentRecord(at path: String) -> CurrentRecord? {
        store.records().current[path]
    }

    /// Changes the record at `path` as another device would, outside any claim: `patch` merged
    /// into it (RFC 7396; by default nothing, so only its revision moves). An update whose
    /// `If-Match` names the old revision is answered 412 from then on.
    /// - Returns: the record as changed; `nil` when there is none at `path`, or `patch` is not
    ///   a JSON object.
    @discardableResult
    public func changeRecord(at path: String, patch: Data = Data("{}".utf8)) -> CurrentRecord? {
        // An in-memory transaction throws only what its closure throws, and this one throws nothing.
        try? store.transaction { txn -> CurrentRecord? in
            guard var record = txn.records.current[path], Self.isObject(patch),
                let merged = try? JSONMergePatch.apply(Array(patch), to: Array(record.body))
            else { return nil }
            txn.records.lastRevision += 1
            record.body = Data(merged)
            record.revision = txn.records.lastRevision
            txn.records.current[path] = record
            return record
        } ?? nil
    }

    /// How many times the write under `key` was applied: exactly-once means 1.
    public func appliedCount(_ key: String) -> Int {
        store.records().applied[key] ?? 0
    }

    /// The most times any key was applied.
    public var maxAppliedCount: Int {
        store.records().applied.values.max() ?? 0
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let outcome = state.withLock { state -> Result<TransportResponse, URLError> in
            state.requests.append(request)
            let isBatch = Self.isBatch(request)
            if isBatch { state.recordBatch(request) }
            guard state.online else { return .failure(URLError(.notConnectedToInternet)) }
            if isBatch { return answerBatch(request, in: &state) }
            let keyed = request.headers[OutboxHeader.idempotencyKey].flatMap { state.takeKeyedFault(for: $0) }
            let fault = keyed ?? (state.faults.isEmpty ? nil : state.faults.removeFirst())
            switch fault {
            case .noResponse(let failure)?:
                return .failure(URLError(failure.urlErrorCode))
            case .respond(let response)?:
                return .success(response)
            case .applyThenDropResponse?:
                _ = apply(request, approval: nil)
                return .failure(URLError(.networkConnectionLost))
            case .holdForApproval(let requestID)?:
                return .success(apply(request, approval: requestID))
            case .apply?, nil:
                return .success(apply(request, approval: nil))
            }
        }
        return try outcome.get()
    }

    /// A segment `PUT` to the object store: refused with no response while offline.
    public func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        guard state.withLock({ $0.online }) else { throw URLError(.notConnectedToInternet) }
        return objectStore.put(segment)
    }

    /// Answers one write through the claims: the first use of a key applies it and stores the
    /// response with it; a copy replays it, a key reused with another body conflicts. An update
    /// that is refused (404, 412) stores nothing, not even the claim.
    func apply(_ request: TransportRequest, approval: String?) -> TransportResponse {
        if let answer = objectStore.handle(request) { return answer }
        let scope = ClaimScope(businessID: request.headers[OutboxHeader.businessID] ?? "", operationType: Self.operationType(of: request))
        let answer: ClaimAnswer
        do {
            answer = try claims.handle(scope: scope, key: request.headers[OutboxHeader.idempotencyKey], body: request.body) { txn in
                try Self.write(request, key: request.headers[OutboxHeader.idempotencyKey] ?? "", approval: approval, to: &txn.records)
            }
        } catch {
            // The in-memory store throws only what the write throws, and the write throws
            // only refusals, which the claims answer themselves.
            return .error(500, code: "internal_error", message: "the server failed to store the write: \(error)")
        }
        return TransportResponse(answer.response)
    }

    /// The kind of write a claim is scoped by, as the loopback server names it: the collection
    /// and the action (`products.create`, `products.update`, `products.delete`).
    static func operationType(of request: TransportRequest) -> String {
        let collection = request.endpoint.split(separator: "/").first.map(String.init) ?? ""
        let action = switch request.method {
        case "POST": "create"
        case "PUT", "PATCH": "update"
        case "DELETE": "delete"
        default: request.method.lowercased()
        }
        return collection + "." + action
    }

    /// The write a claim protects, in the claim's transaction.
    private static func write(_ request: TransportRequest, key: String, approval: String?, to stored: inout Stored) throws(ClaimRefusal) -> ClaimResponse {
        let isUpdate = request.method == "PUT" || request.method == "PATCH"
        var updated: CurrentRecord?
        if isUpdate { updated = try checkedUpdate(request, in: stored) }
        stored.lastRevision += 1
        let revision = stored.lastRevision
        stored.records.append(Record(key: key, endpoint: request.endpoint, body: request.body, revision: revision))
        stored.applied[key, default: 0] += 1
        if var updated {
            updated.revision = revision
            stored.current[updated.path] = updated
        } else if let id = createdID(request) {
            let path = request.endpoint + "/" + id
            stored.current[path] = CurrentRecord(path: path, body: request.body, revision: revision)
        }
        let json = Header(name: "Content-Type", value: "application/json")
        if let approval {
            return ClaimResponse(status: 202, headers: [json], body: Data(#"{"request_id":"\#(approval)","status":"pending_approval"}"#.utf8))
        }
        var response = ClaimResponse(status: isUpdate ? 200 : 201, headers: [json], body: Data(#"{"revision":"\#(revision)"}"#.utf8))
        if isUpdate { response.headers.append(Header(name: WireHeader.eTag, value: "\"\(revision)\"")) }
        return response
    }

    private typealias Header = ClaimResponse.Header

    /// The record an update would leave (its revision not yet assigned), or why it is refused:
    /// 404 for no record, 400 for an `If-Match` that cannot be read, 412 for one naming a
    /// revision the record has moved past, 422 for a body that is not a JSON object.
    private static func checkedUpdate(_ request: TransportRequest, in stored: Stored) throws(ClaimRefusal) -> CurrentRecord {
        guard var record = stored.current[request.endpoint] else {
            throw ClaimRefusal(.problem(status: 404, code: "not_found", message: "There is no record at \(request.endpoint)."))
        }
        let header = request.headers.first { $0.key.lowercased() == WireHeader.ifMatch.lowercased() }?.value
        let condition: IfMatch?
        do {
            condition = try IfMatch.parse(header)
        } catch {
            throw ClaimRefusal(.problem(status: 400, code: "if_match_invalid", message: error.message))
        }
        if let condition, !condition.matches(revision: record.revision) {
            throw ClaimRefusal(.revisionConflict(revision: UInt64(record.revision), current: record.body,
                                                 message: "This record changed elsewhere: it is at revision \(record.revision)."))
        }
        guard isObject(request.body) else {
            throw ClaimRefusal(.problem(status: 422, code: WireErrorCode.validationFailed, message: "An update's body must be a JSON object."))
        }
        if request.method == "PATCH" {
            guard let merged = try? JSONMergePatch.apply(Array(request.body), to: Array(record.body)) else {
                throw ClaimRefusal(.problem(status: 422, code: WireErrorCode.validationFailed, message: "The patch could not be applied."))
            }
            record.body = Data(merged)
        } else {
            record.body = request.body
        }
        return record
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
