import Foundation
import IdempotencyClaims
import OutboxWire

/// The control API, under `/_control/`: script faults, read what was applied, reset.
enum ControlRoute: CaseIterable {
    /// `GET /_control/applied`: `{"applied": [{"count": n, "key": "<key>"}, ...]}`, byte order.
    case applied
    /// `GET /_control/records`: `{"records": [...], "approvals": [...]}`.
    case records
    /// `GET /_control/faults`: `{"faults": [...]}`, the faults not yet consumed.
    case listFaults
    /// `POST /_control/faults` with `[fault, ...]` or `{"faults": [...]}`: `{"queued": n}`.
    case addFaults
    /// `POST /_control/reset`: forgets faults, records, counts, claims and the feed's changes;
    /// releases holds; raises the feed's epoch.
    case reset
    /// `POST /_control/release`, optionally `{"key": "..."}`: lets held requests go.
    case release
    /// `GET /_control/held`: `{"held": ["<key>", ...]}`.
    case held
    /// `POST /_control/await-held` with `{"key": "..."}`: answers `{"held": true}` once a request
    /// with that key is held, or `{"held": false}` after 10 s (or when the server stops).
    case awaitHeld
    /// `POST /_control/records/{type}/{id}`, optionally with a JSON merge patch: changes the
    /// record as another device would (its next revision) and answers it.
    case changeRecord
    /// `POST /_control/feed/purge` with `{"through":"<position>"}`: forgets the business's
    /// changes at or before it (`X-Business-ID`, `default` when absent) and raises its floor
    /// there, as tombstones past their retention are forgotten, without a clock; answers
    /// `{"floor":"<position>","purged":n}`.
    case purgeFeed
    /// `GET /_control/uploads`: `{"grant_lifetime_seconds":900,"next_grant_expired":false,
    /// "refuse_grants":null}`, the upload endpoints' settings on this process.
    case uploadSettings
    /// `POST /_control/uploads` with `{"grant_lifetime_seconds":1}`,
    /// `{"refuse_grants":{"status":403,"message":"..."}}` (`null`: grant again) and/or
    /// `{"next_grant_expired":true}` (the next grant made is signed already expired, so the store
    /// answers its URLs 401 at once): changes them for the grants from now on and answers them.
    case changeUploads

    var method: String {
        switch self {
        case .applied, .records, .listFaults, .held, .uploadSettings: "GET"
        case .addFaults, .reset, .release, .awaitHeld, .changeRecord, .purgeFeed, .changeUploads: "POST"
        }
    }

    /// Whether the route serves `path`.
    func matches(path: String) -> Bool {
        guard self == .changeRecord else { return path == self.path }
        return Self.recordParts(of: path) != nil
    }

    /// The type and id of `/_control/records/{type}/{id}` (the id percent-decoded).
    static func recordParts(of path: String) -> (type: String, id: String)? {
        let prefix = "/_control/records/"
        guard path.hasPrefix(prefix) else { return nil }
        let parts = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let id = parts[1].removingPercentEncoding, !id.isEmpty else { return nil }
        return (String(parts[0]), id)
    }

    var path: String {
        switch self {
        case .applied: "/_control/applied"
        case .records: "/_control/records"
        case .listFaults, .addFaults: "/_control/faults"
        case .reset: "/_control/reset"
        case .release: "/_control/release"
        case .held: "/_control/held"
        case .awaitHeld: "/_control/await-held"
        case .changeRecord: "/_control/records/{type}/{id}"
        case .purgeFeed: "/_control/feed/purge"
        case .uploadSettings, .changeUploads: "/_control/uploads"
        }
    }
}

