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
    /// Rows whose attempt this process has in flight. A syncing row not in it lost its outcome
    /// (the commit recording it failed) and is abandoned by the next pass.
    private let inFlight = Mutex<Set<OperationID>>([])

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
    var rowsInFlight: Set<OperationID> { inFlight.withLock { $0 } }

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

    /// Sends one queued row and records what happened.
    /// - Parameter withdrawOnRejection: an inline save withdraws a row the server rejects as
    ///   invalid, in the same commit as the outcome.
    func send(_ id: OperationID, trigger: WakeReason, withdrawOnRejection: Bool = false) async -> Report {
        guard !isStopped else { return .halted }
        let account = await configuration.session.currentAccount()
        let schema = store.schema
        let snapshot: (state: OperationState, payload: Result<Data, any Error>, paused: Bool)?
        do {
            snapshot = try store.read { txn in
                guard let state = try schema.state(id, in: txn) else { return nil }
                let payload = Result { try schema.request(of: state, in: txn).payload }
                return (state, payload, try schema.engineState(in: txn).isPaused)
            }
        } catch {
            log.problem(.journalRead, "could not read the row to send; skipping it this pass", error: error, operation: id)
            return .skipped
        }
        guard let snapshot, snapshot.state.status == .queued else { return .skipped }
        let state = snapshot.state
        // Nothing is ever sent under another identity, or while a 401 has paused the worker.
        guard account == state.account else {
            log.log(.info, "pass halted: no session for the journal's account", [
                EngineLog.Key.operation: .string(id.description),
                EngineLog.Key.reason: .string(account == nil ? "signed_out" : "other_account"),
            ])
            return .halted
        }
        guard !snapshot.paused else { return .halted }

        let attempt = AttemptNumber(rawValue: state.attemptCount + 1)
        let started = JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: attempt, trigger: trigger)))
        guard let payload = intactPayload(snapshot.payload, of: state) else {
            let corrupt = Classification(
                outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.payloadCorrupt,
                errorMessage: "The saved change was damaged on this device and was not sent. Someone needs to look at it."
            )
            return await record(corrupt, attempt: attempt, state: state, response: nil, before: [started])
        }
        inFlight.withLock { _ = $0.insert(id) }
        defer { inFlight.withLock { _ = $0.remove(id) } }
        do {
            // A file found full gets one compaction of settled rows first.
            _ = try await room.append([started])
        } catch {
            log.problem(.attemptNotRecorded, "could not record attemptStarted; the row was not sent and stays queued",
                        error: error, operation: id, [EngineLog.Key.attempt: "\(attempt.rawValue)"])
            return .skipped
        }

        let result: TransportResult
        do {
            result = .response(try await transport.send(TransportRequest(stored: state, payload: payload)))
        } catch let refusal as UnsendableEndpoint {
            // Nothing was sent, and retrying cannot change the stored endpoint: a person decides.
            return await record(refusal.classification, attempt: attempt, state: state, response: nil)
        } catch {
            result = .noResponse(TransportFailure(error))
        }
        let classification = DispositionTable.classify(result, policy: configuration.policy(for: state.operationType), now: clock.now())
        var withdrawal: [JournalStore.Draft] = []
        if withdrawOnRejection, classification.disposition == .rejected {
            withdrawal.append(JournalStore.Draft(operationID: id, body: .withdrawn(Withdrawn(
                errorCode: classification.errorCode ?? ErrorCode.validationFailed,
                errorMessage: classification.errorMessage ?? "The server refused this change."
            ))))
        }
        let response: TransportResponse? = if case .response(let value) = result { value } else { nil }
        return await record(classification, attempt: attempt, state: state, response: response, after: withdrawal)
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

    /// Appends `attemptFinished` between `before` and `after`, with the engine's pause when the
    /// answer was 401, as one unit: they land together or not at all.
    private func record(
        _ classification: Classification,
        attempt: AttemptNumber,
        state: OperationState,
        response: TransportResponse?,
        before: [JournalStore.Draft] = [],
        after: [JournalStore.Draft] = []
    ) async -> Report {
        let now = clock.now()
        let nextAttemptAt = classification.disposition == .transientFailure
            ? configuration.retryPolicy.nextAttempt(afterAttempt: attempt, of: state.id, now: now, retryAfter: classification.retryAfter)
            : nil
        let finished = JournalStore.Draft(
            operationID: state.id,
            body: .attemptFinished(AttemptFinished(attempt: attempt, classification, nextAttemptAt: nextAttemptAt))
        )
        var unit = before + [finished] + after
        let pauses = classification.disposition == .unauthorized
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
        let events: [JournalEvent]
        do {
            events = try await room.writer.append(unit)
        } catch {
            log.problem(.outcomeNotRecorded, "the attempt's outcome could not be recorded; the row stays syncing until the attempt is abandoned and replayed under the same key",
                        error: error, operation: state.id, metadata)
            return .unrecorded
        }
        metadata[EngineLog.Key.seq] = .string(events.first { $0.kind == .attemptFinished }.map { "\($0.seq)" } ?? "")
        log.log(.debug, "attempt finished", metadata)
        if pauses {
            log.log(.notice, "worker paused: the server answered 401; resumeSession() resumes it", [
                EngineLog.Key.operation: .string(state.id.description),
                EngineLog.Key.errorCode: .string(classification.errorCode ?? ErrorCode.unauthorized),
                EngineLog.Key.seq: .string(events.last.map { "\($0.seq)" } ?? ""),
            ])
        }
        if classification.outcome == .notSent, classification.errorCode == ErrorCode.endpointUnsendable {
            log.log(.warning, "row blocked without being sent: its stored endpoint cannot be sent as saved", metadata)
        }
        return .finished(classification, response, operationType: state.operationType)
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
