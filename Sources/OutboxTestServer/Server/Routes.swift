// Kept in one file: the route table and its handlers, so one place says what each path and
// method does.

import Foundation
import OutboxWire
import IdempotencyClaims

/// What the server does with one request: answer it, or drop the connection unanswered.
struct Reply {
    /// `nil`: close the connection without a response (`drop_after_commit`).
    var response: HTTPResponse?
    /// Release requests held by the `slow` fault for these keys once this reply is written: a
    /// copy of each has been answered.
    var releasesKeys: [String] = []
    /// Send the response's head and only half its body, then close (`cut_body`).
    var cutsBody = false
}

/// A business endpoint: one kind of record, created through claims (and updated and deleted,
/// for the kinds that are).
struct BusinessEndpoint: Sendable {
    /// `/products`: creates are `POST` here, updates `PUT` and `PATCH` at `/products/{id}`,
    /// deletes `DELETE` there.
    var path: String
    /// `product`: the record's type.
    var type: String
    /// Whether `PUT`, `PATCH` and `DELETE` at `path/{id}` update and delete its records.
    var isUpdatable: Bool
    /// Whether a create names a product (`"product_id"`) that must exist: a stock movement.
    var namesProduct = false

    /// `product.create`: the claim's operation type of a create.
    var createOperationType: String { type + ".create" }
    /// `product.update`: the claim's operation type of a `PUT` or a `PATCH`.
    var updateOperationType: String { type + ".update" }
    /// `product.delete`: the claim's operation type of a `DELETE`.
    var deleteOperationType: String { type + ".delete" }

    /// The claim's operation type of `action`.
    func operationType(of action: BusinessAction) -> String {
        switch action {
        case .create: createOperationType
        case .update: updateOperationType
        case .delete: deleteOperationType
        }
    }

    /// `/products/p-1`: where the record `id` is updated and deleted (its id percent-encoded).
    func location(of id: String) -> String {
        path + "/" + (id.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentAllowed) ?? id)
    }

    static let products = BusinessEndpoint(path: "/products", type: "product", isUpdatable: true)
    static let all = [
        products,
        BusinessEndpoint(path: "/employees", type: "employee", isUpdatable: true),
        BusinessEndpoint(path: "/stock-movements", type: "stock_movement", isUpdatable: false, namesProduct: true),
    ]

    /// The updatable endpoint and the record id of a path like `/products/p-1` (the id
    /// percent-decoded); `nil` for any other path.
    static func record(at path: String) -> (endpoint: BusinessEndpoint, id: String)? {
        for endpoint in all where endpoint.isUpdatable && path.hasPrefix(endpoint.path + "/") {
            let segment = path.dropFirst(endpoint.path.count + 1)
            guard !segment.isEmpty, !segment.contains("/"), let id = segment.removingPercentEncoding, !id.isEmpty else { return nil }
            return (endpoint, id)
        }
        return nil
    }
}

/// What a business request asks for.
enum BusinessAction: Equatable {
    case create
    /// `PUT` (`merging` false: the body is the whole record) or `PATCH` (a JSON merge patch).
    case update(id: String, merging: Bool)
    /// `DELETE`: the record becomes a tombstone at its next revision. A body is not read.
    case delete(id: String)
}

/// Where a request to a business endpoint's path goes.
enum BusinessRoute {
    /// A write the endpoint takes.
    case write(BusinessEndpoint, BusinessAction)
    /// A method the path does not take: this 405.
    case wrongMethod(HTTPResponse)
}

/// Every endpoint of the server, from a parsed request to a ``Reply``.
struct Routes: Sendable {
    static let businessHeader = WireHeader.businessID
    static let defaultBusinessID = "default"

