import Foundation

/// One business request as the server handled it, or a request to a path the server does not
/// serve: for a narration, or a test watching the server from the inside.
public struct ServerEvent: Sendable, Equatable {
    /// What the server did.
    public enum Outcome: Sendable, Equatable {
        /// The write ran and committed with its claim.
        case applied
        /// The stored response of an earlier copy was sent again.
        case replayed
        /// The key came with another body: 409 `idempotency_conflict`.
        case conflict
        /// A copy of this key was still finalizing: 409 `idempotency_in_progress`.
        case inProgress
        /// Refused before the claims: a missing key, a scripted fault's answer, or no endpoint
        /// at the path (404).
        case refused
    }

    /// The endpoint's path, or the path as sent when no endpoint serves it.
    public var path: String
    /// The request target exactly as it arrived: path, `?` and query, every escape as sent.
    public var target: String
    public var idempotencyKey: String?
    public var outcome: Outcome
    /// The status sent; `nil` when the connection was dropped without a response.
    public var status: Int?
    /// The scripted fault the request met, if any.
    public var fault: Fault.Kind?
}
