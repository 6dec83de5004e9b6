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
    /// Rows with an attempt in flight or an outcome not yet committed: never abandoned.
    let inFlight = InFlightRows()
    let sessions: SessionRecorder
    let outcomes: OutcomeRecorder
    /// Whether a route to the server is seen: each result shown to it, changes recorded.
    let routes: RouteWatch
    /// How long the server keeps claims: the configuration's, or shorter as a server announces.
    let claimRetention: Mutex<ClaimRetention>
    /// Set once the worker is stopped (sign-out): no row is started after it.
    private let stopped = Atomic<Bool>(false)

    init(store: JournalStore, room: JournalRoom, transport: any OutboxTransport, configuration: OutboxConfiguration, log: EngineLog,
         routes: RouteWatch) {
        self.routes = routes
        self.store = store
        self.room = room
        self.transport = transport
        self.configuration = configuration
        self.log = log
        claimRetention = Mutex(ClaimRetention(configuredSeconds: configuration.claimRetentionSeconds,
                                              marginSeconds: configuration.claimRetentionMarginSeconds))
        sessions = SessionRecorder(store: store, room: room, configuration: configuration, log: log)
        outcomes = OutcomeRecorder(store: store, room: room, inFlight: inFlight, log: log)
    }

    private var clock: any OutboxClock { configuration.clock }

    /// Starts no more rows, in this pass or any other; attempts in flight finish and are recorded.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

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
        /// The records the write changes, values included: what its answer may confirm.
        var changes: [RecordWrite] = []
        /// The `If-Match` revision taken from a record's server base (``OutboxRequest/revisionFrom``).
        var sentRevision: String?

        /// The request as this attempt sends it.
        var transportRequest: TransportRequest {
            TransportRequest(stored: state, payload: payload, revision: state.revisionFrom == nil ? nil : .some(sentRevision))
        }
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
        let snapshot: (state: OperationState, payload: Result<Data, any Error>, changes: [RecordWrite], sentRevision: String?, engine: EngineState)?
        do {
            snapshot = try store.read { txn in
                guard let state = try schema.state(id, in: txn) else { return nil }
                let enqueued = Result { try schema.enqueued(of: state, in: txn) }
                // An edit behind another of the same record is sent against the revision the
                // earlier one's success brought to the base; a base another device's change moved
                // beneath it after it was made (a pull) leaves it sent against what the member saw.
                // A rebased write goes against the revision it was rebased onto: a pull that
                // moves the base past it afterwards is a new change the member has not seen.
                var revision = state.baseRevision
                if state.rebaseCount == 0 {
                    let base = try state.revisionFrom.flatMap { try schema.serverBase($0, in: txn) }
                    revision = base.flatMap { $0.isDeleted ? nil : String($0.revision) }
                    // (An answer's event compacted away was an operation's: only a pull's is kept.)
                    // (A failed read of `enqueued` is the payload's failure, handled below.)
                    if let base, base.seq > state.firstSeq, case .success(let written) = enqueued, let basis = written.basisRevision,
                       let brought = try schema.event(base.seq, in: txn), brought.operationID == nil {
                        revision = String(basis)
                    }
                }
                // Unread: the payload's failure says why, and the row is not sent.
                var changes: [RecordWrite] = []
                if case .success(let written) = enqueued { changes = written.changes }
                return (state, enqueued.map(\.request.payload), changes, revision, try schema.engineStateAsJudged(in: txn))
            }
        } catch {
            log.problem(.journalRead, "could not read the row to send; skipping it this pass", error: error, operation: id)
            return .done(.skipped)
        }
        guard let snapshot, snapshot.state.status == .queued else { return .done(.skipped) }
        let state = snapshot.state
        // Nothing is ever sent under another identity, or while a 401 has paused the worker:
        // the eligibility rule's engine part, with the session asked now.
        let observation = SessionObservation(signedIn: account, journalAccount: state.account)
        // Who is signed in is recorded once per change, so an audit can explain a delay.
        let sessionChange = recordsSessionChange ? sessions.change(to: observation, recorded: snapshot.engine.session) : []
        let engine = Eligibility.Engine(snapshot.engine, session: observation)
        if Eligibility.engineHold(engine) != nil {
            if observation != .signedIn {
                log.log(.info, "pass halted: no session for the journal's account", [
                    EngineLog.Key.operation: .string(id.description),
                    EngineLog.Key.reason: .string(observation == .signedOut ? "signed_out" : "other_account"),
                ])
                await sessions.record(sessionChange)
            }
            return .done(.halted)
        }

        let attempt = AttemptNumber(rawValue: state.attemptCount + 1)
        let started = sessionChange + [JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(
            attempt: attempt, trigger: trigger, sentRevision: state.revisionFrom == nil ? nil : snapshot.sentRevision
        )))]
        guard let payload = intactPayload(snapshot.payload, of: state) else {
            let corrupt = Classification(
                outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.payloadCorrupt,
                errorMessage: "The saved change was damaged on this device and was not sent. Someone needs to look at it."
            )
            let plan = OutcomePlanner.plan(.notSent(corrupt), planningFacts(state, attempt: attempt, startedAt: moment()))
            return .done(await record(plan, state: state, response: nil, before: started))
        }
        return .ready(Prepared(state: state, payload: payload, attempt: attempt, started: started,
                               changes: snapshot.changes, sentRevision: snapshot.sentRevision))
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
              carrying: [OutcomeRecorder.Draft] = [], carry: CarriedOutcomes? = nil) async -> Report {
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
        return await inFlight.holding([id]) {
            let startedAt = moment()
            do {
                try await start(prepared, carrying: carrying)
            } catch {
                notStarted(prepared, error: error)
                return .skipped
            }
            let result: TransportResult
            do {
                result = .response(try await transport.send(prepared.transportRequest))
            } catch let refusal as URLSessionTransport.UnsendableEndpoint {
                // Nothing was sent, and retrying cannot change the stored endpoint: a person decides.
                let plan = OutcomePlanner.plan(.notSent(refusal.classification), planningFacts(prepared.state, attempt: prepared.attempt, startedAt: startedAt))
                return await record(plan, state: prepared.state, response: nil)
            } catch {
                result = .noResponse(TransportRequest.Failure(error))
            }
            return await finish(prepared, result: result, startedAt: startedAt, withdrawOnRejection: withdrawOnRejection, carry: carry)
        }
    }

    /// Records `attemptStarted`, durable before the request leaves, with the carried outcomes in
    /// the same commit. When that commit fails, each part is tried alone, through the journal's
    /// room (which compacts a full file once): an outcome never depends on the next start.
    /// - Throws: when the start could not be recorded: the row is not sent.
    private func start(_ prepared: Prepared, carrying: [OutcomeRecorder.Draft]) async throws {
        guard !carrying.isEmpty else {
            // A full file refuses the start: the row is not sent, and no compaction runs mid-pass.
            _ = try await room.append(prepared.started)
            return
        }
        let results = await room.appendEach(carrying.map(\.unit) + [prepared.started])
        for (draft, result) in zip(carrying, results) {
            if case .success(let events) = result {
                outcomes.committed(draft, events: events)
                inFlight.letGo([draft.id])
            } else {
                await outcomes.commit([draft])
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

    /// Plans what one attempt got (``OutcomePlanner``: classification, the retry policy's limits,
    /// withdrawal on save, the type's conflict rule, the pause) and records it.
    /// - Parameter carry: where the outcome waits for the next start; `nil` commits it at once.
    func finish(_ prepared: Prepared, result: TransportResult, startedAt: DeviceMoment, withdrawOnRejection: Bool = false,
                pausesWorker: Bool = true, carry: CarriedOutcomes? = nil) async -> Report {
        var facts = planningFacts(prepared.state, attempt: prepared.attempt, startedAt: startedAt)
        facts.withdrawOnRejection = withdrawOnRejection
        facts.pausesWorker = pausesWorker
        facts.changes = prepared.changes
        facts.revisionFrom = prepared.state.revisionFrom
        // The route changes with the outcome that showed it, in the same commit.
        let now = clock.now()
        let route = RouteWatch.responded(result).flatMap { routes.observe(responded: $0, at: now) }
        facts.connectedAgeSeconds = prepared.state.connectedClockAtEnqueue.map { max(0, routes.connectedClock(at: now) - $0) }
        let plan = OutcomePlanner.plan(.transport(result), facts)
        let response: TransportResponse? = if case .response(let value) = result { value } else { nil }
        learnClaimRetention(from: response)
        return await record(plan, state: prepared.state, response: response, before: route.map { [$0] } ?? [], carry: carry)
    }

    /// Takes in how long the server keeps claims, when its answer (a write's, a batch's
    /// envelope) says so.
    func learnClaimRetention(from response: TransportResponse?) {
        guard let announced = response?.header(OutboxHeader.claimRetention) else { return }
        claimRetention.withLock { $0.observe(announced: announced) }
    }

    /// What the planner reads of a row and of the engine's rules for its type.
    /// This moment as the device reads it: the wall clock and the uptime.
    func moment() -> DeviceMoment {
        DeviceMoment(wall: clock.now(), uptime: clock.uptime())
    }

    /// What the planner reads of a row and of the engine's rules for its type. The retry
    /// epoch's age is measured by the device's uptime (``DeviceMoment``), from the epoch's first
    /// attempt, or this one's start when it is the first.
    private func planningFacts(_ state: OperationState, attempt: AttemptNumber, startedAt: DeviceMoment) -> OutcomePlanner.Facts {
        let now = moment()
        let policy = configuration.sendingPolicy(for: state.operationType)
        let age = DeviceMoment.elapsed(from: state.retryEpochStart ?? startedAt, to: now,
                                       bootGapCapSeconds: configuration.retryPolicy.maxDelaySeconds)
        return OutcomePlanner.Facts(
            operation: state.id, attempt: attempt, retryEpochAttempts: state.retryEpochAttempts,
            retryEpochAgeSeconds: age,
            rebaseCount: state.rebaseCount, replay: policy.replay, conflictRule: policy.conflictRule,
            retryPolicy: configuration.retryPolicy, now: now.wall
        )
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

    /// Records a planned outcome, after `before`; with a `carry`, one that does not pause the
    /// worker waits there for the next start's commit instead.
    private func record(_ plan: OutcomePlanner.Plan, state: OperationState, response: TransportResponse?,
                        before: [JournalStore.Draft] = [], carry: CarriedOutcomes? = nil) async -> Report {
        let draft = outcomes.draft(plan, of: state, statusCode: response?.statusCode, before: before)
        let recorded = await outcomes.record(draft, carry: carry)
        return recorded ? .finished(plan.classification, response, operationType: state.operationType) : .unrecorded
    }

    /// Commits outcomes no start took, each alone.
    func commit(_ drafts: [OutcomeRecorder.Draft]) async {
        await outcomes.commit(drafts)
    }
}
