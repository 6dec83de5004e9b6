public import Foundation

/// One scripted misbehaviour, consumed by the first business request it matches.
///
/// As JSON (what `POST /_control/faults` takes):
///
/// ```json
/// {"fault": "rate_limited", "endpoint": "/products", "key": "op-7", "retry_after": 30}
/// ```
///
/// `endpoint` and `key` narrow which request the fault applies to; without them it applies to
/// the next request to any business endpoint. Faults are consumed in the order queued.
public struct Fault: Hashable, Sendable, Codable {
    /// What the server does instead of (or besides) answering normally.
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// Runs the write and commits it with its claim, then closes the connection without a
        /// response: the client cannot know the write happened.
        case dropAfterCommit = "drop_after_commit"
        /// 500 `internal_error`; nothing is written.
        case serverError = "server_error"
        /// 503 `unavailable` (with `Retry-After` when `retry_after` is given); nothing is written.
        case unavailable
        /// 429 `rate_limited` with `Retry-After: <retry_after, default 1>`; nothing is written.
        case rateLimited = "rate_limited"
        /// 401 `unauthorized` with `WWW-Authenticate: Bearer`; nothing is written.
        case unauthorized
        /// 403 `forbidden` with `message`; nothing is written.
        case forbidden
        /// 422 `validation_failed` with `message`; nothing is written.
        case validationFailed = "validation_failed"
        /// Takes the claim and records a pending approval instead of the record: 202
        /// `{"request_id":"apr-N","status":"pending_approval"}`, stored in the claim so a replay
        /// answers the same envelope.
        case pendingApproval = "pending_approval"
        /// A captive portal's sign-in page: 200 with `Content-Type: text/html`; nothing is written.
        case captivePortal = "captive_portal"
        /// Takes the claim, then holds the request "finalizing" until released: by
        /// `POST /_control/release`, or as soon as another request with the same key has been
        /// answered. Then the write runs and commits.
        case slow
        /// Takes the claim, runs the write, then holds the request inside the write's open
        /// transaction, before its commit, until released by `POST /_control/release` (or the
        /// server stops, or the safety limit passes); then it commits and answers. Copies are not
        /// let through by it. For tests that kill a server mid-transaction.
        case holdInTransaction = "hold_in_transaction"
    }

    public var kind: Kind
    /// Only requests to this path, e.g. `/products`; any business endpoint when `nil`.
    public var endpoint: String?
    /// Only requests with this `Idempotency-Key`; any when `nil`.
    public var key: String?
    /// The `Retry-After` seconds of `rate_limited` (default 1) and `unavailable` (none by default).
    public var retryAfterSeconds: Int?
    /// The message of `validation_failed` and `forbidden`.
    public var message: String?

    public init(
        _ kind: Kind, endpoint: String? = nil, key: String? = nil, retryAfterSeconds: Int? = nil, message: String? = nil
    ) {
        self.kind = kind
        self.endpoint = endpoint
        self.key = key
        self.retryAfterSeconds = retryAfterSeconds
        self.message = message
    }

    enum CodingKeys: String, CodingKey {
        case kind = "fault"
        case endpoint
        case key
        case retryAfterSeconds = "retry_after"
        case message
    }

    /// Whether this fault applies to a request to `path` carrying `key`.
    func matches(path: String, key requestKey: String?) -> Bool {
        (endpoint == nil || endpoint == path) && (key == nil || key == requestKey)
    }

    /// Decodes `POST /_control/faults` bodies: a JSON array of faults, or `{"faults": [...]}`.
    /// - Throws: ``FaultDecodingError`` naming what is wrong.
    public static func decodeList(_ body: Data) throws(FaultDecodingError) -> [Fault] {
        struct Wrapped: Decodable { var faults: [Fault] }
        let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
        let isArray = body.first { !" \t\r\n".utf8.contains($0) } == UInt8(ascii: "[")
        do {
            return isArray
                ? try JSONDecoder().decode([Fault].self, from: body)
                : try JSONDecoder().decode(Wrapped.self, from: body).faults
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.last?.stringValue == "fault" {
            throw FaultDecodingError(message: "unknown fault kind; expected one of \(kinds)")
        } catch {
            throw FaultDecodingError(
                message: #"expected a JSON array of faults like [{"fault":"server_error"}] or {"faults":[...]}; kinds: "#
                    + kinds)
        }
    }
}

/// A `POST /_control/faults` body that is not a list of faults.
public struct FaultDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
