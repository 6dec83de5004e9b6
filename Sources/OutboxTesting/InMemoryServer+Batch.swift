import Foundation
import Outbox
public import OutboxWire

/// `POST /sync/batch` on the in-memory server: the same contract as the loopback test server's.
///
/// Each operation is answered exactly as its single request (its method, endpoint, key, payload,
/// and `base_revision` as `If-Match`) would be, claims included, so a batched and a single send
/// of one key replay each other. The batch as a whole meets the next fault queued by
/// ``InMemoryServer/inject(_:)`` (a ``InMemoryServer/Fault/respond(_:)`` of 413, 401 or 503
/// answers it whole; ``InMemoryServer/Fault/noResponse(_:)`` loses it, nothing applied;
/// ``InMemoryServer/Fault/applyThenDropResponse`` applies every operation and loses the answer;
/// ``InMemoryServer/Fault/holdForApproval(requestID:)`` holds each for approval); each operation
/// meets its own from ``InMemoryServer/inject(_:forKey:)``. A body that is not a batch is
/// answered 400 `batch_invalid`, more than ``InMemoryServer/maxBatchOperations`` operations 413
/// `batch_too_large`.
///
/// ```swift
/// let server = InMemoryServer(maxBatchOperations: 50)
/// server.inject(.respond(.error(503, code: "unavailable", message: "down")), forKey: op2.idempotencyKey)
/// server.inject(.applyThenDropResponse, forKey: op3.idempotencyKey)   // applied, missing from the answer
/// // ... the engine sends a batch ...
/// server.operationsPerBatch   // [3]
/// ```
extension InMemoryServer {
    /// Every `POST /sync/batch` sent to the server whose body reads as a batch, in order,
    /// whatever it was answered (a fault, 413, no connection): `batches.count` is how many
    /// batch requests came.
    public var batches: [BatchRequest] {
        state.withLock { $0.batches }
    }

    /// How many operations each of ``batches`` held, in order.
    public var operationsPerBatch: [Int] {
        batches.map(\.operations.count)
    }

    static func isBatch(_ request: TransportRequest) -> Bool {
        request.method == "POST" && request.endpoint == BatchRequest.path
    }

    /// Answers a batch, the server online: its fault, then each operation on its own.
    func answerBatch(_ request: TransportRequest, in state: inout State) -> Result<TransportResponse, URLError> {
        let fault = state.faults.isEmpty ? nil : state.faults.removeFirst()
        var approval: String?
        var losesAnswer = false
        switch fault {
        case .noResponse(let failure)?: return .failure(URLError(failure.urlErrorCode))
        case .respond(let response)?: return .success(response)
        case .applyThenDropResponse?: losesAnswer = true
        case .holdForApproval(let requestID)?: approval = requestID
        case .apply?, nil: break
        }
        let batch: BatchRequest
        do {
            batch = try BatchRequest.decoded(from: request.body, maxOperations: maxBatchOperations)
        } catch {
            return .success(TransportResponse(statusCode: error.status, headers: [WireHeader.contentType: "application/json"], body: error.body))
        }
        var results: [BatchResult] = []
        for operation in batch.operations {
            let single = operation.transportRequest
            let answer: TransportResponse
            switch state.takeKeyedFault(for: operation.idempotencyKey) {
            case .noResponse?:
                continue
            case .applyThenDropResponse?:
                _ = apply(single, approval: approval)
                continue
            case .respond(let response)?:
                answer = response
            case .holdForApproval(let requestID)?:
                answer = apply(single, approval: requestID)
            case .apply?, nil:
                answer = apply(single, approval: approval)
            }
            results.append(BatchResult(operationID: operation.operationID, status: answer.statusCode, headers: answer.headers, body: answer.body))
        }
        if losesAnswer { return .failure(URLError(.networkConnectionLost)) }
        // Strings, integers and bytes always encode.
        let body = (try? BatchResponse(results: results).encoded()) ?? Data()
        return .success(TransportResponse(statusCode: 200, headers: [WireHeader.contentType: "application/json"], body: body))
    }
}

extension InMemoryServer.State {
    /// Removes and answers the next fault scripted for `key`.
    mutating func takeKeyedFault(for key: String) -> InMemoryServer.Fault? {
        guard var queued = keyedFaults[key], !queued.isEmpty else { return nil }
        let fault = queued.removeFirst()
        keyedFaults[key] = queued.isEmpty ? nil : queued
        return fault
    }

    /// Keeps a batch sent to the server, when its body reads as one.
    mutating func recordBatch(_ request: TransportRequest) {
        if let batch = try? JSONDecoder().decode(BatchRequest.self, from: request.body) { batches.append(batch) }
    }
}

extension BatchOperation {
    /// The request this operation stands for, as the engine would send it alone.
    var transportRequest: TransportRequest {
        var headers = [
            WireHeader.idempotencyKey: idempotencyKey,
            WireHeader.businessID: businessID,
            WireHeader.payloadVersion: String(payloadVersion),
            WireHeader.contentType: "application/json",
        ]
        if let baseRevision { headers[WireHeader.ifMatch] = "\"\(baseRevision)\"" }
        return TransportRequest(method: method, endpoint: endpoint, headers: headers, body: payload)
    }
}