extension Routes {
    func control(_ route: ControlRoute, _ request: HTTPRequest) -> HTTPResponse {
        do {
            switch route {
            case .applied:
                return .json(200, Data(try storage.appliedCounts().json.utf8))
            case .records:
                return try json(RecordsView(
                    records: storage.records().map(RecordView.init),
                    approvals: storage.approvals().map(ApprovalView.init)))
            case .listFaults:
                return try json(["faults": faults.pending])
            case .addFaults:
                let added = try Fault.decodeList(request.body)
                return try json(["queued": faults.append(added)])
            case .reset:
                faults.removeAll()
                holds.release()
                try storage.reset()
                return try json(["reset": true])
            case .release:
                struct Body: Decodable { var key: String? }
                let key = request.body.isEmpty ? nil : try JSONDecoder().decode(Body.self, from: request.body).key
                return try json(["released": holds.release(key: key)])
            case .held:
                return try json(["held": holds.heldKeys])
            case .awaitHeld:
                struct Body: Decodable { var key: String }
                let key = try JSONDecoder().decode(Body.self, from: request.body).key
                return try json(["held": holds.waitUntilHeld(key: key, timeout: Self.awaitHeldLimit)])
            case .changeRecord:
                return try changeRecord(request)
            case .purgeFeed:
                return try purgeFeed(request)
            case .uploadSettings:
                guard let uploads else { return Self.noUploads }
                return try json(uploads.current)
            case .changeUploads:
                return try changeUploads(request)
            }
        } catch let error as FaultDecodingError {
            return .problem(400, code: "invalid_faults", message: error.message)
        } catch is DecodingError {
            let expected = switch route {
            case .awaitHeld: #"a JSON object like {"key":"..."}"#
            case .purgeFeed: #"a JSON object like {"through":"1-5-0"}"#
            case .changeUploads:
                #"a JSON object like {"grant_lifetime_seconds":1}, {"refuse_grants":{"status":403,"message":"..."}} or {"next_grant_expired":true}"#
            default: #"a JSON object like {"key":"..."} or no body"#
            }
            return .problem(400, code: "invalid_body", message: "expected \(expected)")
        } catch {
            return .problem(500, code: "internal_error", message: "the control request failed: \(error)")
        }
    }

