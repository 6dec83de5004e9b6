import Foundation

/// One business request as the server handled it (or one operation of a batch, or a batch
/// answered as a whole), or a request to a path the server does not serve: for a narration, or
/// a test watching the server from the inside.
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
        /// An update or a delete whose `If-Match` named a revision the record has moved past: 412
        /// `revision_conflict`, nothing written, no claim kept.
        case revisionConflict
        /// Refused: a missing key, a scripted fault's answer, no endpoint at the path (404), a method
        /// the path does not take (405), or the write's own refusal (a body it cannot take, a record
        /// that is not there), which keeps no claim.
        case refused
    }

    /// The request's method, e.g. `POST`, `PATCH` or `DELETE`.
    public var method: String
    /// The path as sent, e.g. `/products` or `/products/p-1`.
    public var path: String
    /// The request target exactly as it arrived: path, `?` and query, every escape as sent.
    public var target: String
    public var idempotencyKey: String?
    public var outcome: Outcome
    /// The status sent; `nil` when the connection was dropped without a response.
    public var status: Int?
    /// The scripted fault the request met, if any.
    public var fault: Fault.Kind?
    /// Where the operation stood in a `POST /sync/batch`; `nil` for a request of its own, and
    /// for a batch answered as a whole (400, 413, a fault's answer: `path` `/sync/batch`).
    public var batch: BatchPart? = nil

    /// One operation's place in a batch.
    public struct BatchPart: Sendable, Equatable {
        /// The batch's number on this server: 1 for the first batch it read, 2 for the next, ...;
        /// the operations of one batch share it.
        public var number: Int
        /// The operation's id, as the batch named it.
        public var operationID: String
        /// Its place in the batch, from 0.
        public var index: Int
        /// How many operations the batch held.
        public var count: Int

        public init(number: Int, operationID: String, index: Int, count: Int) {
            self.number = number
            self.operationID = operationID
            self.index = index
            self.count = count
        }
    }
}
