public import Outbox
import Foundation
import OutboxCore

/// An attempt as `journal-inspect timeline --json` prints it: the fields in the order of
/// `Docs/journal-inspect.md`, absent (never `null`) when there is nothing to say.
extension AttemptSummary: Encodable {
    private enum Key: String, CodingKey {
        case attempt, startedSeq, startedAt, trigger, endedSeq, endedAt, outcome, httpStatus, transportFailure
        case disposition, errorCode, errorMessage, retryAfter, nextAttemptAt, approvalRequestID, serverRevision
        case abandoned, inFlight, secondsSincePreviousAttempt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(number.rawValue, forKey: .attempt)
        try container.encode(startedSeq, forKey: .startedSeq)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(trigger, forKey: .trigger)
        try container.encodeIfPresent(endedSeq, forKey: .endedSeq)
        try container.encodeIfPresent(endedAt, forKey: .endedAt)
        if let finished {
            let outcome = OutcomeFields(finished.outcome)
            try container.encode(outcome.outcome, forKey: .outcome)
            try container.encodeIfPresent(outcome.httpStatus, forKey: .httpStatus)
            try container.encodeIfPresent(outcome.transportFailure, forKey: .transportFailure)
            try container.encode(finished.disposition, forKey: .disposition)
            try container.encodeIfPresent(finished.errorCode, forKey: .errorCode)
            try container.encodeIfPresent(finished.errorMessage, forKey: .errorMessage)
            try container.encodeIfPresent(finished.retryAfter, forKey: .retryAfter)
            try container.encodeIfPresent(finished.nextAttemptAt, forKey: .nextAttemptAt)
            try container.encodeIfPresent(finished.approvalRequestID, forKey: .approvalRequestID)
            try container.encodeIfPresent(finished.serverRevision, forKey: .serverRevision)
        }
        try container.encode(wasAbandoned, forKey: .abandoned)
        try container.encode(isInFlight, forKey: .inFlight)
        try container.encodeIfPresent(secondsSincePreviousAttempt, forKey: .secondsSincePreviousAttempt)
    }
}

/// An operation's folded state as `journal-inspect ops --json` and `export` print it: stable
/// field names, never the payload (only its size and recorded hash).
extension OperationState: Encodable {
    private enum Key: String, CodingKey {
        case operationID, status, isTerminal, businessID, operationType, method, endpoint, entityID, category
        case entityLabel, summary, payloadVersion, payloadBytes, requestHash, account, createdAt, attempts
        case nextAttemptAt, lastAttemptAt, lastOutcome, latestOutcome, lastErrorCode, lastErrorMessage
        case approvalRequestID, serverRevision, firstSeq, latestSeq, changedAt, form, compactedAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(id, forKey: .operationID)
        try container.encode(status, forKey: .status)
        try container.encode(status.isTerminal, forKey: .isTerminal)
        try container.encode(operationType, forKey: .operationType)
        // A ledger-row-only compaction kept none of the request's fields: they are left out.
        if keptRequest {
            try container.encode(businessID, forKey: .businessID)
            try container.encode(method, forKey: .method)
            try container.encode(endpoint, forKey: .endpoint)
            try container.encodeIfPresent(entityID, forKey: .entityID)
            try container.encode(category, forKey: .category)
            try container.encode(entityLabel, forKey: .entityLabel)
            try container.encode(summary, forKey: .summary)
            try container.encode(payloadVersion, forKey: .payloadVersion)
            try container.encode(payloadByteCount, forKey: .payloadBytes)
            try container.encode(requestHash.hex, forKey: .requestHash)
            try container.encode(account, forKey: .account)
        }
        try container.encode(form.exportName, forKey: .form)
        try container.encodeIfPresent(compactedAt, forKey: .compactedAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(attemptCount, forKey: .attempts)
        try container.encodeIfPresent(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encodeIfPresent(lastAttemptAt, forKey: .lastAttemptAt)
        try container.encodeIfPresent(lastOutcome?.description, forKey: .lastOutcome)
        try container.encode(latestOutcome?.rawValue ?? "none", forKey: .latestOutcome)
        try container.encodeIfPresent(lastErrorCode, forKey: .lastErrorCode)
        try container.encodeIfPresent(lastErrorMessage, forKey: .lastErrorMessage)
        try container.encodeIfPresent(approvalRequestID, forKey: .approvalRequestID)
        try container.encodeIfPresent(serverRevision, forKey: .serverRevision)
        try container.encode(firstSeq, forKey: .firstSeq)
        try container.encode(latestSeq, forKey: .latestSeq)
        try container.encode(changedAt, forKey: .changedAt)
    }
}

extension OperationState.Form {
    /// The form's name in exports: `live`, `compacted` or `compacted_ledger_row_only`.
    var exportName: String {
        switch self {
        case .live: "live"
        case .compacted: "compacted"
        case .compactedLedgerRowOnly: "compacted_ledger_row_only"
        }
    }
}
