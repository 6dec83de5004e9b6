package import Foundation
import OutboxWire

/// What a transport produced for one attempt: a response, or none.
package enum TransportResult: Sendable, Equatable {
    case response(TransportResponse)
    case noResponse(TransportRequest.Failure)
}

/// The disposition table: a pure function from an attempt's result to what follows.
///
/// What a status, the body's `code` and `Idempotent-Replayed` mean is `AnswerMeaning`'s, the one
/// table the server's batch word (`BatchOutcome`) asks too; the body is read by `AnswerBody`
/// (its revision rule, its 64 KiB cap on `current`). This table adds what only the engine
/// decides: an approval, a 2xx that is not JSON, a terminal transition's 409, the engine's codes
/// and `Retry-After`.
///
/// | result | disposition |
/// |---|---|
/// | body `code` `idempotency_conflict` (409 or 422) | blocked |
/// | body `code` `idempotency_in_progress` (409 or 425) | transient failure |
/// | 412, or 409 with body `code` `revision_conflict` | conflicted: the server's revision and `current` kept |
/// | 202 with `request_id` or `approval_request_id` | pending approval |
/// | other 2xx with a JSON body, or 204 | accepted (replayed when `Idempotent-Replayed: true`) |
/// | 2xx with a body that is not JSON (a captive portal) | transient failure, `invalid_response` |
/// | no response; 5xx; 429; 408 | transient failure, `Retry-After` kept |
/// | 401 | unauthorized: queued, the worker paused |
/// | 403 | blocked |
/// | 409 for a ``OperationTypePolicy.Replay/terminalTransition`` | replayed: it was already applied |
/// | 400, 404, 409, 422, other 4xx | rejected |
/// | 1xx, 3xx, anything else | transient failure, `unexpected_status` (recorded as such, never guessed synced) |
///
/// The body's `code` decides before the status; a 4xx whose body carried none gets the engine's
/// code for its status (``ErrorCode/forStatus(_:)``: 413 `payload_too_large`). A failure the
/// engine retries is recorded under the engine's code (`server_unavailable`, `rate_limited`,
/// ...), the body's own code joining its message. The body's `message` is recorded as the server
/// sent it, for support; what the member reads is
/// ``OutboxWords/failure(code:serverMessage:)``: that message only for a refusal, never
/// for a failure the engine retries.
package enum DispositionTable {
    /// The opaque part of an entity tag (`W/"r7"` or `"r7"` -> `r7`), as a revision.
    static func entityTagValue(_ tag: String) -> String {
        var value = Substring(tag.trimmingCharacters(in: .whitespaces))
        if value.hasPrefix("W/") { value = value.dropFirst(2) }
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        return String(value)
    }

    package static func classify(_ result: TransportResult, policy: OperationTypePolicy.Replay, now: Date) -> Classification {
        let response: TransportResponse
        switch result {
        case .noResponse(let failure):
            return Classification(
                outcome: .noResponse(failure),
                disposition: .transientFailure,
                errorCode: failure == .offline ? ErrorCode.offline : failure == .cancelled ? ErrorCode.cancelled : ErrorCode.noResponse
            )
        case .response(let value):
            response = value
        }
        let status = response.statusCode
        let body = AnswerBody(response.body)
        // The body's revision (its rule is `AnswerBody`'s), else the entity tag's opaque part.
        let serverRevision = body.revision.map { String($0) } ?? response.header(WireHeader.eTag).map(Self.entityTagValue)
        let retryAfter = response.header(WireHeader.retryAfter).flatMap { RetryAfter.moment($0, now: now) }
        func decided(
            _ disposition: Disposition,
            code: String? = nil,
            approvalRequestID: String? = nil
        ) -> Classification {
            let isError = disposition != .accepted && disposition != .replayed && disposition != .pendingApproval
            // A failure the engine retries keeps the engine's code, which is what the member's
            // words are chosen by; the server's own code goes with its message, for support.
            let engineCode = disposition == .transientFailure && code != nil
            let serverCode = engineCode && body.code != code ? body.code : nil
            let message = serverCode.map { code in body.message.map { "\(code): \($0)" } ?? code } ?? body.message
            return Classification(
                outcome: .response(statusCode: status),
                disposition: disposition,
                errorCode: isError ? (engineCode ? code : body.code ?? code) : nil,
                errorMessage: isError ? message : nil,
                retryAfter: disposition == .transientFailure ? retryAfter : nil,
                approvalRequestID: approvalRequestID,
                serverRevision: serverRevision
            )
        }

        // What the status, the body's code and `Idempotent-Replayed` mean is the table both
        // halves share (`AnswerMeaning`); what follows is what only the engine decides of it.
        let replayed = AnswerMeaning.isReplayed(response.header(WireHeader.idempotentReplayed))
        switch AnswerMeaning(status: status, code: body.code, replayed: replayed) {
        case .keyConflict:
            return decided(.blocked)
        case .inProgress:
            return decided(.transientFailure, code: ErrorCode.idempotencyInProgress)
        case .revisionConflict:
            // The record changed elsewhere since the edit began: a person (or the type's rule) decides.
            var conflict = decided(.conflicted, code: ErrorCode.preconditionFailed)
            conflict.serverCurrent = body.current
            return conflict
        case .applied(let replayed):
            if status == 202, let approvalRequestID = body.approvalRequestID {
                return decided(.pendingApproval, approvalRequestID: approvalRequestID)
            }
            // A 204 has no body; any other 2xx says what it did in JSON (a captive portal's page does not).
            guard status == 204 || body.isJSON else {
                return decided(.transientFailure, code: ErrorCode.invalidResponse)
            }
            return decided(replayed ? .replayed : .accepted)
        case .unauthorized:
            return decided(.unauthorized, code: ErrorCode.unauthorized)
        case .forbidden:
            return decided(.blocked, code: ErrorCode.forbidden)
        case .refused where status == 409 && policy == .terminalTransition:
            return Classification(outcome: .response(statusCode: status), disposition: .replayed,
                                  errorCode: body.code, errorMessage: nil, serverRevision: body.revision.map { String($0) })
        case .refused:
            return decided(.rejected, code: ErrorCode.forStatus(status))
        case .notNow:
            return decided(.transientFailure, code: status == 429 ? ErrorCode.rateLimited : ErrorCode.serverUnavailable)
        case .unexpected:
            return decided(.transientFailure, code: ErrorCode.unexpectedStatus)
        }
    }
}
