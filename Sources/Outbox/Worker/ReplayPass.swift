import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import Synchronization

/// One pass of the worker, and one attempt at one row: the part that reads the journal, asks the
/// session, sends, and records what happened.
final class ReplayPass: Sendable {
    let store: JournalStore
    let writer: JournalWriter
    let transport: any OutboxTransport
    let configuration: OutboxConfiguration
    /// Rows whose due moment was seen beyond the cap from now (the clock moved backwards), and
    /// when: each is due at that moment plus the cap.
    private let beyondCapSince = Mutex<[OperationID: Date]>([:])
    /// Set once the worker is stopped (sign-out): no row is started after it.
    private let stopped = Atomic<Bool>(false)
    /// Rows whose attempt this process has in flight. A syncing row not in it lost its outcome
    /// (the commit recording it failed) and is abandoned by the next pass.
    private let inFlight = Mutex<Set<OperationID>>([])

    init(store: JournalStore, writer: JournalWriter, transport: any OutboxTransport, configuration: OutboxConfiguration) {
        self.store = store
        self.writer = writer
        self.transport = transport
        self.configuration = configuration
    }

    private var clock: any OutboxClock { configuration.clock }

    /// Starts no more rows, in this pass or any other; attempts in flight finish and are recorded.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }
    private var policy: RetryPolicy { configuration.retryPolicy }

    // MARK: A pass

    /// Sends every queued row whose moment has come, in journal order, one at a time per lane
    /// and up to `maxConcurrentLanes` lanes at once. Stops starting rows when the session is gone
    /// or a 401 paused the worker.
    /// - Returns: when the timer should run the next pass: the earliest scheduled retry left;
    ///   `nil` when nothing is scheduled or a 401 paused the worker. A pass the session halted
    ///   (signed out, another account) asks again one cap later, and a pass that sent nothing
    ///   never asks for another at once: the worker never spins.
    func run(trigger: WakeReason) async -> Date? {
        guard (try? store.engineState().isPaused) == false else { return nil }
        await abandonOrphans()
        let slots = configuration.maxConcurrentLanes
        let (sent, halted) = await withTaskGroup(of: (lane: String, report: Report).self) { group in
            var plan = PassPlan()
            plan.add((try? dueCandidates()) ?? [])
            var inFlight = 0
            var sent = 0
            var halted = false
            while !Task.isCancelled {
                if stopped.load(ordering: .acquiring) { halted = true }
                while !halted, inFlight < slots, let candidate = plan.next() {
                    guard (try? laneHead(candidate.lane)) == candidate.id else {
                        plan.dropLane(candidate.lane)
                        continue
                    }
                    inFlight += 1
                    group.addTask { (candidate.lane, await self.attempt(candidate.id, trigger: trigger)) }
                }
                if inFlight == 0 {
                    // Everything planned is done: look once more for rows that became due meanwhile.
                    let seen = plan.seen.count
                    if !halted { plan.add((try? dueCandidates()) ?? []) }
                    if halted || plan.seen.count == seen { break }
                    continue
                }
                guard let done = await group.next() else { break }
                inFlight -= 1
                plan.finished(lane: done.lane)
                if case .finished = done.report { sent += 1 }
                if done.report.haltsPass { halted = true }
            }
            return (sent, halted)
        }
        guard (try? store.engineState().isPaused) == false else { return nil }
        let now = clock.now()
        let poll = now.addingTimeInterval(policy.maxDelaySeconds)
        if halted { return poll }
        guard let next = try? nextDue() else { return nil }
        return sent == 0 && next <= now ? poll : next
    }

    /// Records `attemptAbandoned` for syncing rows no attempt of this process holds: their
    /// outcome could not be recorded. They are due at once, replayed under the same key.
    private func abandonOrphans() async {
        guard let syncing = try? store.interruptedAttempts(), !syncing.isEmpty else { return }
        // Read the rows first, then who holds them: an attempt inserts itself before its
        // `attemptStarted` commits, so every live attempt seen syncing is held here.
        let holding = inFlight.withLock { $0 }
        for draft in syncing where draft.operationID.map({ !holding.contains($0) }) ?? false {
            // A row another attempt settled meanwhile is refused by the fold: nothing to do.
            _ = try? await writer.append([draft])
        }
    }