    let storage: any ServerStorage
    let faults: FaultQueue
    let holds: Holds
    let slowHoldLimit: TimeInterval
    /// Added before each business request is handled, in seconds: a slower network or server.
    var latency: TimeInterval = 0
    /// Told of every business request once it is handled (and of one with a method its path
    /// does not take), of every operation of a batch, and of every request to a path no
    /// endpoint serves.
    var observer: (@Sendable (ServerEvent) -> Void)?
    /// The most operations a `POST /sync/batch` may hold; more are answered 413.
    var maxBatchOperations = BatchRequest.defaultMaxOperations
    /// What `GET /sync/changes` publishes and holds to.
    var feedLimits = FeedHandling.defaultLimits
    /// Numbers the batches in the order read, for the observer.
    let batchNumbers = BatchNumbers()
    /// How long a claim is kept, in seconds, announced on every answer to a write
    /// (`Outbox-Claim-Retention`); `nil`: not announced.
    var claimRetentionSeconds: TimeInterval?
    /// The upload endpoints' object store and settings; `nil`: `/uploads` answers 501.
    var uploads: Uploads?

    /// `reply` with the claim retention announced: a client replays a write under its key only
    /// while its first attempt is younger than that (Docs/wire.md).
    private func announcingRetention(_ reply: Reply) -> Reply {
        guard let retention = claimRetentionSeconds, var response = reply.response else { return reply }
        // First: a replay's answer is then its first answer's bytes but `Idempotent-Replayed`.
        response.headers.insert(.init(name: WireHeader.claimRetention, value: String(Int(retention.rounded(.down)))), at: 0)
        var announced = reply
        announced.response = response
        return announced
    }

    func reply(to request: HTTPRequest) -> Reply {
        if request.path == SnapshotPage.path || request.path == FeedSummary.path {
            guard request.method == "GET" else { return Reply(response: methodNotAllowed(allow: "GET")) }
            return Reply(response: recordsRead(request))
        }
        if request.path == FeedPage.path {
            guard request.method == "GET" else { return Reply(response: methodNotAllowed(allow: "GET")) }
            let fault = faults.take(.feed)
            if let fault, let response = Self.immediateResponse(to: fault) { return Reply(response: response) }
            if fault?.kind == .dropAfterCommit { return Reply(response: nil) }
            return Reply(response: feedPage(request), cutsBody: fault?.kind == .cutBody)
        }
        if request.path == BatchRequest.path {
            guard request.method == "POST" else { return refused(request, methodNotAllowed(allow: "POST")) }
            return announcingRetention(batch(request))
        }
        if let route = UploadRoute(path: request.path) {
            return upload(route, request)
        }
        switch businessRoute(request) {
        case .write(let endpoint, let action)?: return announcingRetention(business(endpoint, action, request))
        case .wrongMethod(let response)?: return refused(request, response)
        case nil: break
        }
        let controls = ControlRoute.allCases.filter { $0.matches(path: request.path) }
        if !controls.isEmpty {
            guard let control = controls.first(where: { $0.method == request.method }) else {
                return Reply(response: methodNotAllowed(allow: controls.map(\.method).joined(separator: ", ")))
            }
            return Reply(response: self.control(control, request))
        }
        return refused(request, Self.noEndpoint(at: request.path))
    }

    /// 404: no endpoint of this server serves `path`.
    static func noEndpoint(at path: String) -> HTTPResponse {
        .problem(404, code: "not_found", message: "no endpoint at \(path)")
    }

    /// The business endpoint and action `request` asks for; `nil` when no business endpoint
    /// serves its path.
    func businessRoute(_ request: HTTPRequest) -> BusinessRoute? {
        if let endpoint = BusinessEndpoint.all.first(where: { $0.path == request.path }) {
            guard request.method == "POST" else { return .wrongMethod(methodNotAllowed(allow: "POST")) }
            return .write(endpoint, .create)
        }
        if let (endpoint, id) = BusinessEndpoint.record(at: request.path) {
            switch request.method {
            case "PUT", "PATCH": return .write(endpoint, .update(id: id, merging: request.method == "PATCH"))
            case "DELETE": return .write(endpoint, .delete(id: id))
            default: return .wrongMethod(methodNotAllowed(allow: "PUT, PATCH, DELETE"))
            }
        }
        return nil
    }

