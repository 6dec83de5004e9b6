package import Foundation
import OutboxWire

/// The engine's decision about one attempt, ready to be recorded in `attemptFinished`.
package struct Classification: Sendable, Equatable {
    package var outcome: AttemptOutcome
    package var disposition: Disposition
    package var errorCode: String?
    /// The message the answer's JSON body carried, as sent (or the engine's own words for an
    /// outcome it decided itself): support reads it; the member reads ``OutboxWords``, which shows
    /// it only for a refusal.
    package var errorMessage: String?
    package var retryAfter: Date?
    package var approvalRequestID: String?
    package var serverRevision: String?
    /// For a conflict: the server's current record as its body sent it (`current`), capped at
    /// ``maxServerCurrentBytes``; shown beside the member's version to decide.
    package var serverCurrent: Data?

    /// The most of a server's current record kept with a conflict: the cap of every record an
    /// answer carries (`AnswerBody.maxRecordBytes`, 64 KiB).
    package static let maxServerCurrentBytes = AnswerBody.maxRecordBytes

    package init(
        outcome: AttemptOutcome,
        disposition: Disposition,
        errorCode: String? = nil,
        errorMessage: String? = nil,
        retryAfter: Date? = nil,
        approvalRequestID: String? = nil,
        serverRevision: String? = nil,
        serverCurrent: Data? = nil
    ) {
        self.outcome = outcome
        self.disposition = disposition
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.retryAfter = retryAfter
        self.approvalRequestID = approvalRequestID
        self.serverRevision = serverRevision
        self.serverCurrent = serverCurrent
    }
}
