import Foundation
import OutboxCore

/// The headers the engine sets on every request.
public enum OutboxHeader {
    /// The operation id: the same on every attempt, so the server applies the write once.
    public static let idempotencyKey = "Idempotency-Key"
    public static let contentType = "Content-Type"
    /// The payload's schema version, so a server can accept an older shape.
    public static let payloadVersion = "Outbox-Payload-Version"
    /// The business the write belongs to: part of the server's idempotency scope.
    public static let businessID = "X-Business-ID"
}

extension TransportRequest {
    /// The request of a stored operation exactly as journaled, under the operation's key. No
    /// credentials: the transport adds them when it sends.
    init(stored state: OperationState, payload: Data) {
        self.init(
            method: state.method,
            endpoint: state.endpoint,
            headers: [
                OutboxHeader.idempotencyKey: state.id.idempotencyKey,
                OutboxHeader.contentType: "application/json",
                OutboxHeader.payloadVersion: String(state.payloadVersion),
                OutboxHeader.businessID: state.businessID,
            ],
            body: payload
        )
    }
}