    /// A request no business endpoint takes (no endpoint at its path, or not its method),
    /// answered before any claim, and told to the observer.
    private func refused(_ request: HTTPRequest, _ response: HTTPResponse) -> Reply {
        let (reply, event) = refusal(request, response, fault: nil, batch: nil)
        observer?(event)
        return reply
    }

    /// A request answered `response` before any claim, and what the observer is told of it.
    func refusal(_ request: HTTPRequest, _ response: HTTPResponse, fault: Fault?, batch: ServerEvent.BatchPart?) -> (Reply, ServerEvent) {
        let event = ServerEvent(
            method: request.method, path: request.path, target: request.target,
            idempotencyKey: request.header(WireHeader.idempotencyKey), outcome: .refused, status: response.status,
            fault: fault?.kind, batch: batch)
        return (Reply(response: response), event)
    }

    func methodNotAllowed(allow: String) -> HTTPResponse {
        .problem(405, code: "method_not_allowed", message: "this endpoint takes \(allow)", headers: [.init(name: "Allow", value: allow)])
    }

    // MARK: Business endpoints

    private func business(_ endpoint: BusinessEndpoint, _ action: BusinessAction, _ request: HTTPRequest) -> Reply {
        if latency > 0 { Thread.sleep(forTimeInterval: latency) }
        let (reply, event) = handleBusiness(endpoint, action, request)
        observer?(event)
        return reply
    }

    /// Handles one write, a request of its own or one operation of a batch (`batch`): its
    /// fault, its claim, its transaction.
    func handleBusiness(
        _ endpoint: BusinessEndpoint, _ action: BusinessAction, _ request: HTTPRequest, batch: ServerEvent.BatchPart? = nil
    ) -> (Reply, ServerEvent) {
        let key = request.header(WireHeader.idempotencyKey)
        func event(_ outcome: ServerEvent.Outcome, _ response: HTTPResponse?, _ fault: Fault?) -> ServerEvent {
            ServerEvent(
                method: request.method, path: request.path, target: request.target, idempotencyKey: key, outcome: outcome,
                status: response?.status, fault: fault?.kind, batch: batch)
        }
        let headers: BusinessHeaders
        switch BusinessHeaders.read(request, businessField: batch.map { "operations[\($0.index)].business_id" } ?? "the \(Self.businessHeader) header") {
        case .success(let read): headers = read
        case .failure(let refusal): return (Reply(response: refusal.response), event(.refused, refusal.response, nil))
        }
        let businessID = headers.businessID
        let targetsRecord = action != .create
        let fault = faults.take(batch == nil
            ? .request(path: request.path, key: key, targetsRecord: targetsRecord)
            : .batchOperation(path: request.path, key: key, targetsRecord: targetsRecord))
        let releases = key.map { [$0] } ?? []
        if let fault, let response = Self.immediateResponse(to: fault) {
            return (Reply(response: response, releasesKeys: releases), event(.refused, response, fault))
        }
        let isSlow = fault?.kind == .slow
        func failed(_ error: any Error) -> (Reply, ServerEvent) {
            let response = HTTPResponse.problem(500, code: "internal_error", message: "the server failed to store the write: \(error)")
            return (Reply(response: response, releasesKeys: isSlow ? [] : releases), event(.refused, response, fault))
        }
        if let fault, fault.kind == .changeRecord, let id = action.recordID, RecordBody.idProblem(id) == nil {
            // Another device's change, committed before this request is looked at.
            do {
                _ = try changeRecord(type: endpoint.type, businessID: businessID, id: id, patch: fault.patch ?? Data("{}".utf8))
            } catch {
                return failed(error)
            }
        }
        let operationType = endpoint.operationType(of: action)
        do {
            let answer = try storage.handle(
                scope: ClaimScope(businessID: businessID, operationType: operationType),
                key: key,
                body: request.body,
                whileClaimed: { if isSlow, let key { holds.hold(key: key, limit: slowHoldLimit) } }
            ) { txn in
                let response = try write(endpoint, action, request, headers: headers, key: key ?? "",
                                         approval: fault?.kind == .pendingApproval, at: Self.payloadPath(batch), in: txn)
                if fault?.kind == .holdInTransaction, let key {
                    holds.hold(key: key, limit: slowHoldLimit, releasableByCopies: false)
                }
                return response
            }
            let response = fault?.kind == .dropAfterCommit ? nil : HTTPResponse(answer.response)
            let outcome: ServerEvent.Outcome = switch answer.outcome {
            case .applied: .applied
            case .replayed: .replayed
            case .conflict: .conflict
            case .inProgress: .inProgress
            case .refused: answer.response.status == 412 ? .revisionConflict : .refused
            case .keyRequired, .keyInvalid: .refused
            }
            return (Reply(response: response, releasesKeys: isSlow ? [] : releases, cutsBody: fault?.kind == .cutBody),
                    event(outcome, response, fault))
        } catch {
            return failed(error)
        }
    }

