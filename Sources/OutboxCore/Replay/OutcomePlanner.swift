package import Foundation
import OutboxCrypto

/// An attempt's outcome decided once: a pure function from what the attempt got to the events
/// that record it, in order.
///
/// The disposition table classifies the answer; then, in this order:
///
/// | classification | and | the plan adds |
/// |---|---|---|
/// | transient failure | the retry policy's limits reached (attempts, or age since the first attempt of this retry epoch) | the disposition rewritten to gave up (`gave_up`, failed): a person decides |
/// | transient failure | within the limits | the next attempt's moment (backoff, or a later `Retry-After`) |
/// | rejected | an inline save (`withdrawOnRejection`) | `withdrawn`, with the server's code and message |
/// | conflicted | the type's rule: ask the member | nothing: the member decides |
/// | conflicted | the type's rule: the server wins | `discarded`, by the rule, the server won |
/// | conflicted | the type's rule: rebase, fewer than its times so far, and a usable server revision | `rebased` onto the server's revision |
/// | unauthorized | the attempt pauses the worker (`pausesWorker`) | `sessionPaused`, naming the row |
/// | not sent (a damaged payload, an endpoint that cannot be sent) | - | nothing: recorded as classified |
///
/// For a write of records (`changes`), what the answer confirmed goes to the records' server base
/// in the same commit, its trail (revision and value hash) in `attemptFinished`:
///
/// | answer | the record it describes (its `type` and `id`, else the write's first) |
/// |---|---|
/// | applied, with a revision and a `record` | that record at that revision |
/// | applied, with a revision, no `record` | the value the write put (or its delete) at that revision |
/// | applied, without a revision, or with a `record` too large to keep | nothing: each record keeps the member's value, confirmed, until the server's arrives |
/// | 412 with `server_revision` and `current` | the server's record (`revisionFrom`'s, else the first) at its revision, beside the member's change |
///
/// `attemptFinished` comes first; what the plan adds lands with it, in the same commit. The
/// fold then applies each event as the status table says: nothing here is decided again.
package enum OutcomePlanner {
    /// What an attempt got.
    package enum Result: Sendable, Equatable {
        /// The transport's answer, or none.
        case transport(TransportResult)
        /// Nothing was sent, for a reason decided before sending.
        case notSent(Classification)
    }

    /// What the planner knows of the row and the engine's rules.
    package struct Facts: Sendable, Equatable {
        package var operation: OperationID
        package var attempt: AttemptNumber
        /// Attempts before this retry epoch (a person's retry starts one).
        package var retryEpochAttempts: Int
        /// Seconds since the first attempt of this retry epoch, measured by the clock rule
        /// (`Docs/events.md`); 0 for the epoch's first attempt.
        package var retryEpochAgeSeconds: TimeInterval
        /// Rebases the row has had.
        package var rebaseCount: Int
        package var replay: OperationTypePolicy.Replay
        package var conflictRule: OperationTypePolicy.ConflictRule
        package var retryPolicy: OperationTypePolicy.RetryPolicy
        /// An inline save withdraws a row the server rejects as invalid.
        package var withdrawOnRejection = false
        /// Whether a 401 pauses the worker with this outcome (a batch pauses once).
        package var pausesWorker = true
        package var now: Date
        /// The records the write changes, values included, and the one its `If-Match` came from.
        package var changes: [RecordWrite] = []
        package var revisionFrom: RecordKey?
        /// The write's connected age now: recorded with an acknowledgement.
        package var connectedAgeSeconds: Double?

        package init(operation: OperationID, attempt: AttemptNumber, retryEpochAttempts: Int, retryEpochAgeSeconds: TimeInterval,
                     rebaseCount: Int, replay: OperationTypePolicy.Replay, conflictRule: OperationTypePolicy.ConflictRule, retryPolicy: OperationTypePolicy.RetryPolicy,
                     withdrawOnRejection: Bool = false, pausesWorker: Bool = true, now: Date) {
            self.operation = operation
            self.attempt = attempt
            self.retryEpochAttempts = retryEpochAttempts
            self.retryEpochAgeSeconds = retryEpochAgeSeconds
            self.rebaseCount = rebaseCount
            self.replay = replay
            self.conflictRule = conflictRule
            self.retryPolicy = retryPolicy
            self.withdrawOnRejection = withdrawOnRejection
            self.pausesWorker = pausesWorker
            self.now = now
        }
    }

    /// The decided outcome.
    package struct Plan: Sendable, Equatable {
        /// The classification recorded, after the retry policy's limits.
        package var classification: Classification
        /// `attemptFinished` first, then what lands with it, each an event of the row but the
        /// pause (an engine event).
        package var events: [JournalEventBody]
        /// Whether the plan pauses the worker.
        package var pauses: Bool
        /// What the answer brings to the records' server base, with `attemptFinished`.
        package var storeWrites: [RecordStoreWrite] = []

        /// `attemptFinished`, always the first event.
        package var finished: AttemptFinished {
            guard case .attemptFinished(let finished) = events[0] else { preconditionFailure("a plan starts with attemptFinished") }
            return finished
        }
    }

    package static func plan(_ result: Result, _ facts: Facts) -> Plan {
        var classification: Classification
        switch result {
        case .notSent(let decided):
            return Plan(classification: decided, events: [.attemptFinished(AttemptFinished(attempt: facts.attempt, decided, nextAttemptAt: nil))],
                        pauses: false)
        case .transport(let transported):
            classification = DispositionTable.classify(transported, policy: facts.replay, now: facts.now)
        }
        let attemptsThisEpoch = facts.attempt.rawValue - facts.retryEpochAttempts
        let interrupted = classification.outcome == .noResponse(.cancelled)
        if classification.disposition == .transientFailure, !interrupted,
            facts.retryPolicy.givesUp(attempts: attemptsThisEpoch, ageSeconds: facts.retryEpochAgeSeconds)
        {
            // Past the policy's limits: a person decides (retry starts the limits over).
            // Recorded for support: how many, the last failure's class, and what the server said.
            let last = OutboxWords.english.failure(code: classification.errorCode, serverMessage: nil) ?? "no answer"
            let said = classification.errorMessage.map { "; the server said: \($0)" } ?? ""
            classification.disposition = .gaveUp
            classification.errorMessage = "This change could not be sent after \(attemptsThisEpoch) attempts"
                + " (the last: \(last)\(said)). Try again, or discard it."
            classification.errorCode = ErrorCode.gaveUp
            classification.retryAfter = nil
        }
        // An attempt the app's expiry interrupted says nothing of the network or the server: it is
        // due again at once (the next wake sends it), and never brings the row nearer giving up.
        let nextAttemptAt = classification.disposition != .transientFailure ? nil
            : interrupted ? facts.now
            : facts.retryPolicy.nextAttempt(afterAttempt: facts.attempt, of: facts.operation, now: facts.now, retryAfter: classification.retryAfter)
        var finished = AttemptFinished(attempt: facts.attempt, classification, nextAttemptAt: nextAttemptAt)
        if classification.disposition.acknowledges { finished.connectedAgeSeconds = facts.connectedAgeSeconds }
        var storeWrites: [RecordStoreWrite] = []
        if case .transport(.response(let response)) = result, !facts.changes.isEmpty,
            let confirmed = confirmation(of: response, classification, facts)
        {
            finished.confirmations = [confirmed.confirmation]
            storeWrites = [confirmed.write]
        }
        if case .transport(.response(let response)) = result, !facts.changes.isEmpty,
            classification.disposition == .accepted || classification.disposition == .replayed
        {
            finished.visibleAt = RecordAnswer(response).visibleAt
        }
        var events: [JournalEventBody] = [.attemptFinished(finished)]
        if facts.withdrawOnRejection, classification.disposition == .rejected {
            events.append(.withdrawn(Withdrawn(
                errorCode: classification.errorCode ?? ErrorCode.validationFailed,
                errorMessage: classification.errorMessage ?? OutboxWords.english.failure(code: classification.errorCode, serverMessage: nil) ?? ""
            )))
        }
        if classification.disposition == .conflicted, let decision = conflictDecision(classification, facts) {
            events.append(decision)
        }
        let pauses = classification.disposition == .unauthorized && facts.pausesWorker
        if pauses {
            events.append(.sessionPaused(SessionPaused(reason: classification.errorCode ?? ErrorCode.unauthorized, triggeredBy: facts.operation)))
        }
        return Plan(classification: classification, events: events, pauses: pauses, storeWrites: storeWrites)
    }

    /// What an answer confirms of one record the write changed, and the base write it brings.
    private static func confirmation(of response: TransportResponse, _ classification: Classification,
                                     _ facts: Facts) -> (confirmation: RecordConfirmation, write: RecordStoreWrite)? {
        let answer = RecordAnswer(response)
        // A record the answer sent but the engine did not keep (too large) may differ from the
        // member's value: nothing is stored at its revision, and the pull brings the server's.
        guard let revision = answer.revision, !answer.recordWithheld else { return nil }
        let named = answer.type.flatMap { type in answer.id.map { RecordKey(business: facts.changes[0].key.business, type: type, id: $0) } }
        switch classification.disposition {
        case .accepted, .replayed:
            // An answer naming a record the write did not change describes none of its records:
            // each keeps the member's value, confirmed, until the server's arrives.
            guard let change = named.map({ key in facts.changes.first { $0.key == key } }) ?? facts.changes.first else { return nil }
            let value: Data? = answer.deleted ? nil : (answer.record ?? change.value)
            if !answer.deleted, answer.record == nil, change.isDelete {
                // A delete answered with a revision: the record is gone at it.
                return confirmed(change.key, revision, nil, .written, change.schemaVersion)
            }
            return confirmed(change.key, revision, value, answer.record != nil ? .answer : .written, change.schemaVersion)
        case .conflicted:
            guard let current = classification.serverCurrent else { return nil }
            let key = facts.revisionFrom ?? facts.changes[0].key
            let schemaVersion = facts.changes.first { $0.key == key }?.schemaVersion ?? facts.changes[0].schemaVersion
            return confirmed(key, revision, current, .conflict, schemaVersion)
        default:
            return nil
        }
    }

    private static func confirmed(_ key: RecordKey, _ revision: UInt64, _ value: Data?, _ source: RecordConfirmation.Source,
                                  _ schemaVersion: Int) -> (confirmation: RecordConfirmation, write: RecordStoreWrite) {
        (RecordConfirmation(key: key, revision: revision, valueHash: value.map { SHA256Digest(of: $0) }, source: source),
         RecordStoreWrite(table: .base, key: key, revision: revision, schemaVersion: schemaVersion, value: value))
    }

    /// What the type's conflict rule decides: nothing (the member decides), the server's version
    /// (discarded), or the same operation sent again against the server's revision (rebased).
    private static func conflictDecision(_ classification: Classification, _ facts: Facts) -> JournalEventBody? {
        switch facts.conflictRule {
        case .askMember:
            return nil
        case .serverWins:
            return .discarded(Discarded(requestedBy: .rule, reason: .serverWon))
        case .rebase(let maxTimes):
            guard facts.rebaseCount < maxTimes, let revision = classification.serverRevision,
                OutboxRequest.revisionProblem(revision) == nil
            else { return nil }
            return .rebased(Rebased(baseRevision: revision))
        }
    }
}
