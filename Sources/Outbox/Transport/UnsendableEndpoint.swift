import Foundation
import OutboxCore

extension URLSessionTransport {
    /// Thrown by ``URLSessionTransport`` instead of sending a request whose endpoint it cannot send
    /// byte for byte: nothing left the device.
    ///
    /// `enqueue` refuses such endpoints, so only a row written by an older engine under a looser
    /// rule (`/products%zz`, `/\evil.example`, `/a/../b`) can meet it. Sending it would mean sending
    /// another endpoint than the journal holds (`URL` re-encodes `%zz` as `%25zz`, the client
    /// resolves `..`). The engine records the attempt as not sent and blocks the row with
    /// `endpoint_unsendable`; a person discards it and queues the write again with a valid endpoint.
    public struct UnsendableEndpoint: Error, Sendable, Equatable, CustomStringConvertible {
        /// The endpoint as stored (at most its first 256 characters).
        public var endpoint: String
        /// What is wrong with it, in the words of the endpoint rule.
        public var problem: String

        public init(endpoint: String, problem: String) {
            self.endpoint = String(endpoint.prefix(256))
            self.problem = problem
        }

        public var description: String {
            "the endpoint \(endpoint.debugDescription) cannot be sent exactly as saved: it \(problem)"
        }

        /// How the engine records an attempt this refused: not sent, blocked for a person.
        var classification: Classification {
            Classification(
                outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.endpointUnsendable,
                errorMessage: "This change was not sent: the address it was saved with cannot be sent as saved. Someone needs to look at it."
            )
        }
    }
}
