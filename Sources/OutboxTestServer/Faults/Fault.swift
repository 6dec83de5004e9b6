public import Foundation
import OutboxWire

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
///
/// A `GET /sync/changes` meets only the faults that name it as their endpoint (and no key), of
/// the kinds that stop a whole request: an answer instead of the page (`unavailable`,
/// `rate_limited`, `unauthorized`, ...), no answer (`drop_after_commit`), or half of it
/// (`cut_body`).
///
/// In a `POST /sync/batch`, each operation meets faults as its single request would (by its
/// endpoint and key: `{"fault":"unavailable","key":"op-2"}` answers that operation 503,
/// `drop_after_commit` with its key applies it and leaves it out of the answer). The batch as a
/// whole meets the faults that stop a whole request (the answers instead of the request's, and
/// `drop_after_commit`) when they name the endpoint `/sync/batch`, or neither endpoint nor key.
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
        /// Before the request is handled, the record it updates is changed as another device
        /// would: `patch` merged into it (by default nothing, so only its revision moves), in a
        /// transaction of its own. The request then goes on as usual: its key's claim first,
        /// then its `If-Match`, which names the old revision now (412). Applies only to requests
        /// to a record (`PUT`/`PATCH /products/{id}`); a record that is not there is left alone.
        case changeRecord = "change_record"
        /// Answers as usual (a write commits), but sends the response's head and only half its
        /// body, then closes the connection: an answer the network cut off. In a batch it acts
        /// on the batch as a whole.
        case cutBody = "cut_body"

        /// Whether it can stop a `POST /sync/batch` as a whole: an answer instead of the
        /// request's (a proxy's, an authentication layer's), or a response lost after the writes.
        /// The others (`slow`, `pending_approval`, `hold_in_transaction`, `change_record`) act
        /// on one write, so in a batch they apply to its operations only.
        var stopsWholeRequest: Bool {
            switch self {
            case .dropAfterCommit, .serverError, .unavailable, .rateLimited, .unauthorized, .forbidden, .validationFailed,
                 .captivePortal, .cutBody:
                true
            case .pendingApproval, .slow, .holdInTransaction, .changeRecord:
                false
            }
        }
    }

    public var kind: Kind
    /// Only requests to this path, e.g. `/products`; any business endpoint when `nil`.
    public var endpoint: String?
    /// Only requests with this `Idempotency-Key` (the same bytes); any when `nil`.
    public var key: String?
    /// The `Retry-After` seconds of `rate_limited` (default 1) and `unavailable` (none by default).
    public var retryAfterSeconds: Int?
    /// The message of `validation_failed` and `forbidden`.
    public var message: String?
    /// What `change_record` merges into the record (RFC 7396): a JSON object, `{}` when `nil`.
    public var patch: Data?

    public init(
        _ kind: Kind, endpoint: String? = nil, key: String? = nil, retryAfterSeconds: Int? = nil, message: String? = nil,
        patch: Data? = nil
    ) {
        self.kind = kind
        self.endpoint = endpoint
        self.key = key
        self.retryAfterSeconds = retryAfterSeconds
        self.message = message
        self.patch = patch
    }

    enum CodingKeys: String, CodingKey {
        case kind = "fault"
        case endpoint
        case key
        case retryAfterSeconds = "retry_after"
        case message
        case patch
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        endpoint = try container.decodeIfPresent(String.self, forKey: .endpoint)
        key = try container.decodeIfPresent(String.self, forKey: .key)
        retryAfterSeconds = try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        // The patch is JSON inside the fault's JSON: kept as its text.
        let patch = try container.decodeIfPresent(JSONValue.self, forKey: .patch)
        if let patch, case .object = patch {} else if patch != nil {
            throw DecodingError.dataCorruptedError(forKey: .patch, in: container, debugDescription: "a patch must be a JSON object")
        }
        self.patch = try patch.map { try $0.text() }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(endpoint, forKey: .endpoint)
        try container.encodeIfPresent(key, forKey: .key)
        try container.encodeIfPresent(retryAfterSeconds, forKey: .retryAfterSeconds)
        try container.encodeIfPresent(message, forKey: .message)
        try container.encodeIfPresent(patch.map { try JSONDecoder().decode(JSONValue.self, from: $0) }, forKey: .patch)
    }

    /// What a fault is matched against.
    enum Target {
        /// A request of its own, to `path` with `key`; `targetsRecord` when it updates or deletes one record.
        case request(path: String, key: String?, targetsRecord: Bool)
        /// A `POST /sync/batch` as a whole.
        case batch
        /// One operation of a batch: matched as its single request would be, but for the faults
        /// that name neither endpoint nor key and stop a whole request (those are the batch's).
        case batchOperation(path: String, key: String?, targetsRecord: Bool)
        /// A `GET /sync/changes`: met only by faults that name its path, so a fault meant for the
        /// next write never stops a pull instead.
        case feed
        /// An upload's grant or completion (`/uploads`, `/uploads/<id>/complete`): met only by
        /// faults that name its path, so a fault meant for the next write never stops an upload.
        case upload(path: String, key: String?)
    }

    /// Whether this fault applies to `target` (`change_record` applies to an update or a delete only).
    func matches(_ target: Target) -> Bool {
        switch target {
        case .request(let path, let requestKey, let targetsRecord):
            (endpoint.map { $0.hasSameBytes(as: path) } ?? true)
                && (key.map { key in requestKey.map { key.hasSameBytes(as: $0) } ?? false } ?? true)
                && (kind != .changeRecord || targetsRecord)
        case .batch:
            key == nil && (endpoint.map { $0.hasSameBytes(as: BatchRequest.path) } ?? true) && kind.stopsWholeRequest
        case .batchOperation(let path, let requestKey, let targetsRecord):
            matches(.request(path: path, key: requestKey, targetsRecord: targetsRecord))
                && !(endpoint == nil && key == nil && kind.stopsWholeRequest) && kind != .cutBody
        case .feed:
            // What a read can meet: an answer instead of its own, no answer, or half of one.
            key == nil && endpoint.map { $0.hasSameBytes(as: FeedPage.path) } == true && kind.stopsWholeRequest
        case .upload(let path, let requestKey):
            // What a grant or a completion can meet: an answer instead of its own, no answer or
            // half of one after the claim committed, or a hold while it is claimed.
            endpoint.map { $0.hasSameBytes(as: path) } == true
                && (key.map { key in requestKey.map { key.hasSameBytes(as: $0) } ?? false } ?? true)
                && (kind.stopsWholeRequest || kind == .slow)
        }
    }

    /// Decodes `POST /_control/faults` bodies: a JSON array of faults, or `{"faults": [...]}`.
    /// - Throws: ``FaultDecodingError`` naming what is wrong.
    public static func decodeList(_ body: Data) throws(FaultDecodingError) -> [Fault] {
        struct Wrapped: Decodable { var faults: [Fault] }
        let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
        let isArray = body.first { !" \t\r\n".utf8.contains($0) } == UInt8(ascii: "[")
        do {
            let faults = isArray
                ? try JSONDecoder().decode([Fault].self, from: body)
                : try JSONDecoder().decode(Wrapped.self, from: body).faults
            // A patch no store can hold would fail the request it meets: refused here instead.
            for (index, fault) in faults.enumerated() {
                if let patch = fault.patch, let problem = RecordBody.problem(ofPatch: patch) {
                    throw FaultDecodingError(message: "fault \(index): its \"patch\": \(problem)")
                }
            }
            return faults
        } catch let error as FaultDecodingError {
            throw error
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.last?.stringValue == "fault" {
            throw FaultDecodingError(message: "unknown fault kind; expected one of \(kinds)")
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.last?.stringValue == CodingKeys.patch.rawValue {
            throw FaultDecodingError(message: #"a fault's "patch" must be a JSON object, like {"price":13}"#)
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
