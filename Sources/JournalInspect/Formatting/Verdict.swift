import Foundation
public import Outbox

/// The one line that answers "what happened to this write?", from its timeline.
public enum Verdict {
    /// For example `synced on attempt 3, 2 h 14 min after it was saved`, or
    /// `blocked: 403 on attempt 1, waiting for a person (forbidden)`.
    /// - Parameter engine: whether the worker is paused decides what a queued row waits for.
    public static func text(for timeline: OperationTimeline, engine: EngineState) -> String {
        guard let state = timeline.state ?? (try? Fold.replay(timeline.events)) else {
            return "unknown: the operation's records are damaged, see the rows marked DAMAGED"
        }
        let attempt = timeline.attempts.last
        // The state's count holds even when a damaged record hides an attempt's start.
        let number = state.attemptCount
        let lastEvent = timeline.events.last
        var text: String
        switch state.status {
        case .synced:
            let settledAt = lastEvent?.recordedAt ?? state.changedAt
            let after = Moments.duration(settledAt.timeIntervalSince(timeline.savedAt ?? state.createdAt))
            if case .approvalDecided(let decision)? = lastEvent?.body {
                text = "synced: approved\(decision.reference.map { " (\($0))" } ?? "") after it was held for approval "
                    + "on attempt \(number), \(after) after it was saved"
            } else {
                text = "synced on attempt \(number), \(after) after it was saved"
                if state.latestOutcome == .replayed {
                    text += " (the server had already applied it: replayed, not applied twice)"
                }
            }
        case .blocked:
            text = "blocked: \(outcome(state.lastOutcome)) on attempt \(number), waiting for a person"
            if let code = state.lastErrorCode { text += " (\(code))" }
        case .failed:
            if state.lastErrorCode == ErrorCode.approvalRejected {
                text = "failed: the approver rejected it, waiting for a correction (\(ErrorCode.approvalRejected))"
            } else {
                text = "failed: \(outcome(state.lastOutcome)) on attempt \(number), the payload needs correcting"
                if let code = state.lastErrorCode { text += " (\(code))" }
            }
        case .queued:
            text = number == 0 ? "queued: not attempted yet" : "queued: \(number) attempt\(number == 1 ? "" : "s")"
            if let next = state.nextAttemptAt {
                text += ", next at \(Moments.absolute(next))"
            } else {
                text += ", due now"
            }
            if state.latestOutcome == .abandoned {
                text += "; attempt \(number) was cut off when the app ended, so it is sent again under the same key"
            } else if let last = state.lastOutcome {
                text += "; the last one met \(EventText.outcome(last))"
                if case .response = last, let code = state.lastErrorCode { text += " (\(code))" }
            }
            if engine.isPaused {
                text += "; the worker is paused (\(engine.pauseReason ?? "unauthorized")): nothing is sent until the session is refreshed"
            }
        case .syncing:
            let since = attempt.map { " since \(Moments.absolute($0.startedAt))" } ?? ""
            text = "syncing: attempt \(number) in flight\(since); if the app ended meanwhile, it is sent again under the same key"
        case .pendingApproval:
            let request = state.approvalRequestID.map { " (request \($0))" } ?? ""
            text = "pending approval: the server holds it\(request) since attempt \(number), waiting for a decision"
        case .withdrawn:
            text = "withdrawn: the server rejected it as invalid (\(state.lastErrorCode ?? ErrorCode.validationFailed))"
        case .discarded:
            if case .discarded(let discarded)? = lastEvent?.body, discarded.reason == .signOut {
                text = "discarded on sign-out"
            } else if case .discarded(let discarded)? = lastEvent?.body, discarded.reason == .serverWon {
                text = discarded.requestedBy == .rule
                    ? "discarded: the record changed elsewhere and its type's rule keeps the server's version"
                    : "discarded: the record changed elsewhere and the member kept the server's version"
            } else {
                text = "discarded by the member"
            }
        case .conflicted:
            text = "conflicted: the record changed elsewhere since the edit began (attempt \(number)"
            if let revision = state.serverRevision { text += ", the server now has revision \(revision)" }
            text += "); waiting for the member to keep theirs or the server's"
        case .superseded:
            let by = state.supersededBy.map { EventText.shortID($0) } ?? "another operation"
            switch state.supersededReason {
            case .coalesced?: text = "superseded: coalesced into \(by), a newer write of the same record, before it was ever sent"
            case .resolvedMine?: text = "superseded: the member resolved the conflict with their own version, sent as \(by)"
            default: text = "superseded: the member corrected it; the correction is \(by)"
            }
        }
        return text
    }

    /// What an attempt met, in the fewest words: `403`, `no response (offline)`, `not sent`.
    private static func outcome(_ outcome: AttemptOutcome?) -> String {
        outcome.map(EventText.outcome) ?? "no outcome"
    }
}
