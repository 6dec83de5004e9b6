public import Foundation

extension Outbox {
    /// What a budgeted drain (``Outbox/drain(until:)``) did in the time the system gave.
    public struct DrainReport: Sendable, Equatable {
        /// Why the drain returned.
        public enum Ending: String, Sendable, Equatable {
            /// Nothing more was due that the worker could send now (sent, backing off, waiting for
            /// the network or a person).
            case finished
            /// Less time was left than one request needs (``OutboxConfiguration/attemptBudgetSeconds``).
            case budgetSpent
            /// The deadline passed, ``Outbox/expire()`` was called, or the drain's task was cancelled:
            /// the requests in flight were cancelled and recorded.
            case expired
            /// The outbox closed (or a sign-out stopped the worker).
            case closed
        }

        public var ending: Ending
        /// Attempts that ran and were recorded, batches' rows each counted.
        public var attempts: Int
        /// Of them, those cut off by the expiry: recorded as no response, `cancelled`, due again at once.
        public var cancelledAttempts: Int
        /// What the last pass's pull did; `nil` without a pull configuration.
        public var pull: Outbox.PullReport?
        /// When the engine next has work: the moment to hand the system's scheduler (`nil`: none).
        public var nextWake: Date?

        public init(ending: Ending, attempts: Int, cancelledAttempts: Int, pull: Outbox.PullReport?, nextWake: Date?) {
            self.ending = ending
            self.attempts = attempts
            self.cancelledAttempts = cancelledAttempts
            self.pull = pull
            self.nextWake = nextWake
        }
    }
}