    /// The write a claim protects: a record created, updated or deleted (or a pending approval
    /// instead) and its applied count. What it refuses leaves nothing, not even the claim.
    private func write(
        _ endpoint: BusinessEndpoint, _ action: BusinessAction, _ request: HTTPRequest, headers: BusinessHeaders, key: String,
        approval: Bool, at path: JSONPath, in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        do {
            switch action {
            case .create:
                return try create(endpoint, request.body, businessID: headers.businessID, key: key, approval: approval, at: path, in: txn)
            case .update(let id, let merging):
                return try update(endpoint, id: id, merging: merging, request, headers: headers, key: key,
                                  approval: approval, at: path, in: txn)
            case .delete(let id):
                return try delete(endpoint, id: id, request, headers: headers, key: key, approval: approval, in: txn)
            }
        } catch let invalid as RecordBody.Invalid {
            throw ClaimRefusal(Self.validationFailed(invalid))
        } catch let invalid as IfMatch.Invalid {
            throw ClaimRefusal(.problem(status: 400, code: WireErrorCode.ifMatchInvalid, message: invalid.message))
        }
    }

    private func create(
        _ endpoint: BusinessEndpoint, _ body: Data, businessID: String, key: String, approval: Bool, at path: JSONPath,
        in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        let object = try RecordBody.record(body, at: path)
        let id = try RecordBody.id(of: object, at: path)
        if endpoint.namesProduct {
            let product = try RecordBody.productID(of: object, at: path)
            guard try txn.lockedRecord(type: BusinessEndpoint.products.type, businessID: businessID, id: product)?.isDeleted == false else {
                throw RecordBody.Invalid(
                    message: "\(path.member("product_id")): no product " + JSONText.quoted(product) + " in this business: create it before its stock movements",
                    field: path.member("product_id").description)
            }
        }
        try txn.countApplied(key: key)
        if approval { return try park(endpoint, body, businessID: businessID, key: key, in: txn) }
        let revision = try txn.putNextRevision(type: endpoint.type, businessID: businessID, id: id, key: key, body: body)
        let visible = try txn.recordChange(StoredRecord(type: endpoint.type, businessID: businessID, id: id, revision: revision,
                                                        idempotencyKey: key, body: body))
        return ClaimResponse(
            status: 201,
            headers: [Self.jsonType, .init(name: "Location", value: endpoint.location(of: id)), Self.entityTag(revision)]
                + Self.visibleAt(visible),
            body: RecordBody.answer(type: endpoint.type, id: id, revision: revision, body: body))
    }