    /// `POST /_control/records/{type}/{id}`: the business from `X-Business-ID` (`default`), the
    /// patch from the body (none: only the revision moves).
    private func changeRecord(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let (type, id) = ControlRoute.recordParts(of: request.path) else {
            return .problem(404, code: "not_found", message: "no endpoint at \(request.path)")
        }
        let businessID: String
        switch BusinessHeaders.read(request) {
        case .success(let headers): businessID = headers.businessID
        case .failure(let refusal): return refusal.response
        }
        let patch = request.body.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) } ? Data("{}".utf8) : request.body
        do {
            // A type no endpoint has, or an id no create can store, names no record: asked of no store.
            guard BusinessEndpoint.all.contains(where: { $0.type.hasSameBytes(as: type) }), RecordBody.idProblem(id) == nil,
                let changed = try changeRecord(type: type, businessID: businessID, id: id, patch: patch)
            else {
                return .problem(404, code: "not_found", message: "no \(type) \(id) in business \(businessID)")
            }
            return try json(RecordView(changed))
        } catch let invalid as RecordBody.Invalid {
            return .problem(400, code: "invalid_body", message: invalid.message)
        }
    }

    /// `POST /_control/feed/purge`.
    private func purgeFeed(_ request: HTTPRequest) throws -> HTTPResponse {
        let businessID: String
        switch BusinessHeaders.read(request) {
        case .success(let headers): businessID = headers.businessID
        case .failure(let refusal): return refusal.response
        }
        guard let feed = storage.feed else { return Self.feedUnsupported }
        struct Body: Decodable { var through: String }
        let text = try JSONDecoder().decode(Body.self, from: request.body).through
        do {
            let (floor, purged) = try feed.purge(business: businessID, through: try FeedPosition(text: text))
            return .json(200, Data(("{" + JSONNode.quoted("floor") + ":" + JSONNode.quoted(floor.text) + ","
                + JSONNode.quoted("purged") + ":" + String(purged) + "}").utf8))
        } catch let problem as FeedPosition.Problem {
            return .problem(400, code: "invalid_body", message: "through: " + problem.description)
        } catch let refusal as FeedPurgeRefusal {
            return .problem(400, code: "invalid_body", message: refusal.message)
        }
    }

    /// `POST /_control/uploads`: the members given change, the others stay.
    private func changeUploads(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let uploads else { return Self.noUploads }
        struct Body: Decodable {
            var lifetime: Double?
            /// Present (even `null`) or absent, apart.
            var refusal: Uploads.Refusal??
            var nextGrantExpired: Bool?

            enum CodingKeys: String, CodingKey {
                case lifetime = "grant_lifetime_seconds"
                case refusal = "refuse_grants"
                case nextGrantExpired = "next_grant_expired"
            }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                lifetime = try container.decodeIfPresent(Double.self, forKey: .lifetime)
                nextGrantExpired = try container.decodeIfPresent(Bool.self, forKey: .nextGrantExpired)
                refusal = container.contains(.refusal) ? .some(try container.decodeNil(forKey: .refusal) ? nil
                    : try container.decode(Uploads.Refusal.self, forKey: .refusal)) : .none
            }
        }
        let body = try JSONDecoder().decode(Body.self, from: request.body)
        if let lifetime = body.lifetime, !(lifetime > 0 && lifetime <= 86_400 * 7) {
            return .problem(400, code: "invalid_body", message: "grant_lifetime_seconds must be over 0 and at most 604800, not \(lifetime)")
        }
        if case .some(.some(let refusal)) = body.refusal, !(400...599).contains(refusal.status) {
            return .problem(400, code: "invalid_body", message: "refuse_grants.status must be from 400 to 599, not \(refusal.status)")
        }
        return try json(uploads.change { settings in
            if let lifetime = body.lifetime { settings.grantLifetimeSeconds = lifetime }
            if case .some(let refusal) = body.refusal { settings.refuseGrants = refusal }
            if let expired = body.nextGrantExpired { settings.nextGrantExpired = expired }
        })
    }

    /// 501: the server was started without an object store.
    static let noUploads = HTTPResponse.problem(
        501, code: "uploads_unsupported", message: "this server was started without an object store (outbox-test-server --help: --swift-storage-url)")

    /// The longest `POST /_control/await-held` waits, in seconds: a guard for a request that
    /// never comes, long enough that one a loaded machine delays is still awaited.
    static let awaitHeldLimit: TimeInterval = 300

    private func json(_ value: some Encodable) throws -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .json(200, try encoder.encode(value))
    }
}

/// `GET /_control/records`, with bodies as the exact text sent.
struct RecordsView: Codable, Sendable {
    var records: [RecordView]
    var approvals: [ApprovalView]
}

struct RecordView: Codable, Sendable {
    var type: String
    var businessID: String
    var id: String
    var revision: Int
    var idempotencyKey: String
    /// The request body as sent, as a string; empty for a tombstone.
    var body: String
    /// `true` for a tombstone; absent for a live record.
    var deleted: Bool?

    init(_ record: StoredRecord) {
        type = record.type
        businessID = record.businessID
        id = record.id
        revision = record.revision
        idempotencyKey = record.idempotencyKey
        body = String(decoding: record.body, as: UTF8.self)
        deleted = record.isDeleted ? true : nil
    }

    enum CodingKeys: String, CodingKey {
        case type, id, revision, body, deleted
        case businessID = "business_id"
        case idempotencyKey = "idempotency_key"
    }
}

struct ApprovalView: Codable, Sendable {
    var requestID: String
    var type: String
    var businessID: String
    var idempotencyKey: String
    var body: String

    init(_ approval: PendingApproval) {
        requestID = approval.requestID
        type = approval.type
        businessID = approval.businessID
        idempotencyKey = approval.idempotencyKey
        body = String(decoding: approval.body, as: UTF8.self)
    }

    enum CodingKeys: String, CodingKey {
        case type, body
        case requestID = "request_id"
        case businessID = "business_id"
        case idempotencyKey = "idempotency_key"
    }
}
