public import Foundation

/// The engine's decision about one attempt, ready to be recorded in `attemptFinished`.
public struct Classification: Sendable, Equatable {
    public var outcome: AttemptOutcome
    public var disposition: Disposition
    public var errorCode: String?
    /// A message the member can read.
    public var errorMessage: String?
    public var retryAfter: Date?
    public var approvalRequestID: String?
    public var serverRevision: String?

    public init(
        outcome: AttemptOutcome,
        disposition: Disposition,
        errorCode: String? = nil,
        errorMessage: String? = nil,
        retryAfter: Date? = nil,
        approvalRequestID: String? = nil,
        serverRevision: String? = nil
    ) {
        self.outcome = outcome
        self.disposition = disposition
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.retryAfter = retryAfter
        self.approvalRequestID = approvalRequestID
        self.serverRevision = serverRevision
    }
}