    /// An update: the record is read and held, its revision checked against `If-Match`, then
    /// replaced (`PUT`) or merged with the body (`PATCH`) as its next revision.
    private func update(
        _ endpoint: BusinessEndpoint, id: String, merging: Bool, _ request: HTTPRequest, headers: BusinessHeaders, key: String,
        approval: Bool, at path: JSONPath, in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        let businessID = headers.businessID
        let current = try matchedRecord(endpoint, id: id, headers: headers, in: txn)
        let body = merging
            ? try RecordBody.patched(current.body, with: request.body, id: id, at: path)
            : try RecordBody.replacement(request.body, id: id, at: path)
        try txn.countApplied(key: key)
        if approval { return try park(endpoint, request.body, businessID: businessID, key: key, in: txn) }
        var updated = current
        updated.revision += 1
        updated.idempotencyKey = key
        updated.body = body
        try txn.replaceRecord(updated)
        let visible = try txn.recordChange(updated)
        return ClaimResponse(status: 200, headers: [Self.jsonType, Self.entityTag(updated.revision)] + Self.visibleAt(visible),
                             body: RecordBody.answer(type: endpoint.type, id: id, revision: updated.revision, body: body))
    }

    /// A delete: the record is read and held, its revision checked against `If-Match`, then
    /// kept as a tombstone at its next revision.
    private func delete(
        _ endpoint: BusinessEndpoint, id: String, _ request: HTTPRequest, headers: BusinessHeaders, key: String,
        approval: Bool, in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        let current = try matchedRecord(endpoint, id: id, headers: headers, in: txn)
        try txn.countApplied(key: key)
        if approval { return try park(endpoint, request.body, businessID: headers.businessID, key: key, in: txn) }
        let tombstone = current.tombstone(key: key)
        try txn.replaceRecord(tombstone)
        let visible = try txn.recordChange(tombstone)
        return ClaimResponse(status: 200, headers: [Self.jsonType, Self.entityTag(tombstone.revision)] + Self.visibleAt(visible),
                             body: RecordBody.deletedAnswer(type: endpoint.type, id: id, revision: tombstone.revision))
    }

    /// The live record an update or a delete of `id` names, read and held, whose revision
    /// `If-Match` names (or any revision, without `If-Match`).
    /// - Throws: ``ClaimRefusal`` with 404 `not_found` when there is no such record or it was
    ///   deleted, 412 `revision_conflict` when `If-Match` names another revision;
    ///   `IfMatch.Invalid` for a header that is no `If-Match`.
    private func matchedRecord(
        _ endpoint: BusinessEndpoint, id: String, headers: BusinessHeaders, in txn: any ServerTransaction
    ) throws -> StoredRecord {
        let condition = try IfMatch.parse(headers.ifMatch)
        // An id no create can store names no record: asked of no store.
        guard RecordBody.idProblem(id) == nil, let current = try txn.lockedRecord(type: endpoint.type, businessID: headers.businessID, id: id) else {
            throw ClaimRefusal(.problem(status: 404, code: "not_found", message: "no \(endpoint.type) " + JSONText.quoted(id) + " in this business"))
        }
        if current.isDeleted {
            throw ClaimRefusal(.problem(status: 404, code: "not_found", message: "the \(endpoint.type) " + JSONText.quoted(id)
                + " was deleted at revision \(current.revision); create it again to bring it back"))
        }
        if let condition, !condition.matches(revision: current.revision) {
            throw ClaimRefusal(Self.revisionConflict(current, ifMatch: headers.ifMatch ?? "", condition: condition))
        }
        return current
    }

    /// A pending approval in place of the write: 202 with its request id.
    private func park(
        _ endpoint: BusinessEndpoint, _ body: Data, businessID: String, key: String, in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        let requestID = try txn.addApproval(type: endpoint.type, businessID: businessID, key: key, body: body)
        let envelope = "{" + JSONText.quoted(WireBodyField.requestID) + ":" + JSONText.quoted(requestID) + #","status":"pending_approval"}"#
        return ClaimResponse(status: 202, headers: [Self.jsonType], body: Data(envelope.utf8))
    }

