import Foundation
import Outbox
import OutboxAudit

/// The shop's tablet at the counter: another device writing the same business, straight to the
/// server over its own connection (never the phone's signal). What it changes reaches the phone
/// only through the change feed.
final class Counter: Sendable {
    private let transport: URLSessionTransport
    private let business: String

    init(_ transport: URLSessionTransport, business: String) {
        self.transport = transport
        self.business = business
    }

    /// Creates a record with `request`'s endpoint and payload under `key`; answers its revision.
    func create(_ request: OutboxRequest, key: OperationID) async throws -> Int {
        try await send("POST", request.endpoint, request.payload, extra: ["Idempotency-Key": key.idempotencyKey], expecting: 201)
    }

    /// Changes a product as another device does (`POST /_control/records/product/{id}` with a
    /// merge patch): its next revision, answered.
    func change(product id: String, patch: Data) async throws -> Int {
        try await send("POST", "/_control/records/product/\(id)", patch, extra: [:], expecting: 200)
    }

    private func send(_ method: String, _ endpoint: String, _ body: Data, extra: [String: String], expecting status: Int) async throws -> Int {
        let response = try await transport.send(TransportRequest(
            method: method, endpoint: endpoint,
            headers: extra.merging(["X-Business-ID": business, "Content-Type": "application/json"]) { $1 }, body: body))
        let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.statusCode == status, let revision = (json?["revision"] as? NSNumber)?.intValue else {
            throw DemoError.unexpected("the counter's \(method) \(endpoint) answered \(response.statusCode): \(String(decoding: response.body, as: UTF8.self))")
        }
        return revision
    }
}