    /// Queued rows due now, from the schedule index.
    private func dueCandidates() throws -> [PassPlan.Candidate] {
        let now = clock.now()
        let schema = store.schema
        let cap = policy.maxDelaySeconds
        var due: [(OperationID, storedDue: Date?)] = []
        var beyondCap: [OperationID] = []
        try store.read { txn in
            try txn.scan(schema.schedule) { entry in
                let moment = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes)
                guard moment.map({ $0 <= now }) ?? true else { return .stop }
                due.append((try entry.value(), moment))
                return .next
            }
            try txn.scan(schema.schedule, reverse: true) { entry in
                guard let moment = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes), moment > now.addingTimeInterval(cap) else { return .stop }
                beyondCap.append(try entry.value())
                return .next
            }
        }
        let clamped = beyondCapSince.withLock { seen -> [OperationID] in
            for id in beyondCap {
                // First seen now, or seen "in the future" because the clock moved back again since.
                if seen[id].map({ $0 > now }) ?? true { seen[id] = now }
            }
            seen = seen.filter { beyondCap.contains($0.key) }
            return seen.filter { $0.value.addingTimeInterval(cap) <= now }.map(\.key)
        }
        let ids = due.map(\.0) + clamped
        return try store.read { txn in
            try ids.compactMap { id in
                guard let state = try schema.state(id, in: txn), state.status == .queued else { return nil }
                return PassPlan.Candidate(id: id, lane: state.lane, firstSeq: state.firstSeq)
            }
        }
    }

    /// The first row of `lane` not yet terminal: the only one of the lane that may be sent.
    func laneHead(_ lane: String) throws -> OperationID? {
        let schema = store.schema
        return try store.read { txn in try schema.laneHead(lane, in: txn) }
    }

    /// The earliest moment a queued lane head is due, its due moment clamped to the cap.
    ///
    /// Walks the schedule in due order and stops at the first lane head: rows before it wait
    /// behind an earlier row of their lane, which is itself scheduled (or waits for a person).
    func nextDue() throws -> Date? {
        let now = clock.now()
        let schema = store.schema
        let since = beyondCapSince.withLock { $0 }
        var earliest: Date?
        try store.read { txn in
            var heads: [String: OperationID?] = [:]
            try txn.scan(schema.schedule) { entry in
                // A row due now (no stored moment) counts as due at this moment.
                let stored = try JournalCodec.ScheduleKey.dueAt(entry.keyBytes) ?? now
                if let earliest, stored >= earliest { return .stop }
                let id = try entry.value()
                guard let state = try schema.state(id, in: txn) else { return .next }
                let head: OperationID?
                if let known = heads[state.lane] {
                    head = known
                } else {
                    head = try schema.laneHead(state.lane, in: txn)
                    heads[state.lane] = head
                }
                guard head == id, let due = policy.effectiveDue(stored, now: now, firstSeen: since[id]) else { return .next }
                earliest = min(earliest ?? due, due)
                return .next
            }
        }
        return earliest
    }

    // MARK: One attempt

    /// What became of one attempt.
    enum Report {
        /// The row was not sent: another attempt or a decision got there first.
        case skipped
        /// The row was not sent and the pass must stop: signed out, another account, paused.
        case halted
        /// The attempt ran and was recorded.
        case finished(Classification, TransportResponse?, operationType: String)
        /// The attempt ran but its outcome could not be recorded (the journal closed or is full):
        /// the row stays syncing until the next open abandons it.
        case unrecorded

        var haltsPass: Bool {
            switch self {
            case .halted: true
            case .finished(let classification, _, _): classification.disposition == .unauthorized
            case .skipped, .unrecorded: false
            }
        }
    }

    /// Sends one queued row: asks the session, checks the payload against its hash, records
    /// `attemptStarted` (durable before the request leaves), sends the stored bytes under the
    /// operation's key, and records `attemptFinished` with the disposition.
    /// - Parameter withdrawOnRejection: an inline save withdraws a row the server rejects as
    ///   invalid, in the same commit as the outcome.
    func attempt(_ id: OperationID, trigger: WakeReason, withdrawOnRejection: Bool = false) async -> Report {
        guard !stopped.load(ordering: .acquiring) else { return .halted }
        let account = await configuration.session.currentAccount()
        let schema = store.schema
        let snapshot: (state: OperationState, payload: Data?, paused: Bool)?
        do {
            snapshot = try store.read { txn in
                guard let state = try schema.state(id, in: txn) else { return nil }
                let payload = try? schema.request(of: state, in: txn).payload
                return (state, payload, try schema.engineState(in: txn).isPaused)
            }
        } catch {
            return .skipped
        }
        guard let snapshot, snapshot.state.status == .queued else { return .skipped }
        let state = snapshot.state
        // Nothing is ever sent under another identity, or while a 401 has paused the worker.
        guard account == state.account, !snapshot.paused else { return .halted }

        let attempt = AttemptNumber(rawValue: state.attemptCount + 1)
        let started = JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: attempt, trigger: trigger)))
        guard let payload = snapshot.payload, SHA256Digest(of: payload) == state.requestHash else {
            let corrupt = Classification(
                outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.payloadCorrupt,
                errorMessage: "The saved change was damaged on this device and was not sent. Someone needs to look at it."
            )
            return await record(corrupt, attempt: attempt, state: state, response: nil, before: [started])
        }
        inFlight.withLock { _ = $0.insert(id) }
        defer { inFlight.withLock { _ = $0.remove(id) } }
        do {
            _ = try await writer.append([started])
        } catch OutboxError.storageFull {
            // The journal is full: settled rows make room for the ones still waiting.
            _ = try? await Compactor(store: store, writer: writer).compact(before: .distantFuture)
            guard (try? await writer.append([started])) != nil else { return .skipped }
        } catch {
            return .skipped
        }

        let result: TransportResult
        do {
            result = .response(try await transport.send(transportRequest(for: state, payload: payload)))
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
            ? policy.nextAttempt(afterAttempt: attempt, of: state.id, now: now, retryAfter: classification.retryAfter)
            : nil
        let finished = JournalStore.Draft(
            operationID: state.id,
            body: .attemptFinished(AttemptFinished(attempt: attempt, classification, nextAttemptAt: nextAttemptAt))
        )
        var unit = before + [finished] + after
        if classification.disposition == .unauthorized {
            unit.append(JournalStore.Draft(operationID: nil, body: .sessionPaused(SessionPaused(
                reason: classification.errorCode ?? ErrorCode.unauthorized, triggeredBy: state.id
            ))))
        }
        do {
            _ = try await writer.append(unit)
        } catch {
            return .unrecorded
        }
        return .finished(classification, response, operationType: state.operationType)
    }

    /// The request exactly as stored, under the operation's key. No credentials: the transport
    /// adds them when it sends.
    func transportRequest(for state: OperationState, payload: Data) -> TransportRequest {
        TransportRequest(
            method: state.method,
            endpoint: state.endpoint,
            headers: [
                OutboxHeader.idempotencyKey: state.id.idempotencyKey,
                OutboxHeader.contentType: "application/json",
                OutboxHeader.payloadVersion: String(state.payloadVersion),
                OutboxHeader.businessID: state.businessID,
            ],
            body: payload
        )
    }
}