    /// 412 `revision_conflict`: the record's revision, and the record itself as the server
    /// shows it, so the client can show both sides and rebase.
    static func revisionConflict(_ current: StoredRecord, ifMatch: String, condition: IfMatch? = nil) -> ClaimResponse {
        let revision = String(current.revision)
        let message: String
        if let condition, condition.weakTags.contains(revision) {
            // The edit names the record's own revision, but as a weak tag: nothing changed.
            message = "the \(current.type) \(current.id) is at revision \(revision), but If-Match (\(ifMatch)) names it only as a"
                + " weak tag, W/\"\(revision)\", and a weak tag never matches: an update or a delete needs the exact revision;"
                + " send If-Match: \"\(revision)\""
        } else {
            let weak = condition.map { $0.weakTags.isEmpty } ?? true ? "" : " (its weak tags never match: an update or a delete needs the exact revision, sent as \"\(revision)\")"
            message = "the \(current.type) \(current.id) is at revision \(revision), not \(ifMatch) (If-Match)\(weak):"
                + " it changed since this edit began; send it again against revision \(revision), or drop it"
        }
        return .revisionConflict(revision: UInt64(current.revision), current: RecordBody.withRevision(current.body, current.revision), message: message)
    }

    /// Changes a record as another device would: `patch` merged into it as its next revision,
    /// in a transaction of its own, outside any claim.
    /// - Returns: the record changed; `nil` when there is none of that type, business and id (or
    ///   it was deleted).
    /// - Throws: ``RecordBody/Invalid`` for a patch that is not a JSON object, or that changes
    ///   the id or sets the revision; the storage's errors.
    func changeRecord(type: String, businessID: String, id: String, patch: Data) throws -> StoredRecord? {
        try storage.transaction { txn in
            guard var record = try txn.lockedRecord(type: type, businessID: businessID, id: id), !record.isDeleted else { return nil }
            record.body = try RecordBody.patched(record.body, with: patch, id: id, at: .root)
            record.revision += 1
            record.idempotencyKey = StoredRecord.changedElsewhereKey
            try txn.replaceRecord(record)
            // Another device's change reaches this one by the feed, as any write does.
            _ = try txn.recordChange(record)
            return record
        }
    }

    static let jsonType = ClaimResponse.Header(name: "Content-Type", value: "application/json")

    /// Where an operation's payload stands in its batch, `operations[i].payload`; the root for a
    /// request of its own.
    static func payloadPath(_ batch: ServerEvent.BatchPart?) -> JSONPath {
        batch.map { JSONPath.root.member("operations").index($0.index).member("payload") } ?? .root
    }

