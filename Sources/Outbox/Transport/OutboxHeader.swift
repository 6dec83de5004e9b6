import Foundation
import OutboxCore
public import OutboxWire

/// The headers the engine sets on every request (and a server reads): spelled once, in
/// `OutboxWire`, for both halves.
package typealias OutboxHeader = WireHeader

extension TransportRequest {
    /// The request of a stored operation exactly as journaled, under the operation's key. No
    /// credentials: the transport adds them when it sends.
    /// An edit carries the revision it started from (the server's, after a rebase) as an
    /// entity tag: a change made elsewhere meanwhile is answered 412.
    /// - Parameter revision: the `If-Match` revision: the row's own, or the one an attempt took
    ///   from a record's server base.
    init(stored state: OperationState, payload: Data, revision: String?? = nil) {
        var headers = [
            OutboxHeader.idempotencyKey: state.id.idempotencyKey,
            OutboxHeader.contentType: "application/json",
            OutboxHeader.payloadVersion: String(state.payloadVersion),
            OutboxHeader.businessID: state.businessID,
        ]
        if let revision = revision ?? state.baseRevision { headers[OutboxHeader.ifMatch] = "\"\(revision)\"" }
        self.init(method: state.method, endpoint: state.endpoint, headers: headers, body: payload)
    }
}
