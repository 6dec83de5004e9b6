import Foundation
import IdempotencyClaims

/// The control API, under `/_control/`: script faults, read what was applied, reset.
enum ControlRoute: CaseIterable {
    /// `GET /_control/applied`: `{"<key>": count, ...}`.
    case applied
    /// `GET /_control/records`: `{"records": [...], "approvals": [...]}`.
    case records
    /// `GET /_control/faults`: `{"faults": [...]}`, the faults not yet consumed.
    case listFaults
    /// `POST /_control/faults` with `[fault, ...]` or `{"faults": [...]}`: `{"queued": n}`.
    case addFaults
    /// `POST /_control/reset`: forgets faults, records, counts and claims; releases holds.
    case reset
    /// `POST /_control/release`, optionally `{"key": "..."}`: lets held requests go.
    case release
    /// `GET /_control/held`: `{"held": ["<key>", ...]}`.
    case held
    /// `POST /_control/await-held` with `{"key": "..."}`: answers `{"held": true}` once a request
    /// with that key is held, or `{"held": false}` after 10 s (or when the server stops).
    case awaitHeld

    var method: String {
        switch self {
        case .applied, .records, .listFaults, .held: "GET"
        case .addFaults, .reset, .release, .awaitHeld: "POST"
        }
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
        }
    }
}

extension Routes {
    func control(_ route: ControlRoute, _ request: HTTPRequest) -> HTTPResponse {
        do {
            switch route {
            case .applied:
                return try json(storage.appliedCounts())
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
            }
        } catch let error as FaultDecodingError {
            return .problem(400, code: "invalid_faults", message: error.message)
        } catch is DecodingError {
            let expected = route == .awaitHeld ? #"a JSON object like {"key":"..."}"# : #"a JSON object like {"key":"..."} or no body"#
            return .problem(400, code: "invalid_body", message: "expected \(expected)")
        } catch {
            return .problem(500, code: "internal_error", message: "the control request failed: \(error)")
        }
    }

    /// The longest `POST /_control/await-held` waits, in seconds.
    static let awaitHeldLimit: TimeInterval = 30

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
    /// The request body as sent, as a string.
    var body: String

    init(_ record: StoredRecord) {
        type = record.type
        businessID = record.businessID
        id = record.id
        revision = record.revision
        idempotencyKey = record.idempotencyKey
        body = String(decoding: record.body, as: UTF8.self)
    }

    enum CodingKeys: String, CodingKey {
        case type, id, revision, body
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
