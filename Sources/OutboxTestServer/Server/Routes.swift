import Foundation
import OutboxWire
import IdempotencyClaims

/// What the server does with one request: answer it, or drop the connection unanswered.
struct Reply {
    /// `nil`: close the connection without a response (`drop_after_commit`).
    var response: HTTPResponse?
    /// Release requests held by the `slow` fault for this key once this reply is written: the
    /// second copy has been answered.
    var releasesKey: String?
}

/// A business endpoint: one kind of record created through claims.
struct BusinessEndpoint: Sendable {
    var path: String
    /// `product`: the record's type.
    var type: String
    /// `product.create`: the claim's operation type.
    var operationType: String

    static let all = [
        BusinessEndpoint(path: "/products", type: "product", operationType: "product.create"),
        BusinessEndpoint(path: "/employees", type: "employee", operationType: "employee.create"),
    ]
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
    /// Told of every business request once it is handled, and of every request to a path no
    /// endpoint serves.
    var observer: (@Sendable (ServerEvent) -> Void)?

    func reply(to request: HTTPRequest) -> Reply {
        if let endpoint = BusinessEndpoint.all.first(where: { $0.path == request.path }) {
            guard request.method == "POST" else { return Reply(response: methodNotAllowed(allow: "POST")) }
            return create(endpoint, request)
        }
        let controls = ControlRoute.allCases.filter { $0.path == request.path }
        if !controls.isEmpty {
            guard let control = controls.first(where: { $0.method == request.method }) else {
                return Reply(response: methodNotAllowed(allow: controls.map(\.method).joined(separator: ", ")))
            }
            return Reply(response: self.control(control, request))
        }
        let notFound = HTTPResponse.problem(404, code: "not_found", message: "no endpoint at \(request.path)")
        observer?(ServerEvent(
            path: request.path, target: request.target, idempotencyKey: request.header(WireHeader.idempotencyKey),
            outcome: .refused, status: notFound.status, fault: nil))
        return Reply(response: notFound)
    }

    private func methodNotAllowed(allow: String) -> HTTPResponse {
        .problem(405, code: "method_not_allowed", message: "this endpoint takes \(allow)", headers: [.init(name: "Allow", value: allow)])
    }

    // MARK: Business endpoints

    private func create(_ endpoint: BusinessEndpoint, _ request: HTTPRequest) -> Reply {
        if latency > 0 { Thread.sleep(forTimeInterval: latency) }
        let (reply, event) = handleCreate(endpoint, request)
        observer?(event)
        return reply
    }

    private func handleCreate(_ endpoint: BusinessEndpoint, _ request: HTTPRequest) -> (Reply, ServerEvent) {
        let key = request.header(WireHeader.idempotencyKey)
        func event(_ outcome: ServerEvent.Outcome, _ response: HTTPResponse?, _ fault: Fault?) -> ServerEvent {
            ServerEvent(
                path: endpoint.path, target: request.target, idempotencyKey: key, outcome: outcome, status: response?.status,
                fault: fault?.kind)
        }
        let businessID = request.header(Self.businessHeader).flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultBusinessID
        let fault = faults.take(path: endpoint.path, key: key)
        if let fault, let response = Self.immediateResponse(to: fault) {
            return (Reply(response: response, releasesKey: key), event(.refused, response, fault))
        }
        let isSlow = fault?.kind == .slow
        do {
            let answer = try storage.handle(
                scope: ClaimScope(businessID: businessID, operationType: endpoint.operationType),
                key: key,
                body: request.body,
                whileClaimed: { if isSlow, let key { holds.hold(key: key, limit: slowHoldLimit) } }
            ) { txn in
                let response = try write(endpoint, request.body, businessID: businessID, key: key ?? "",
                                         approval: fault?.kind == .pendingApproval, in: txn)
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
            case .keyRequired, .keyInvalid: .refused
            }
            return (Reply(response: response, releasesKey: isSlow ? nil : key), event(outcome, response, fault))
        } catch let invalid as CreateBody.Invalid {
            let response = HTTPResponse.problem(422, code: WireErrorCode.validationFailed, message: invalid.message)
            return (Reply(response: response, releasesKey: isSlow ? nil : key), event(.refused, response, fault))
        } catch {
            let response = HTTPResponse.problem(500, code: "internal_error", message: "the server failed to store the write: \(error)")
            return (Reply(response: response, releasesKey: isSlow ? nil : key), event(.refused, response, fault))
        }
    }

    /// The write a claim protects: a record (or a pending approval) and its applied count.
    private func write(
        _ endpoint: BusinessEndpoint, _ body: Data, businessID: String, key: String, approval: Bool,
        in txn: any ServerTransaction
    ) throws -> ClaimResponse {
        let id = try CreateBody.id(of: body)
        let json = ClaimResponse.Header(name: "Content-Type", value: "application/json")
        try txn.countApplied(key: key)
        if approval {
            let requestID = try txn.addApproval(type: endpoint.type, businessID: businessID, key: key, body: body)
            let envelope = "{" + JSONText.quoted(WireBodyField.requestID) + ":" + JSONText.quoted(requestID) + #","status":"pending_approval"}"#
            return ClaimResponse(status: 202, headers: [json], body: Data(envelope.utf8))
        }
        let revision = try txn.putNextRevision(type: endpoint.type, businessID: businessID, id: id, key: key, body: body)
        let location = endpoint.path + "/" + (id.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentAllowed) ?? id)
        return ClaimResponse(
            status: 201,
            headers: [json, .init(name: "Location", value: location)],
            body: CreateBody.withRevision(body, revision))
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
        case .dropAfterCommit, .pendingApproval, .slow, .holdInTransaction:
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
