import Foundation
import OutboxCore
import Testing

@Suite("The disposition table")
struct DispositionTableTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static func response(_ status: Int, json: String? = nil, html: String? = nil, headers: [String: String] = [:]) -> TransportResult {
        var allHeaders = headers
        var body = Data()
        if let json {
            allHeaders["Content-Type"] = "application/json"
            body = Data(json.utf8)
        } else if let html {
            allHeaders["Content-Type"] = "text/html"
            body = Data(html.utf8)
        }
        return .response(TransportResponse(statusCode: status, headers: allHeaders, body: body))
    }

    static func classify(_ result: TransportResult, _ policy: OperationTypePolicy.Replay = .idempotent) -> Classification {
        DispositionTable.classify(result, policy: policy, now: now)
    }

    /// (name, result, expected disposition, expected error code or nil)
    static let table: [(String, TransportResult, Disposition, String?)] = [
        ("201 JSON", response(201, json: #"{"id":"p1","revision":7}"#), .accepted, nil),
        ("200 JSON", response(200, json: "{}"), .accepted, nil),
        ("204 no content", response(204), .accepted, nil),
        ("replayed 201", response(201, json: "{}", headers: ["Idempotent-Replayed": "true"]), .replayed, nil),
        ("202 approval", response(202, json: #"{"request_id":"apr-1","status":"pending_approval"}"#), .pendingApproval, nil),
        ("202 approval, other field", response(202, json: #"{"approval_request_id":"apr-2"}"#), .pendingApproval, nil),
        ("202 without an approval id", response(202, json: #"{"status":"accepted"}"#), .accepted, nil),
        ("offline", .noResponse(.offline), .transientFailure, "offline"),
        ("timeout", .noResponse(.timedOut), .transientFailure, "no_response"),
        ("reset", .noResponse(.connectionLost), .transientFailure, "no_response"),
        ("500", response(500, json: #"{"code":"internal","message":"Oops"}"#), .transientFailure, "server_unavailable"),
        ("503 plain", response(503), .transientFailure, "server_unavailable"),
        ("429", response(429, headers: ["Retry-After": "30"]), .transientFailure, "rate_limited"),
        ("408", response(408), .transientFailure, "server_unavailable"),
        ("409 in progress", response(409, json: #"{"code":"idempotency_in_progress","message":"Still working"}"#), .transientFailure, "idempotency_in_progress"),
        ("425 in progress", response(425, json: #"{"code":"idempotency_in_progress","message":"Too early"}"#), .transientFailure, "idempotency_in_progress"),
        ("captive portal 200 HTML", response(200, html: "<html><body>Sign in to Wi-Fi</body></html>"), .transientFailure, "invalid_response"),
        ("201 empty body", response(201), .transientFailure, "invalid_response"),
        ("401", response(401, json: #"{"code":"token_expired","message":"Expired"}"#), .unauthorized, "token_expired"),
        ("401 plain", response(401), .unauthorized, "unauthorized"),
        ("403", response(403, json: #"{"code":"not_owner","message":"Only owners may"}"#), .blocked, "not_owner"),
        ("403 plain", response(403), .blocked, "forbidden"),
        ("409 conflict", response(409, json: #"{"code":"idempotency_conflict","message":"Different body"}"#), .blocked, "idempotency_conflict"),
        ("422 conflict (IETF draft)", response(422, json: #"{"code":"idempotency_conflict","message":"Different body"}"#), .blocked, "idempotency_conflict"),
        ("422 validation", response(422, json: #"{"code":"validation_failed","message":"Price must be positive"}"#), .rejected, "validation_failed"),
        ("400 key required", response(400, json: #"{"code":"idempotency_key_required","message":"Key needed"}"#), .rejected, "idempotency_key_required"),
        ("404", response(404), .rejected, "not_found"),
        ("409 plain", response(409, json: #"{"code":"state_conflict","message":"Moved"}"#), .rejected, "state_conflict"),
        ("410", response(410), .rejected, "gone"),
        ("400 plain", response(400), .rejected, "bad_request"),
        ("413 a proxy's page", response(413, html: "<html><body>413 Request Entity Too Large</body></html>"), .rejected, "payload_too_large"),
        ("414", response(414), .rejected, "uri_too_long"),
        ("431", response(431), .rejected, "headers_too_large"),
        ("418", response(418), .rejected, "http_418"),
        ("422 plain", response(422), .rejected, "validation_failed"),
        ("302 redirect", response(302, headers: ["Location": "http://portal"]), .transientFailure, "unexpected_status"),
        ("100", response(100), .transientFailure, "unexpected_status"),
    ]

    @Test func everyRowOfTheTable() {
        for (name, result, disposition, code) in Self.table {
            let classification = Self.classify(result)
            #expect(classification.disposition == disposition, "\(name)")
            #expect(classification.errorCode == code, "\(name)")
            let words = OutboxWords.english.failure(code: classification.errorCode, serverMessage: classification.errorMessage)
            if classification.disposition.status == .synced || classification.disposition == .pendingApproval {
                #expect(classification.errorMessage == nil, "\(name)")
                #expect(words == nil, "\(name)")
            } else {
                #expect(words?.isEmpty == false, "\(name) has words for the member")
                // Recorded: the body's message as sent, or none.
                if case .response(let response) = result {
                    let sent = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
                    let message = sent?["message"] as? String
                    // A retried failure's own code joins its message.
                    let joined = (sent?["code"] as? String).flatMap { $0 == code ? nil : "\($0): \(message ?? "")" } ?? message
                    #expect(classification.errorMessage == (classification.disposition == .transientFailure ? joined : message), "\(name)")
                } else {
                    #expect(classification.errorMessage == nil, "\(name)")
                }
            }
        }
    }

    @Test func theBodysMessageIsRecordedAsSent() {
        let classification = Self.classify(Self.response(422, json: #"{"code":"validation_failed","message":"Price must be positive"}"#))
        #expect(classification.errorMessage == "Price must be positive")
    }

    @Test func theApprovalRequestIDAndRevisionAreKept() {
        let held = Self.classify(Self.response(202, json: #"{"request_id":"apr-9"}"#))
        #expect(held.approvalRequestID == "apr-9")
        let created = Self.classify(Self.response(201, json: #"{"id":"p1","revision":7}"#))
        #expect(created.serverRevision == "7")
        let tagged = Self.classify(.response(TransportResponse(statusCode: 201, headers: ["ETag": "\"r5\"", "Content-Type": "application/json"], body: Data("{}".utf8))))
        // The entity tag's opaque part: what the next edit sends back in `If-Match: "r5"`.
        #expect(tagged.serverRevision == "r5")
    }

    @Test func aTerminalTransitionsConflictProvesItApplied() {
        let result = Self.response(409, json: #"{"code":"invalid_state","message":"Already delivered"}"#)
        #expect(Self.classify(result, .terminalTransition).disposition == .replayed)
        #expect(Self.classify(result, .idempotent).disposition == .rejected)
        // A key conflict stays a conflict whatever the policy.
        let conflict = Self.response(409, json: #"{"code":"idempotency_conflict","message":"x"}"#)
        #expect(Self.classify(conflict, .terminalTransition).disposition == .blocked)
    }

    @Test func retryAfterIsKeptInBothForms() {
        let seconds = Self.classify(Self.response(429, headers: ["Retry-After": "120"]))
        #expect(seconds.retryAfter == Self.now.addingTimeInterval(120))
        let date = Self.classify(Self.response(503, headers: ["retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"]))
        #expect(date.retryAfter == Date(timeIntervalSince1970: 784_111_777))
        let accepted = Self.classify(Self.response(201, json: "{}", headers: ["Retry-After": "10"]))
        #expect(accepted.retryAfter == nil)
    }

    @Test func retryAfterParsesEveryHTTPDateForm() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(RetryAfter.moment("Sun, 06 Nov 1994 08:49:37 GMT", now: Self.now) == expected)
        #expect(RetryAfter.moment("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.now) == expected)
        #expect(RetryAfter.moment("Sun Nov  6 08:49:37 1994", now: Self.now) == expected)
        #expect(RetryAfter.moment(" 5 ", now: Self.now) == Self.now.addingTimeInterval(5))
        #expect(RetryAfter.moment("soon", now: Self.now) == nil)
        #expect(RetryAfter.moment("-5", now: Self.now) == nil)
    }
}

@Suite("Backoff")
struct RetryPolicyTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)

    @Test func theStandardScheduleDoublesFromTwoSecondsToTheCap() {
        let id = OperationID()
        let delays = (1...11).map { OperationTypePolicy.RetryPolicy.standard.delaySeconds(afterAttempt: AttemptNumber(rawValue: $0), of: id) }
        #expect(delays == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300])
        #expect(OperationTypePolicy.RetryPolicy.standard.delaySeconds(afterAttempt: 10_000, of: id) == 300)
    }

    @Test func jitterStaysWithinItsBoundsAndRepeatsForTheSameID() {
        let policy = OperationTypePolicy.RetryPolicy.standard.jittered(0.5)
        var spread = Set<Double>()
        for _ in 0..<200 {
            let id = OperationID()
            for attempt in 1...10 {
                let plain = OperationTypePolicy.RetryPolicy.standard.delaySeconds(afterAttempt: AttemptNumber(rawValue: attempt), of: id)
                let jittered = policy.delaySeconds(afterAttempt: AttemptNumber(rawValue: attempt), of: id)
                #expect(jittered <= plain && jittered >= plain * 0.5)
                #expect(jittered == policy.delaySeconds(afterAttempt: AttemptNumber(rawValue: attempt), of: id))
                if attempt == 1 { spread.insert(jittered) }
            }
        }
        #expect(spread.count > 150, "different operations retry at different moments")
    }

    @Test func aLaterRetryAfterWinsButNotBeyondTheCap() {
        let id = OperationID()
        let policy = OperationTypePolicy.RetryPolicy.standard
        #expect(policy.nextAttempt(afterAttempt: 1, of: id, now: Self.now) == Self.now.addingTimeInterval(2))
        #expect(policy.nextAttempt(afterAttempt: 1, of: id, now: Self.now, retryAfter: Self.now.addingTimeInterval(30)) == Self.now.addingTimeInterval(30))
        #expect(policy.nextAttempt(afterAttempt: 5, of: id, now: Self.now, retryAfter: Self.now.addingTimeInterval(1)) == Self.now.addingTimeInterval(32))
        #expect(policy.nextAttempt(afterAttempt: 1, of: id, now: Self.now, retryAfter: Self.now.addingTimeInterval(86_400)) == Self.now.addingTimeInterval(300))
    }

    @Test func aDueMomentBeyondTheCapCountsAsTheCapFromWhenItWasSeen() {
        let policy = OperationTypePolicy.RetryPolicy.standard
        let farAhead = Self.now.addingTimeInterval(6 * 3600)
        #expect(policy.effectiveDue(farAhead, now: Self.now) == Self.now.addingTimeInterval(300))
        #expect(policy.effectiveDue(farAhead, now: Self.now.addingTimeInterval(100), firstSeen: Self.now) == Self.now.addingTimeInterval(300))
        #expect(policy.effectiveDue(Self.now.addingTimeInterval(10), now: Self.now) == Self.now.addingTimeInterval(10))
        #expect(policy.effectiveDue(nil, now: Self.now) == nil)
    }
}
