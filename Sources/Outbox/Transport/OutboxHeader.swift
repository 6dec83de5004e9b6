import Foundation
import OutboxCore
public import OutboxWire

/// The headers the engine sets on every request (and a server reads): spelled once, in
/// `OutboxWire`, for both halves.
public typealias OutboxHeader = WireHeader

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
