import Foundation
package import Outbox
package import OutboxAudit

/// The one line that answers "what happened to this write?", from its facts.
package enum Verdict {
    /// The verdict of a timeline alone, in UTC, with nothing read around it.
    /// - Parameter engine: whether the worker is paused decides what a queued row waits for.
    package static func text(for timeline: OperationTimeline, engine: EngineState) -> String {
        let waiting = engine.isPaused ? Waiting(on: .sessionPaused(since: engine.pausedAt)) : nil
        let facts = OperationFacts(timeline: timeline, engine: engine, waiting: waiting)
        return text(for: facts, moments: MomentFormat(now: timeline.events.last?.recordedAt ?? Date()))
    }

    /// For example `synced on attempt 3, 2 h 14 min after it was saved`, or
    /// `blocked: 403 on attempt 1, waiting for a person (forbidden: "Only the owner may add products")`.
    package static func text(for facts: OperationFacts, moments: MomentFormat) -> String {
        guard let state = facts.state else {
            return "unknown: the operation's records are damaged, see the rows marked DAMAGED"
        }
        var text = statusText(facts, state: state, moments: moments)
        switch state.form {
        case .live: break
        case .compacted(let at): text += "; details compacted on \(moments.day(at))"
        case .compactedLedgerRowOnly(let at): text += "; details compacted on \(moments.day(at)), before labels were kept"
        }
        return text
    }

    private static func statusText(_ facts: OperationFacts, state: OperationState, moments: MomentFormat) -> String {
        let timeline = facts.timeline
        let number = state.attemptCount
        let lastEvent = timeline.events.last
        let compacted = state.compactedAt != nil
        switch state.status {
        case .synced:
            if compacted { return "synced on attempt \(number)" }
            let elapsed = elapsedSinceSaved(timeline)
            if case .approvalDecided(let decision)? = lastEvent?.body {
                return "synced: approved\(decision.reference.map { " (\($0))" } ?? "") after it was held for approval "
                    + "on attempt \(number)" + (elapsed.map { ", " + $0.after("it was saved") } ?? "")
            }
            var text = "synced on attempt \(number)" + (elapsed.map { ", " + $0.after("it was saved") } ?? "")
            if state.latestOutcome == .replayed {
                text += " (the server had already applied it: replayed, not applied twice)"
            }
            return text
        case .blocked:
            return blockedText(state)
        case .failed:
            return failedText(facts, state: state)
        case .queued:
            return queuedText(facts, state: state, moments: moments)
        case .syncing:
            let since = timeline.attempts.last.map { " since \(moments.absolute($0.startedAt))" } ?? ""
            return "syncing: attempt \(number) in flight\(since); if the app ended meanwhile, it is sent again under the same key"
        case .pendingApproval:
            let request = state.approvalRequestID.map { " (request \($0))" } ?? ""
            return "pending approval: the server holds it\(request) since attempt \(number), waiting for a decision"
        case .withdrawn:
            let error = quoted(code: state.lastErrorCode ?? ErrorCode.validationFailed, message: state.lastErrorMessage)
            return "withdrawn: the server rejected it as invalid (\(error))"
        case .discarded:
            return discardedText(timeline, state: state, moments: moments)
        case .conflicted:
            var text = "conflicted: the record changed elsewhere since the edit began (attempt \(number)"
            if let revision = state.serverRevision { text += ", the server now has revision \(revision)" }
            return text + "); waiting for the member to keep theirs or the server's"
        case .superseded:
            let by = state.supersededBy.map { EventText.shortID($0) } ?? "another operation"
            switch state.supersededReason {
            case .coalesced?: return "superseded: coalesced into \(by), a newer write of the same record, before it was ever sent"
            case .resolvedMine?: return "superseded: the member resolved the conflict with their own version, sent as \(by)"
            case .revised?: return "superseded: the member corrected it; the correction is \(by)"
            case nil: return "superseded by \(by)"
            }
        }
    }

    /// From the `enqueued` event to the last one.
    private static func elapsedSinceSaved(_ timeline: OperationTimeline) -> Elapsed? {
        guard let saved = timeline.events.first(where: { $0.kind == .enqueued }), let last = timeline.events.last else { return nil }
        return Elapsed.between(saved, last)
    }

    // MARK: Waiting for a person

    private static func blockedText(_ state: OperationState) -> String {
        let number = state.attemptCount
        let answer = outcome(state.lastOutcome)
        let error = quoted(code: state.lastErrorCode, message: state.lastErrorMessage)
        switch state.lastErrorCode {
        case ErrorCode.idempotencyConflict?:
            return "blocked: \(answer) on attempt \(number): the server already holds a different write under this write's key "
                + "(\(error)), so the record already exists on the server; do not correct and resend: compare the server's "
                + "record with this payload (export) first"
        case ErrorCode.dependencyEnded?:
            let dependency = state.endedDependency.map { EventText.shortID($0) + ", which it depends on," } ?? "a write it depends on"
            return "blocked: \(dependency) ended unapplied, so it cannot be sent as it is (\(error)); a person corrects it "
                + "(revise) or discards it"
        default:
            return "blocked: \(answer) on attempt \(number), waiting for a person" + (error.isEmpty ? "" : " (\(error))")
        }
    }

    private static func failedText(_ facts: OperationFacts, state: OperationState) -> String {
        let number = state.attemptCount
        let answer = outcome(state.lastOutcome)
        let error = quoted(code: state.lastErrorCode, message: state.lastErrorMessage)
        if state.lastErrorCode == ErrorCode.approvalRejected {
            let note = approverNote(facts.timeline).map { " with the note \"\($0)\"" } ?? ""
            return "failed: the approver rejected it\(note), waiting for a correction (\(ErrorCode.approvalRejected))"
        }
        if let code = state.lastErrorCode,
            [ErrorCode.attachmentRefused, ErrorCode.attachmentDamaged, ErrorCode.attachmentMismatch].contains(code)
        {
            return attachmentRefusedText(facts, state: state, code: code)
        }
        if state.lastErrorCode == ErrorCode.gaveUp {
            return "failed: gave up on attempt \(number), past its retry policy's limits (\(error)); retry starts over"
        }
        if case .response(409)? = state.lastOutcome {
            return "failed: 409 on attempt \(number): the server says the record already exists (\(error)); the payload needs "
                + "no correcting: find the server's record, then discard this write"
        }
        return "failed: \(answer) on attempt \(number), the payload needs correcting" + (error.isEmpty ? "" : " (\(error))")
    }

    /// A write held because one of its files was refused: which file, by whom, and what frees it.
    /// The write itself was never sent: no attempt's outcome explains it.
    private static func attachmentRefusedText(_ facts: OperationFacts, state: OperationState, code: String) -> String {
        var refusal: AttachmentRefused?
        for event in facts.timeline.events.reversed() {
            if case .attachmentRefused(let refused) = event.body { refusal = refused; break }
        }
        let id = refusal?.attachment ?? state.attachments.first { $0.refusedCode != nil }?.id
        let name = id.flatMap { id in state.attachments.first { $0.id == id }?.manifest.name } ?? "a file"
        let file = id.map { "its file \(name) (\(String($0.description.prefix(8))))" } ?? "one of its files"
        let answer = quoted(code: code, message: refusal?.message ?? state.lastErrorMessage)
        let what: String
        switch code {
        case ErrorCode.attachmentDamaged:
            what = "\(file) is missing or damaged on the device (\(answer)); a retry cannot upload it: discard the write, and the "
                + "member attaches the file again"
        case ErrorCode.attachmentMismatch:
            what = "the server completed another object than \(file) (\(answer)); a retry uploads it again"
        default:
            let status = refusal?.statusCode.map { "\($0) " } ?? ""
            what = "\(file) was refused: \(status)(\(answer)); the file is kept: a retry uploads it again, a discard drops the write"
        }
        let attempts = state.attemptCount == 0 ? "never sent" : "after \(state.attemptCount) attempt\(state.attemptCount == 1 ? "" : "s")"
        return "failed, \(attempts): \(what)"
    }

    /// The approver's note on a rejection: the decision's reference.
    static func approverNote(_ timeline: OperationTimeline) -> String? {
        for event in timeline.events.reversed() {
            if case .approvalDecided(let decision) = event.body, !decision.approved { return decision.reference }
        }
        return nil
    }

    // MARK: Queued

    private static func queuedText(_ facts: OperationFacts, state: OperationState, moments: MomentFormat) -> String {
        let number = state.attemptCount
        var text = number == 0 ? "queued: not attempted yet" : "queued: \(number) attempt\(number == 1 ? "" : "s")"
        let now = facts.now
        // When it is due, if nothing holds it but the app running.
        var due: Date?
        switch facts.waiting?.on {
        case .scheduled(let next)?:
            text += ", next at \(moments.absolute(next))"
        case nil:
            if let next = state.nextAttemptAt {
                let past = now.map { next <= $0 } ?? false
                text += past ? ", due since \(moments.absolute(next))" : ", next at \(moments.absolute(next))"
                due = past ? next : nil
            } else {
                text += ", due now"
                due = state.changedAt
            }
        case .laneHead?, .dependency?, .recordWrite?, .attachment?:
            // Not due before what it waits for: said below.
            break
        case .sessionPaused?, .noSession?, .otherAccount?, .otherInstallation?:
            text += state.nextAttemptAt.map { ", next at \(moments.absolute($0))" } ?? ", due now"
        }
        if state.latestOutcome == .abandoned {
            text += "; attempt \(number) was cut off when the app ended, so it is sent again under the same key"
        } else if let run = AttemptRun.trailing(facts.timeline.attempts) {
            let all = run.count == state.attemptCount
            text += "; \(all ? "all" : "the last") \(run.count) attempts: \(run.outcomeText), first \(moments.absolute(run.first.startedAt)), "
                + "last \(moments.absolute(run.last.startedAt))"
        } else if let last = state.lastOutcome {
            text += "; the last one met " + answer(last, state: state)
        }
        if let waiting = facts.waiting, let reason = waitingText(waiting, state: state, engine: facts.engine, moments: moments) {
            text += "; " + reason
            if case .attachment(let id, _, _) = waiting.on,
                let quiet = AttachmentText.quietSince(facts.journalLastEvent, now: facts.now, next: state.attachments.first { $0.id == id },
                                                      moments: moments)
            {
                text += "; " + quiet
            }
        } else if let due, let now, let last = facts.journalLastEvent, last.recordedAt <= max(due, state.changedAt),
            now.timeIntervalSince(last.recordedAt) >= ClockChange.tolerance
        {
            // Due, held by nothing, and nothing written since: a running app would have sent it.
            text += "; the app has not run since \(moments.absolute(last.recordedAt)) (\(moments.relative(last.recordedAt))): "
                + "it is sent when the app next runs"
        }
        return text
    }

    /// What holds a queued row and what would release it; `nil` for a schedule (said already).
    static func waitingText(_ waiting: Waiting, state: OperationState, engine: EngineState, moments: MomentFormat) -> String? {
        switch waiting.on {
        case .scheduled:
            return nil
        case .attachment(let id, let landed, let size):
            let name = state.attachments.first { $0.id == id }?.manifest.name ?? "\(id)"
            return "its file \(name) (\(id)) is not uploaded yet: \(AttachmentText.sizes(landed, of: size)) landed; the write is sent "
                + "once the server completes the object"
        case .sessionPaused(let since):
            var text = "the worker is paused" + (since.map { " since \(moments.absolute($0))" } ?? "")
            let reason = engine.pauseReason ?? waiting.other?.lastErrorCode ?? ErrorCode.unauthorized
            if let other = waiting.other, other.id == state.id {
                text += " by this write's 401 (\(reason))"
            } else if let other = waiting.other {
                text += " by a 401 on \(EventText.shortID(other.id)) (\(quoted(code: reason, message: other.lastErrorMessage)))"
            } else {
                text += " (\(reason))"
            }
            return text + ": nothing is sent until the session is refreshed (the member signs in again)"
        case .noSession:
            return "nobody is signed in" + (engine.sessionSince.map { " since \(moments.absolute($0))" } ?? "")
                + ": nothing is sent until the member signs in again"
        case .otherAccount:
            return "another account is signed in" + (engine.sessionSince.map { " since \(moments.absolute($0))" } ?? "")
                + ": nothing is sent under it; it is sent once \(state.account.isEmpty ? "the journal's account" : state.account) "
                + "signs in again"
        case .otherInstallation(let madeOn):
            return "the journal is open on installation \(engine.openedOn ?? "?"), not \(madeOn), where its writes were made "
                + "(a backup restored onto another device): nothing is sent until the app revalidates them (adoptInstallation)"
        case .laneHead(let head, let status):
            let other = waiting.other
            let entity = state.entityID.map { " (\($0))" } ?? ""
            return "it waits behind \(describe(head, other, status: status)), an earlier write to the same record\(entity): "
                + "it is sent once that one \(release(other?.status ?? status))"
        case .recordWrite(let head, let status):
            let other = waiting.other
            return "it waits behind \(describe(head, other, status: status)), an earlier write of a record it changes: "
                + "it is sent once that one \(release(other?.status ?? status))"
        case .dependency(let dependency, let status):
            let other = waiting.other
            let moving = (other?.status ?? status).map { $0 == .queued || $0 == .syncing || $0 == .pendingApproval } ?? false
            return "it depends on \(describe(dependency, other, status: status)), not synced yet: it is sent once that one is synced"
                + (moving ? "" : ", which needs a person first")
        }
    }

    /// `1A2B3C4D "Gauze 10 cm" (failed: 422 validation_failed: "Price must be positive")`.
    private static func describe(_ id: OperationID, _ state: OperationState?, status: OutboxStatus?) -> String {
        var text = EventText.shortID(id)
        if let label = state?.entityLabel, !label.isEmpty { text += " \"\(label)\"" }
        guard let current = state?.status ?? status else { return text }
        var detail = current.rawValue
        if let state, [.failed, .blocked, .conflicted, .queued].contains(current), let last = state.lastOutcome {
            detail += ": \(EventText.outcome(last))"
            let error = quoted(code: state.lastErrorCode, message: state.lastErrorMessage)
            if case .response = last, !error.isEmpty { detail += ", \(error)" }
        }
        return text + " (\(detail))"
    }

    /// What ends the hold of a lane's head in `status`.
    private static func release(_ status: OutboxStatus?) -> String {
        switch status {
        case .queued?: "is sent"
        case .syncing?: "has its answer"
        case .pendingApproval?: "is approved or rejected"
        case .failed?, .blocked?: "is corrected (revise), retried or discarded by a person"
        case .conflicted?: "is resolved: the member keeps theirs or the server's"
        default: "settles"
        }
    }

    // MARK: Dropped

    private static func discardedText(_ timeline: OperationTimeline, state: OperationState, moments: MomentFormat) -> String {
        guard let event = timeline.events.last(where: { $0.kind == .discarded }), case .discarded(let discarded) = event.body else {
            return state.compactedAt != nil ? "discarded (who discarded it, and why, went with its details)" : "discarded"
        }
        var text: String
        switch discarded.reason {
        case .signOut:
            text = "discarded on sign-out on \(moments.absolute(event.recordedAt)): the member signed out and chose to drop what was waiting"
        case .serverWon:
            text = discarded.requestedBy == .rule
                ? "discarded: the record changed elsewhere and its type's rule keeps the server's version"
                : "discarded: the record changed elsewhere and the member kept the server's version"
        case .memberDiscarded:
            text = "discarded by the \(discarded.requestedBy) on \(moments.absolute(event.recordedAt))"
        }
        // What it had met before is history, not why it is discarded.
        if discarded.reason != .serverWon, let last = state.lastOutcome {
            text += "; before that, attempt \(state.attemptCount) had met " + answer(last, state: state)
        }
        return text
    }

    // MARK: Words

    /// What an attempt met, in the fewest words: `403`, `no response (offline)`, `not sent`.
    private static func outcome(_ outcome: AttemptOutcome?) -> String {
        outcome.map(EventText.outcome) ?? "no outcome"
    }

    /// `422 (validation_failed: "Price must be positive")`: what an attempt met, with the server's
    /// words when it answered (without an answer, the message is the engine's own).
    private static func answer(_ outcome: AttemptOutcome, state: OperationState) -> String {
        guard case .response = outcome else { return EventText.outcome(outcome) }
        let error = quoted(code: state.lastErrorCode, message: state.lastErrorMessage)
        return EventText.outcome(outcome) + (error.isEmpty ? "" : " (\(error))")
    }

    /// `validation_failed: "Price must be positive"`: the code, and the message quoted.
    static func quoted(code: String?, message: String?) -> String {
        switch (code, message) {
        case (let code?, let message?) where !message.isEmpty: "\(code): \"\(message)\""
        case (let code?, _): code
        case (nil, let message?) where !message.isEmpty: "\"\(message)\""
        default: ""
        }
    }
}
