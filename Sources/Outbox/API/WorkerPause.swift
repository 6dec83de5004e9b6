public import Foundation
public import OutboxCore

extension EngineState {
    /// The pause an app is shown; `nil` while the worker sends.
    package var pause: Outbox.WorkerPause? {
        isPaused ? Outbox.WorkerPause(reason: pauseReason, since: pausedAt, triggeredBy: pausedBy) : nil
    }
}

extension Outbox {
    /// Why the worker sends nothing: a 401 paused it and the session has not been refreshed since.
    /// Pending writes wait (``OperationSnapshot.WaitingOn/sessionPaused(since:)``) until ``Outbox/resumeSession()``.
    public struct WorkerPause: Sendable, Equatable {
        /// The 401's error code (`token_expired`), when the server gave one.
        public var reason: String?
        /// When the 401 was recorded (device clock).
        public var since: Date?
        /// The operation whose attempt was answered 401.
        public var triggeredBy: OperationID?

        public init(reason: String?, since: Date?, triggeredBy: OperationID?) {
            self.reason = reason
            self.since = since
            self.triggeredBy = triggeredBy
        }
    }
}
