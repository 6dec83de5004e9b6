public import Foundation

/// `POST /sync/batch`: several queued operations in one request. The server claims and applies
/// each in its own transaction, exactly as if it had arrived alone, and answers every one.
///
/// An operation carries everything its single request would: the key, the scope (business and
/// type), the method and endpoint it stands for, the payload's version, the revision an edit
/// started from, and the payload byte for byte (base64 in JSON), so that a batched and a single
/// send of one key have the same fingerprint and replay each other's stored answer.
public struct BatchRequest: Codable, Sendable, Equatable {
    /// The path of the batch endpoint on the test server and in the contract.
    public static let path = "/sync/batch"

    public var operations: [BatchOperation]

    public init(operations: [BatchOperation]) {
        self.operations = operations
    }
}

/// One operation of a ``BatchRequest``.
public struct BatchOperation: Codable, Sendable, Equatable {
    /// The engine's operation id: how the answer names it.
    public var operationID: String
    /// Its `Idempotency-Key`.
    public var idempotencyKey: String
    /// The idempotency scope: the business and the operation type.
    public var businessID: String
    public var operationType: String
    /// The request it stands for: `POST /products`, `PUT /products/p-1`, ...
    public var method: String
    public var endpoint: String
    public var payloadVersion: Int
    /// The revision an edit started from (what `If-Match` carries in a single request).
    public var baseRevision: String?
    /// The payload, byte for byte.
    public var payload: Data

    public init(operationID: String, idempotencyKey: String, businessID: String, operationType: String, method: String,
                endpoint: String, payloadVersion: Int, baseRevision: String?, payload: Data) {
        self.operationID = operationID
        self.idempotencyKey = idempotencyKey
        self.businessID = businessID
        self.operationType = operationType
        self.method = method
        self.endpoint = endpoint
        self.payloadVersion = payloadVersion
        self.baseRevision = baseRevision
        self.payload = payload
    }

    enum CodingKeys: String, CodingKey {
        case operationID = "operation_id"
        case idempotencyKey = "idempotency_key"
        case businessID = "business_id"
        case operationType = "operation_type"
        case method, endpoint
        case payloadVersion = "payload_version"
        case baseRevision = "base_revision"
        case payload
    }
}

/// The answer to a ``BatchRequest`` (status 200): one result per operation, in any order (the
/// test servers answer in the request's order). An operation whose id is missing from it had
/// no answer: the client treats it as a request whose response was lost, and sends it again.
public struct BatchResponse: Codable, Sendable, Equatable {
    public var results: [BatchResult]

    public init(results: [BatchResult]) {
        self.results = results
    }
}

/// What became of one operation of a batch: its outcome in a word, and the response it would
/// have had alone (status, the stored headers, the body).
public struct BatchResult: Codable, Sendable, Equatable {
    public var operationID: String
    public var outcome: BatchOutcome
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(operationID: String, outcome: BatchOutcome, status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.operationID = operationID
        self.outcome = outcome
        self.status = status
        self.headers = headers
        self.body = body
    }

    enum CodingKeys: String, CodingKey {
        case operationID = "operation_id"
        case outcome, status, headers, body
    }
}

/// A batch result's outcome in a word. The engine classifies each result by its status and body,
/// as it would a single response; the word is for people and logs.
public enum BatchOutcome: String, Codable, Sendable, CaseIterable {
    /// Applied now (201, 200, or 202 held for approval).
    case accepted
    /// Applied before: the stored answer, replayed.
    case replayed
    /// The key was used with another payload (409 `idempotency_conflict`).
    case keyConflict = "key_conflict"
    /// The record changed since the base revision (412, or 409 `revision_conflict`).
    case revisionConflict = "revision_conflict"
    /// The payload or the request was refused (4xx).
    case rejected
    /// The credentials were refused (401).
    case unauthorized
    /// Not applied; try again later (408, 429, 5xx).
    case retry
    /// The same key is being applied by another request now (409 `idempotency_in_progress`).
    case inProgress = "in_progress"
}

extension BatchRequest {
    /// The request's JSON body.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

extension BatchResponse {
    /// The response's JSON body.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
