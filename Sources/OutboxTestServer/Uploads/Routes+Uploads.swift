import Foundation
import IdempotencyClaims
import OutboxWire

/// An upload endpoint (Docs/wire-attachments.md).
enum UploadRoute: Equatable {
    /// `POST /uploads`.
    case grant
    /// `POST /uploads/<id>/complete`.
    case complete(id: String)

    static let path = "/uploads"

    /// The route serving `path`; `nil` for any other path.
    init?(path: String) {
        if path == Self.path {
            self = .grant
            return
        }
        guard path.hasPrefix(Self.path + "/") else { return nil }
        let parts = path.dropFirst(Self.path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "complete", !parts[0].isEmpty else { return nil }
        self = .complete(id: parts[0].removingPercentEncoding ?? String(parts[0]))
    }

    /// The claim's operation type: grants and completions are claimed apart from each other
    /// and from every write.
    var operationType: String {
        switch self {
        case .grant: "upload.grant"
        case .complete: "upload.complete"
        }
    }
}

extension Routes {
    /// Answers an upload request through the claims, its faults, and the observer.
    func upload(_ route: UploadRoute, _ request: HTTPRequest) -> Reply {
        guard request.method == "POST" else { return refusedUpload(request, methodNotAllowed(allow: "POST")) }
        if latency > 0 { Thread.sleep(forTimeInterval: latency) }
        let (reply, event) = handleUpload(route, request)
        observer?(event)
        return reply
    }

    private func refusedUpload(_ request: HTTPRequest, _ response: HTTPResponse) -> Reply {
        let (reply, event) = refusal(request, response, fault: nil, batch: nil)
        observer?(event)
        return reply
    }

    /// A grant or a completion: claimed by its `Idempotency-Key` in the server's storage
    /// (PostgreSQL's claims when the server runs on it), so a repeat with the same body is
    /// answered the same. Every answer under 500 is kept in the claim; a 5xx (the store failed)
    /// keeps none, and the same request is worked again when asked again. A completion's work
    /// with the store runs while the claim is held, outside any database transaction, and an
    /// object completed counts one applied effect under the completion's key.
    private func handleUpload(_ route: UploadRoute, _ request: HTTPRequest) -> (Reply, ServerEvent) {
        let key = request.header(WireHeader.idempotencyKey)
        func event(_ outcome: ServerEvent.Outcome, _ response: HTTPResponse?, _ fault: Fault?) -> ServerEvent {
            ServerEvent(method: request.method, path: request.path, target: request.target, idempotencyKey: key, outcome: outcome,
                        status: response?.status, fault: fault?.kind)
        }
        guard let uploads else { return (Reply(response: Self.noUploads), event(.refused, Self.noUploads, nil)) }
        let headers: BusinessHeaders
        switch BusinessHeaders.read(request) {
        case .success(let read): headers = read
        case .failure(let refusal): return (Reply(response: refusal.response), event(.refused, refusal.response, nil))
        }
        let fault = faults.take(.upload(path: request.path, key: key))
        let releases = key.map { [$0] } ?? []
        if let fault, let response = Self.immediateResponse(to: fault) {
            return (Reply(response: response, releasesKeys: releases), event(.refused, response, fault))
        }
        let isSlow = fault?.kind == .slow
        var completed: ClaimResponse?
        var unavailable: Uploads.Unavailable?
        do {
            let answer = try storage.handle(
                scope: ClaimScope(businessID: headers.businessID, operationType: route.operationType),
                key: key,
                body: request.body,
                whileClaimed: {
                    if isSlow, let key { holds.hold(key: key, limit: slowHoldLimit) }
                    if case .complete(let id) = route {
                        do throws(Uploads.Unavailable) { completed = try uploads.complete(id, request.body) } catch { unavailable = error }
                    }
                }
            ) { txn in
                switch route {
                case .grant:
                    let response = uploads.grant(request.body, now: Date())
                    // A refusal for now (the control API's 5xx) keeps no claim.
                    if response.status >= 500 { throw Uploads.Unavailable(response: response) }
                    return response
                case .complete:
                    if let unavailable { throw unavailable }
                    // whileClaimed ran before this write: one or the other is set.
                    let response = completed!
                    if response.status == 200 { try txn.countApplied(key: key ?? "") }
                    return response
                }
            }
            let response = fault?.kind == .dropAfterCommit ? nil : HTTPResponse(answer.response)
            let outcome: ServerEvent.Outcome = switch answer.outcome {
            case .applied: .applied
            case .replayed: .replayed
            case .conflict: .conflict
            case .inProgress: .inProgress
            case .refused, .keyRequired, .keyInvalid: .refused
            }
            return (Reply(response: response, releasesKeys: isSlow ? [] : releases, cutsBody: fault?.kind == .cutBody),
                    event(outcome, response, fault))
        } catch let failure as Uploads.Unavailable {
            let response = HTTPResponse(failure.response)
            return (Reply(response: response, releasesKeys: isSlow ? [] : releases), event(.refused, response, fault))
        } catch {
            let response = HTTPResponse.problem(500, code: "internal_error", message: "the server failed to store the upload's claim: \(error)")
            return (Reply(response: response, releasesKeys: isSlow ? [] : releases), event(.refused, response, fault))
        }
    }
}
