public import Foundation
public import OutboxWire

/// Answers `POST /sync/batch`: every operation on its own, exactly as its single request would
/// be answered, and one result per operation.
///
/// A batch is not one transaction. Each operation is claimed and applied in its own claim and
/// transaction (``IdempotencyClaims/handle(_:scope:whileClaimed:write:)``), so a batched and a
/// single send of one key replay each other's stored answer, and one operation that is refused,
/// conflicts or fails never holds the others back.
///
/// ```swift
/// let response = BatchHandling.respond(to: request.body, maxOperations: 100) { operation in
///     let scope = ClaimScope(businessID: business, operationType: type(of: operation))
///     return try claims.handle(operation, scope: scope) { txn in
///         try write(operation, in: txn)          // what the operation's single request writes
///     }.response
/// }
/// send(response)   // 200 with every operation's result, or 400 / 413 for the batch as a whole
/// ```
public enum BatchHandling {
    /// The whole answer to a batch body: 400 `batch_invalid` or 413 `batch_too_large` for the
    /// batch as a whole (``BatchRequest/decoded(from:maxOperations:)``), else 200 with the
    /// ``BatchResponse`` of ``results(for:answer:)``.
    public static func respond(
        to body: Data,
        maxOperations: Int = BatchRequest.defaultMaxOperations,
        answer: (BatchOperation) throws -> ClaimResponse?
    ) -> ClaimResponse {
        let batch: BatchRequest
        do {
            batch = try BatchRequest.decoded(from: body, maxOperations: maxOperations)
        } catch {
            return response(refusing: error)
        }
        return response(results(for: batch, answer: answer))
    }

    /// Answers each operation of `batch` with `answer`, in order, each on its own.
    ///
    /// `answer` gives the response the operation's single request would have had; `nil` leaves
    /// the operation out of the results (the client counts it as a response it never got). An
    /// `answer` that throws is that operation's 500 `internal_error`, and the next operation
    /// goes on: `answer` must leave nothing behind when it throws, as
    /// ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)`` does.
    public static func results(for batch: BatchRequest, answer: (BatchOperation) throws -> ClaimResponse?) -> BatchResponse {
        var results: [BatchResult] = []
        results.reserveCapacity(batch.operations.count)
        for operation in batch.operations {
            let response: ClaimResponse?
            do {
                response = try answer(operation)
            } catch {
                response = .problem(
                    status: 500, code: "internal_error",
                    message: "the server could not apply this operation, and kept nothing of it: send it again")
            }
            if let response { results.append(BatchResult(operationID: operation.operationID, response: response)) }
        }
        return BatchResponse(results: results)
    }

    /// 200 with `results` as JSON.
    public static func response(_ results: BatchResponse) -> ClaimResponse {
        // Strings, integers and bytes always encode.
        let body = (try? results.encoded()) ?? Data()
        return ClaimResponse(status: 200, headers: [jsonType], body: body)
    }

    /// The answer of a batch refused as a whole: its status and JSON error body.
    public static func response(refusing refusal: BatchRefusal) -> ClaimResponse {
        ClaimResponse(status: refusal.status, headers: [jsonType], body: refusal.body)
    }

    private static let jsonType = ClaimResponse.Header(name: WireHeader.contentType, value: "application/json")
}

extension BatchResult {
    /// The result of an operation answered `response`: its status, headers and body, and the
    /// outcome they mean (``BatchOutcome/init(status:headers:body:)``). A header sent twice
    /// keeps its values joined by `, `, as HTTP reads them.
    public init(operationID: String, response: ClaimResponse) {
        var headers: [String: String] = [:]
        for header in response.headers {
            headers[header.name] = headers[header.name].map { $0 + ", " + header.value } ?? header.value
        }
        self.init(operationID: operationID, status: response.status, headers: headers, body: response.body)
    }
}

extension IdempotencyClaims {
    /// Answers one operation of a batch exactly as its single request would be answered: the
    /// claim of (`scope`, the operation's `idempotency_key`), its fingerprint the SHA-256 of the
    /// payload, in its own claim and transaction.
    ///
    /// `scope` must be the one the operation's single request would have: its business, and the
    /// operation type the server gives that request (from its endpoint, say). The operation's
    /// `business_id` and `operation_type` come from the client; a server that takes the business
    /// from the caller's credentials for a single request takes it from there for a batch too.
    /// The rest is ``handle(scope:key:body:whileClaimed:write:)``: replayed, conflict, in
    /// progress, refused (a ``ClaimRefusal`` leaves no claim), or applied.
    public func handle(
        _ operation: BatchOperation,
        scope: ClaimScope,
        whileClaimed: () throws -> Void = {},
        write: (Store.Transaction) throws -> ClaimResponse
    ) throws -> ClaimAnswer {
        try handle(scope: scope, key: operation.idempotencyKey, body: operation.payload, whileClaimed: whileClaimed, write: write)
    }
}