/// The headers the engine sets on every request.
public enum OutboxHeader {
    /// The operation id: the same on every attempt, so the server applies the write once.
    public static let idempotencyKey = "Idempotency-Key"
    public static let contentType = "Content-Type"
    /// The payload's schema version, so a server can accept an older shape.
    public static let payloadVersion = "Outbox-Payload-Version"
    /// The business the write belongs to: part of the server's idempotency scope.
    public static let businessID = "X-Business-ID"
}

extension TransportFailure {
    /// The class of a transport's error: `URLError`s by their code, cancellation as such,
    /// anything else as `other`.
    init(_ error: any Error) {
        if error is CancellationError {
            self = .cancelled
            return
        }
        guard let urlError = error as? URLError else {
            self = .other
            return
        }
        switch urlError.code {
        case .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive:
            self = .offline
        case .timedOut:
            self = .timedOut
        case .networkConnectionLost, .badServerResponse:
            // An empty reply (the server closed the connection without answering) comes as
            // badServerResponse on Linux, as networkConnectionLost on Apple platforms.
            self = .connectionLost
        case .cannotConnectToHost:
            self = .cannotConnect
        case .cannotFindHost, .dnsLookupFailed:
            self = .hostNotFound
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            self = .secureConnectionFailed
        case .cancelled:
            self = .cancelled
        default:
            self = .other
        }
    }
}
