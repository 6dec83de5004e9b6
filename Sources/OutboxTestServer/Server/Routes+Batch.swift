import Foundation
import IdempotencyClaims
import OutboxWire
import Synchronization

/// `POST /sync/batch`: each operation handled by the endpoint its single request goes to, with
/// its own fault, claim and transaction, and answered in one `BatchResponse`.
extension Routes {
    func batch(_ request: HTTPRequest) -> Reply {
        if latency > 0 { Thread.sleep(forTimeInterval: latency) }
        let whole = faults.take(.batch)
        if let whole, let response = Self.immediateResponse(to: whole) {
            return refusedBatch(request, response, fault: whole)
        }
        // `drop_after_commit` for the whole batch: the writes commit, and the answer is lost.
        let isDropped = whole?.kind == .dropAfterCommit
        let batch: BatchRequest
        do {
            batch = try BatchRequest.decoded(from: request.body, maxOperations: maxBatchOperations)
        } catch {
            var reply = refusedBatch(request, HTTPResponse(BatchHandling.response(refusing: error)), fault: whole)
            if isDropped { reply.response = nil }
            return reply
        }
        let number = batchNumbers.next()
        var releases: [String] = []
        var index = 0
        let results = BatchHandling.results(for: batch) { operation in
            let part = ServerEvent.BatchPart(number: number, operationID: operation.operationID, index: index, count: batch.operations.count)
            index += 1
            var (reply, event) = self.reply(to: operation, part)
            releases += reply.releasesKeys
            if isDropped {
                event.status = nil
                event.fault = event.fault ?? .dropAfterCommit
            }
            observer?(event)
            return reply.response.map { ClaimResponse(status: $0.status, headers: $0.headers, body: $0.body) }
        }
        return Reply(response: isDropped ? nil : HTTPResponse(BatchHandling.response(results)), releasesKeys: releases,
                     cutsBody: whole?.kind == .cutBody)
    }

    /// One operation, answered by the endpoint its single request would reach, as that request
    /// would be: never a control route, and 404 or 405 when no endpoint takes it.
    private func reply(to operation: BatchOperation, _ part: ServerEvent.BatchPart) -> (Reply, ServerEvent) {
        let request = operation.singleRequest
        // What a request line could not carry, a single request could not have sent.
        if let problem = RequestTarget.problem(Array(operation.endpoint.utf8)) {
            let response = HTTPResponse.problem(400, code: "malformed_request", message: "operations[\(part.index)].endpoint: " + problem)
            return refusal(request, response, fault: nil, batch: part)
        }
        switch businessRoute(request) {
        case .write(let endpoint, let action)?:
            return handleBusiness(endpoint, action, request, batch: part)
        case .wrongMethod(let response)?:
            return refusal(request, response, fault: nil, batch: part)
        case nil:
            return refusal(request, Self.noEndpoint(at: request.path), fault: nil, batch: part)
        }
    }

    /// A batch answered as a whole, before any operation: told to the observer as one request.
    private func refusedBatch(_ request: HTTPRequest, _ response: HTTPResponse, fault: Fault?) -> Reply {
        let (reply, event) = refusal(request, response, fault: fault, batch: nil)
        observer?(event)
        return reply
    }
}

extension BatchOperation {
    /// The request this operation stands for, as it would have arrived alone: its method and
    /// endpoint, its key, business and payload version as headers, its base revision as
    /// `If-Match`, its payload as the body.
    var singleRequest: HTTPRequest {
        let parts = endpoint.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var headers: [(name: String, value: String)] = [
            (WireHeader.idempotencyKey, idempotencyKey),
            (WireHeader.businessID, businessID),
            (WireHeader.payloadVersion, String(payloadVersion)),
            (WireHeader.contentType, "application/json"),
        ]
        if let baseRevision { headers.append((WireHeader.ifMatch, "\"\(baseRevision)\"")) }
        return HTTPRequest(
            method: method, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "", target: endpoint,
            headers: headers, body: payload)
    }
}

/// Numbers batches 1, 2, 3, ... in the order the server reads them.
final class BatchNumbers: Sendable {
    private let last = Mutex(0)

    func next() -> Int {
        last.withLock { value in
            value += 1
            return value
        }
    }
}