    /// 422 `validation_failed` with the message and, when there is one, the JSON path of the
    /// field at fault: `{"code":...,"message":...,"field":"operations[3].payload.id"}`.
    static func validationFailed(_ invalid: RecordBody.Invalid) -> ClaimResponse {
        var text = "{" + JSONText.quoted(WireBodyField.code) + ":" + JSONText.quoted(WireErrorCode.validationFailed)
            + "," + JSONText.quoted(WireBodyField.message) + ":" + JSONText.quoted(invalid.message)
        if let field = invalid.field { text += #","field":"# + JSONText.quoted(field) }
        return ClaimResponse(status: 422, headers: [jsonType], body: Data((text + "}").utf8))
    }

    /// `Outbox-Visible-At: <position>`, the position of the write's own change; none from a
    /// storage that keeps no feed.
    static func visibleAt(_ position: FeedPosition?) -> [ClaimResponse.Header] {
        position.map { [ClaimResponse.Header(name: WireHeader.visibleAt, value: $0.text)] } ?? []
    }

    /// `GET /sync/changes`: a page of the business's feed (`X-Business-ID`, `default` when
    /// absent), or 409 `resnapshot_required`; 501 from a storage that keeps no feed yet.
    func feedPage(_ request: HTTPRequest) -> HTTPResponse {
        withFeed(request) { businessID, feed in
            FeedHandling.respond(business: businessID, query: request.query, log: feed, limits: feedLimits)
        }
    }

    /// `read`'s answer for the request's business (`X-Business-ID`, checked as for writes) and
    /// the storage's feed; 501 from a storage that keeps none.
    private func withFeed(_ request: HTTPRequest, _ read: (String, any ServerFeed) -> ClaimResponse) -> HTTPResponse {
        switch BusinessHeaders.read(request) {
        case .success(let headers):
            guard let feed = storage.feed else { return Self.feedUnsupported }
            return HTTPResponse(read(headers.businessID, feed))
        case .failure(let refusal):
            return refusal.response
        }
    }

    /// `GET /sync/snapshot` and `GET /sync/summary`: the business's current records, a page at a
    /// time, or what it holds of one type; 501 from a storage that keeps no feed yet.
    func recordsRead(_ request: HTTPRequest) -> HTTPResponse {
        withFeed(request) { businessID, feed in
            request.path == SnapshotPage.path
                ? FeedHandling.respondSnapshot(business: businessID, query: request.query, log: feed, limits: feedLimits)
                : FeedHandling.respondSummary(business: businessID, query: request.query, log: feed)
        }
    }

    /// 501 `feed_unsupported`: the storage keeps no change feed yet.
    static let feedUnsupported = HTTPResponse.problem(
        501, code: "feed_unsupported",
        message: "the change feed is served by the memory storage so far; this server's storage (LMDB or PostgreSQL) keeps none yet")

    /// `ETag: "<revision>"`.
    static func entityTag(_ revision: Int) -> ClaimResponse.Header {
        ClaimResponse.Header(name: WireHeader.eTag, value: "\"\(revision)\"")
    }

    /// The answer of a fault that stops a request before the claims: nothing is written.
    static func immediateResponse(to fault: Fault) -> HTTPResponse? {
        let scripted = "scripted fault: \(fault.kind.rawValue)"
        switch fault.kind {
        case .serverError:
            return .problem(500, code: "internal_error", message: scripted)
        case .unavailable:
            let retry = fault.retryAfterSeconds.map { [ClaimResponse.Header(name: WireHeader.retryAfter, value: String($0))] } ?? []
            return .problem(503, code: "unavailable", message: scripted, headers: retry)
        case .rateLimited:
            let seconds = fault.retryAfterSeconds ?? 1
            return .problem(429, code: "rate_limited", message: scripted, headers: [.init(name: WireHeader.retryAfter, value: String(seconds))])
        case .unauthorized:
            return .problem(401, code: "unauthorized", message: scripted, headers: [
                .init(name: "WWW-Authenticate", value: #"Bearer realm="outbox-test-server""#)
            ])
        case .forbidden:
            return .problem(403, code: "forbidden", message: fault.message ?? scripted)
        case .validationFailed:
            return .problem(422, code: WireErrorCode.validationFailed, message: fault.message ?? scripted)
        case .captivePortal:
            return HTTPResponse(
                status: 200,
                headers: [.init(name: "Content-Type", value: "text/html; charset=utf-8")],
                body: Data(captivePortalPage.utf8))
        case .dropAfterCommit, .pendingApproval, .slow, .holdInTransaction, .changeRecord, .cutBody:
            return nil
        }
    }

    static let captivePortalPage = """
        <!DOCTYPE html>
        <html><head><title>Sign in to Wi-Fi</title></head>
        <body><h1>Welcome to Airport Free Wi-Fi</h1>
        <form method="post" action="/portal/accept"><button>Accept and connect</button></form>
        </body></html>

        """
}

extension CharacterSet {
    /// What may appear in one path segment unescaped: the path characters but `/`.
    static let urlPathSegmentAllowed: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        return allowed
    }()
}

extension BusinessAction {
    /// The record an update or a delete names; `nil` for a create.
    var recordID: String? {
        switch self {
        case .create: nil
        case .update(let id, _), .delete(let id): id
        }
    }
}
