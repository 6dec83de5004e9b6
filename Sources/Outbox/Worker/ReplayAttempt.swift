import Foundation
import OutboxCore
import OutboxCrypto
import Synchronization

/// One attempt at one queued row, for the worker's passes and for an inline save.
///
/// The protocol, in order: ask the session (nothing is sent under another identity or while a 401
/// has paused the worker); check the stored payload against its hash; record `attemptStarted`,
/// durable before the request leaves; send the stored bytes under the operation's key; classify
/// the answer; record `attemptFinished` with the disposition (and, on a 401, the worker's pause)
/// in one commit.
final class ReplayAttempt: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let transport: any OutboxTransport
    let configuration: OutboxConfiguration
    let log: EngineLog
    /// Set once the worker is stopped (sign-out): no row is started after it.
    private let stopped = Atomic<Bool>(false)
    /// Rows whose attempt this process has in flight, or whose outcome waits to be committed with
    /// the next start (counted: a row may be both for a moment). A syncing row not in it lost its
    /// outcome (the commit recording it failed) and is abandoned by the next pass.
    private let inFlight = Mutex<[OperationID: Int]>([:])

    init(store: JournalStore, room: JournalRoom, transport: any OutboxTransport, configuration: OutboxConfiguration, log: EngineLog) {
        self.store = store
        self.room = room
        self.transport = transport
        self.configuration = configuration
        self.log = log
    }

    private var clock: any OutboxClock { configuration.clock }

    /// Starts no more rows, in this pass or any other; attempts in flight finish and are recorded.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// The rows whose attempt is in flight in this process now.
    var rowsInFlight: Set<OperationID> { inFlight.withLock { Set($0.keys) } }

    /// Marks `ids` in flight while `body` runs: a pass never abandons an attempt it holds.
    func holding<R>(_ ids: [OperationID], _ body: () async -> R) async -> R {
        hold(ids)
        defer { letGo(ids) }
        return await body()
    }

    private func hold(_ ids: [OperationID]) {
        inFlight.withLock { held in for id in ids { held[id, default: 0] += 1 } }
    }

    private func letGo(_ ids: [OperationID]) {
        inFlight.withLock { held in
            for id in ids {
                let count = (held[id] ?? 1) - 1
                held[id] = count > 0 ? count : nil
            }
        }
    }

    /// What became of one attempt.
    enum Report {
        /// The row was not sent: another attempt or a decision got there first, or the journal
        /// could not be read or written.
        case skipped
        /// The row was not sent and the pass must stop: signed out, another account, paused.
        case halted
        /// The attempt ran and was recorded.
        case finished(Classification, TransportResponse?, operationType: String)
        /// The attempt ran but its outcome could not be recorded (the journal closed or is full):
        /// the row stays syncing until the next pass or open abandons it.
        case unrecorded

        var haltsPass: Bool {
            switch self {
            case .halted: true
            case .finished(let classification, _, _): classification.disposition == .unauthorized
            case .skipped, .unrecorded: false
            }
        }
    }

    /// A row ready to go: read, its session checked, its payload intact, its `attemptStarted`
    /// drafted (not yet recorded).
    struct Prepared: Sendable {
        var state: OperationState
        var payload: Data
        var attempt: AttemptNumber
        /// `attemptStarted`, after the engine's `sessionChanged` when who is signed in changed.
        var started: [JournalStore.Draft]
    }

    /// What reading a row before an attempt found.
    enum Preparation: Sendable {
        case ready(Prepared)
        /// Nothing to send: the report says why (it may have recorded a damaged payload's block).
        case done(Report)
    }

    /// Reads one queued row and checks whether it may be sent now, as `account` is signed in.
    /// - Parameter recordsSessionChange: whether a change of who is signed in is recorded with
    ///   this row's start (a batch records it once, with its first row).
    func prepare(_ id: OperationID, trigger: WakeReason, account: String?, recordsSessionChange: Bool = true) async -> Preparation {
        guard !isStopped else { return .done(.halted) }
        let schema = store.schema
        let snapshot: (state: OperationState, payload: Result<Data, any Error>, engine: EngineState)?
        do {
            snapshot = try store.read { txn in
                guard let state = try schema.state(id, in: txn) else { return nil }
                let payload = Result { try schema.request(of: state, in: txn).payload }
                return (state, payload, try schema.engineState(in: txn))
            }
        } catch {
            log.problem(.journalRead, "could not read the row to send; skipping it this pass", error: error, operation: id)
            return .done(.skipped)
        }
        guard let snapshot, snapshot.state.status == .queued else { return .done(.skipped) }
        let state = snapshot.state
        // Nothing is ever sent under another identity, or while a 401 has paused the worker.
        let observation = SessionObservation(signedIn: account, journalAccount: state.account)
        // Who is signed in is recorded once per change, so an audit can explain a delay.
        let sessionChange: [JournalStore.Draft] = observation == snapshot.engine.session || !recordsSessionChange
            ? [] : [JournalStore.Draft(operationID: nil, body: .sessionChanged(SessionChanged(observation: observation)))]
        guard observation == .signedIn else {
            log.log(.info, "pass halted: no session for the journal's account", [
                EngineLog.Key.operation: .string(id.description),
                EngineLog.Key.reason: .string(observation == .signedOut ? "signed_out" : "other_account"),
            ])
            if !sessionChange.isEmpty { await recordSessionChange(sessionChange) }
            return .done(.halted)
        }
        guard !snapshot.engine.isPaused else { return .done(.halted) }

        let attempt = AttemptNumber(rawValue: state.attemptCount + 1)
        let started = sessionChange + [JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: attempt, trigger: trigger)))]
        guard let payload = intactPayload(snapshot.payload, of: state) else {
            let corrupt = Classification(
                outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.payloadCorrupt,
                errorMessage: "The saved change was damaged on this device and was not sent. Someone needs to look at it."
            )
            return .done(await record(corrupt, attempt: attempt, state: state, response: nil, before: started))
        }
        return .ready(Prepared(state: state, payload: payload, attempt: attempt, started: started))
    }

    /// Sends one queued row and records what happened.
    /// - Parameters:
    ///   - withdrawOnRejection: an inline save withdraws a row the server rejects as invalid, in
    ///     the same commit as the outcome.
    ///   - carrying: outcomes of earlier attempts not yet committed: they land in the commit of
    ///     this row's `attemptStarted` (or alone, when this row is not started).
    ///   - carry: where this attempt's own outcome waits for the next start, instead of being
    ///     committed at once; `nil` commits it at once.
    func send(_ id: OperationID, trigger: WakeReason, withdrawOnRejection: Bool = false,
              carrying: [OutcomeDraft] = [], carry: CarriedOutcomes? = nil) async -> Report {
        guard !isStopped else {
            await commit(carrying)
            return .halted
        }
        let account = await configuration.session.currentAccount()
        let prepared: Prepared
        switch await prepare(id, trigger: trigger, account: account) {
        case .ready(let ready): prepared = ready
        case .done(let report):
            await commit(carrying)
            return report
        }
        return await holding([id]) {
            let startedAt = clock.now()
            do {
                try await start(prepared, carrying: carrying)
            } catch {
                notStarted(prepared, error: error)
                return .skipped
            }
            let result: TransportResult
            do {
                result = .response(try await transport.send(TransportRequest(stored: prepared.state, payload: prepared.payload)))
            } catch let refusal as UnsendableEndpoint {
                // Nothing was sent, and retrying cannot change the stored endpoint: a person decides.
                return await record(refusal.classification, attempt: prepared.attempt, state: prepared.state, response: nil)
            } catch {
                result = .noResponse(TransportFailure(error))
            }
            return await finish(prepared, result: result, startedAt: startedAt, withdrawOnRejection: withdrawOnRejection, carry: carry)
        }
    }

    /// Records `attemptStarted`, durable before the request leaves, with the carried outcomes in
    /// the same commit. When that commit fails, each part is tried alone, through the journal's
    /// room (which compacts a full file once): an outcome never depends on the next start.
    /// - Throws: when the start could not be recorded: the row is not sent.
    private func start(_ prepared: Prepared, carrying: [OutcomeDraft]) async throws {
        guard !carrying.isEmpty else {
            // A file found full gets one compaction of settled rows first.
            _ = try await room.append(prepared.started)
            return
        }
        let results = await room.writer.appendEach(carrying.map(\.unit) + [prepared.started])
        for (draft, result) in zip(carrying, results) {
            if case .success(let events) = result {
                committed(draft, events: events)
                letGo([draft.id])
            } else {
                await commit([draft])
            }
        }
        if case .failure = results[carrying.count] {
            _ = try await room.append(prepared.started)
        }
    }

    /// Logs and counts an `attemptStarted` that could not be recorded: the row was not sent.
    func notStarted(_ prepared: Prepared, error: any Error) {
        log.problem(.attemptNotRecorded, "could not record attemptStarted; the row was not sent and stays queued",
                    error: error, operation: prepared.state.id, [EngineLog.Key.attempt: "\(prepared.attempt.rawValue)"])
    }

    /// Classifies what one attempt got, applies the retry policy's limits and the type's
    /// conflict rule, and records the outcome.
    /// - Parameter carry: where the outcome waits for the next start; `nil` commits it at once.
    func finish(_ prepared: Prepared, result: TransportResult, startedAt: Date, withdrawOnRejection: Bool = false,
                pausesWorker: Bool = true, carry: CarriedOutcomes? = nil) async -> Report {
        let state = prepared.state
        let attempt = prepared.attempt
        var classification = DispositionTable.classify(result, policy: configuration.sendingPolicy(for: state.operationType).replay, now: clock.now())
        if classification.disposition == .transientFailure,
            configuration.retryPolicy.givesUp(
                attempts: attempt.rawValue - state.retryEpochAttempts,
                firstAttemptAt: state.retryEpochStartedAt ?? startedAt,
                now: clock.now()
            )
        {
            // Past the policy's limits: a person decides (retry starts the limits over).
            classification.disposition = .gaveUp
            classification.errorMessage = "This change could not be sent after \(attempt.rawValue - state.retryEpochAttempts) attempts"
                + " (the last: \(classification.errorMessage ?? "no answer")). Try again, or discard it."
            classification.errorCode = ErrorCode.gaveUp
            classification.retryAfter = nil
        }
        var withdrawal: [JournalStore.Draft] = []
        if withdrawOnRejection, classification.disposition == .rejected {
            withdrawal.append(JournalStore.Draft(operationID: state.id, body: .withdrawn(Withdrawn(
                errorCode: classification.errorCode ?? ErrorCode.validationFailed,
                errorMessage: classification.errorMessage ?? "The server refused this change."
            ))))
        }
        let response: TransportResponse? = if case .response(let value) = result { value } else { nil }
        return await record(classification, attempt: attempt, state: state, response: response,
                            after: withdrawal + conflictDecision(classification, state: state), pausesWorker: pausesWorker, carry: carry)
    }

    /// What the type's conflict rule decides for a conflicted answer, as events in the same
    /// commit as the outcome: nothing (the member decides), the server's version (discarded), or
    /// the same operation sent again against the server's revision (rebased).
    private func conflictDecision(_ classification: Classification, state: OperationState) -> [JournalStore.Draft] {
        guard classification.disposition == .conflicted else { return [] }
        switch configuration.conflictRule(for: state.operationType) {
        case .askMember:
            return []
        case .serverWins:
            return [JournalStore.Draft(operationID: state.id, body: .discarded(Discarded(requestedBy: .rule, reason: .serverWon)))]
        case .rebase(let maxTimes):
            guard state.rebaseCount < maxTimes, let revision = classification.serverRevision,
                OutboxRequest.revisionProblem(revision) == nil
            else { return [] }
            return [JournalStore.Draft(operationID: state.id, body: .rebased(Rebased(baseRevision: revision)))]
        }
    }

    /// Records who is signed in when it differs from what the journal last recorded. A pass calls
    /// it first, so that a pass with nothing to start (every queued row waiting on a dependency,
    /// say) still records a sign-in or a sign-out, and what a queued row is said to wait for
    /// never names a session that has come back or gone.
    func recordSessionIfChanged() async {
        let account = await configuration.session.currentAccount()
        let observation = SessionObservation(signedIn: account, journalAccount: configuration.account)
        let schema = store.schema
        let recorded: SessionObservation
        do {
            recorded = try store.read { txn in try schema.engineState(in: txn).session }
        } catch {
            log.problem(.journalRead, "could not read who was last recorded signed in; the next attempt records it", error: error)
            return
        }
        guard observation != recorded else { return }
        await recordSessionChange([JournalStore.Draft(operationID: nil, body: .sessionChanged(SessionChanged(observation: observation)))])
    }

    /// Records who the worker found signed in (once per change); a failure is logged and the
    /// next pass records it.
    private func recordSessionChange(_ change: [JournalStore.Draft]) async {
        do {
            _ = try await room.writer.append(change)
        } catch {
            log.problem(.factNotRecorded, "could not record who is signed in; the next pass tries again", error: error)
        }
    }

    /// The stored payload when it reads and matches the hash recorded at enqueue; `nil` (logged
    /// and counted) otherwise: such a row is never sent.
    private func intactPayload(_ read: Result<Data, any Error>, of state: OperationState) -> Data? {
        switch read {
        case .failure(let error):
            log.problem(.payloadDamaged, "the stored payload could not be read; the row is blocked, not sent",
                        error: error, operation: state.id)
            return nil
        case .success(let payload) where SHA256Digest(of: payload) != state.requestHash:
            log.problem(.payloadDamaged, "the stored payload does not match its hash; the row is blocked, not sent",
                        error: nil, operation: state.id)
            return nil
        case .success(let payload):
            return payload
        }
    }

    /// An attempt's outcome drafted: its unit of events and what to log once it is committed.
    struct OutcomeDraft: Sendable {
        var id: OperationID
        /// `attemptFinished` with the events that land with it.
        var unit: [JournalStore.Draft]
        var metadata: OutboxLogger.Metadata
        /// Whether the unit pauses the worker (a 401).
        var pauses: Bool
        var classification: Classification
        var errorCode: String? { classification.errorCode }
    }

    /// Appends `attemptFinished` between `before` and `after`, with the engine's pause when the
    /// answer was 401, as one unit: they land together or not at all. With a `carry`, an outcome
    /// that does not pause the worker waits there for the next start's commit instead.
    private func record(
        _ classification: Classification,
        attempt: AttemptNumber,
        state: OperationState,
        response: TransportResponse?,
        before: [JournalStore.Draft] = [],
        after: [JournalStore.Draft] = [],
        pausesWorker: Bool = true,
        carry: CarriedOutcomes? = nil
    ) async -> Report {
        let now = clock.now()
        let nextAttemptAt = classification.disposition == .transientFailure
            ? configuration.retryPolicy.nextAttempt(afterAttempt: attempt, of: state.id, now: now, retryAfter: classification.retryAfter)
            : nil
        var stored = AttemptFinished(attempt: attempt, classification, nextAttemptAt: nextAttemptAt)
        if let current = classification.serverCurrent, let sealing = store.schema.sealing.sealing {
            // The server's record is the member's data too: sealed like a payload at rest.
            stored.sealedServerCurrent = sealing.sealServerCurrent(current, id: state.id)
        }
        let finished = JournalStore.Draft(operationID: state.id, body: .attemptFinished(stored))
        var unit = before + [finished] + after
        let pauses = classification.disposition == .unauthorized && pausesWorker
        if pauses {
            unit.append(JournalStore.Draft(operationID: nil, body: .sessionPaused(SessionPaused(
                reason: classification.errorCode ?? ErrorCode.unauthorized, triggeredBy: state.id
            ))))
        }
        var metadata: OutboxLogger.Metadata = [
            EngineLog.Key.operation: .string(state.id.description),
            EngineLog.Key.operationType: .string(state.operationType),
            EngineLog.Key.attempt: "\(attempt.rawValue)",
            EngineLog.Key.disposition: .string(classification.disposition.rawValue),
            EngineLog.Key.outcome: .string(Self.describe(classification.outcome)),
        ]
        if let code = classification.errorCode { metadata[EngineLog.Key.errorCode] = .string(code) }
        if let statusCode = response?.statusCode { metadata[EngineLog.Key.statusCode] = "\(statusCode)" }
        if let nextAttemptAt { metadata[EngineLog.Key.nextAttemptAt] = EngineLog.moment(nextAttemptAt) }
        let draft = OutcomeDraft(id: state.id, unit: unit, metadata: metadata, pauses: pauses, classification: classification)
        let report = Report.finished(classification, response, operationType: state.operationType)
        if let carry, !pauses {
            // Held in flight until committed: no pass abandons it meanwhile.
            hold([state.id])
            carry.carry(draft)
            return report
        }
        return await commit(draft) ? report : .unrecorded
    }

    /// Commits outcomes no start took, each alone.
    func commit(_ drafts: [OutcomeDraft]) async {
        for draft in drafts {
            _ = await commit(draft)
            letGo([draft.id])
        }
    }

    /// Commits one outcome; logs it, or the failure to record it.
    /// - Returns: whether it was recorded.
    private func commit(_ draft: OutcomeDraft) async -> Bool {
        do {
            committed(draft, events: try await room.writer.append(draft.unit))
            return true
        } catch {
            log.problem(.outcomeNotRecorded, "the attempt's outcome could not be recorded; the row stays syncing until the attempt is abandoned and replayed under the same key",
                        error: error, operation: draft.id, draft.metadata)
            return false
        }
    }

    /// Logs an outcome its commit recorded.
    private func committed(_ draft: OutcomeDraft, events: [JournalEvent]) {
        var metadata = draft.metadata
        metadata[EngineLog.Key.seq] = .string(events.first { $0.kind == .attemptFinished }.map { "\($0.seq)" } ?? "")
        log.log(.debug, "attempt finished", metadata)
        if draft.pauses {
            log.log(.notice, "worker paused: the server answered 401; resumeSession() resumes it", [
                EngineLog.Key.operation: .string(draft.id.description),
                EngineLog.Key.errorCode: .string(draft.errorCode ?? ErrorCode.unauthorized),
                EngineLog.Key.seq: .string(events.last.map { "\($0.seq)" } ?? ""),
            ])
        }
        if draft.classification.outcome == .notSent, draft.errorCode == ErrorCode.endpointUnsendable {
            log.log(.warning, "row blocked without being sent: its stored endpoint cannot be sent as saved", draft.metadata)
        }
    }

    /// An attempt's outcome in the log's words: `response(201)`, `no_response(offline)`, `not_sent`.
    private static func describe(_ outcome: AttemptOutcome) -> String {
        switch outcome {
        case .response(let statusCode): "response(\(statusCode))"
        case .noResponse(let failure): "no_response(\(failure.rawValue))"
        case .notSent: "not_sent"
        }
    }
}
