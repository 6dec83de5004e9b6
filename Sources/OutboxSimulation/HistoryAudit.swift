import Foundation
import Outbox

/// A broken invariant, in words.
struct InvariantBroken: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a person did to one operation through the engine's API. Each must show in the journal as
/// the event it makes, and no person's event may show without one.
enum PersonAction: Hashable, Sendable {
    /// `retry`: requeued by the member.
    case retry
    /// `discard`: discarded by the member.
    case discard
    /// `resolveConflict(keeping: .theirs)`: discarded by the member, the server's version won.
    case keepTheirs
    /// `resolveConflict(keeping: .mine)`: superseded, resolved keeping the member's version.
    case keepMine
    /// `revise`: superseded by a correction.
    case revise
    /// `recordApprovalDecision`.
    case approvalDecision
}

/// The simulation's own reading of the journal, event by event as they come, checked against
/// what the member did, the rules the seed configured and what crossed the wire.
///
/// It folds each operation itself (status, lane place, dependencies, revision, attempts since a
/// person's retry) and refuses:
/// - a request on the wire that no recorded attempt accounts for, an answer recorded that is not
///   the one that reached the engine, or a request whose `If-Match` is not the row's revision;
/// - a row sent while a row ahead of it in its lane is still pending, or before each write it
///   depends on (or what replaced it) is synced;
/// - a conflicted row sent again, or changed, without a person's decision or its rule's (a rebase
///   against the server's revision, the server's version winning), and a rule's decision missing;
/// - a person's event the member did not ask for, or one asked for and not recorded;
/// - a row given up on within the retry policy's limits, or not given up on past them;
/// - a row blocked for a dependency that did not end, a coalesced row that was sent, and a stable
///   id enqueued twice.
struct HistoryAudit {
    /// One operation as the audit folded it.
    struct Row {
        var id: OperationID
        var operationType: String
        var entityID: String?
        var lane: Lane
        /// Its place in its lane: its `enqueued` seq, or that of the row it replaced.
        var laneSeq: JournalSequence
        var status: OutboxStatus = .queued
        var dependsOn: [OperationID]
        /// The revision the next attempt must carry in `If-Match`.
        var baseRevision: String?
        var rebases = 0
        var attempts = 0
        /// The attempt count at the last retry a person asked for, and when the first attempt
        /// since then started: what the retry policy's limits count from.
        var epochAttempts = 0
        var epochStartedAt: DeviceMoment?
        var supersededBy: OperationID?
        var discardedBy: Requester?
        /// The dependency whose chain ended unapplied, for a row blocked by it.
        var endedDependency: OperationID?
        /// A conflicted answer no one has decided on yet: the seq of its `attemptFinished` and the
        /// server's revision it named.
        var undecidedConflict: (seq: JournalSequence, revision: String?)?
        var latestSeq: JournalSequence
        var compacted = false
    }

    /// The rules the seed configured the engine with.
    let scenario: SimulationScenario
    private(set) var rows: [OperationID: Row] = [:]
    private(set) var lastSeq: JournalSequence = .zero
    /// Rows per lane, in the order they were enqueued.
    private var lanes: [Lane: [OperationID]] = [:]
    /// What the member asked for and the journal has not shown yet.
    private var asked: [OperationID: [PersonAction]] = [:]
    /// Requests on the wire no recorded attempt has accounted for yet, per idempotency key.
    private var wire: [String: [WireExchange]] = [:]
    /// Inline saves: the only rows that may be withdrawn.
    private var inlineSaves: Set<OperationID> = []
    /// The revision of each record as the member learned it from the edits the server applied.
    private(set) var learnedRevisions: [String: Int] = [:]
    /// How rows are called in messages (`#7`).
    var labels: [OperationID: String] = [:]
    /// How often each decision and feature showed in the journal, for the report.
    private(set) var tally: [String: Int] = [:]

    init(scenario: SimulationScenario) {
        self.scenario = scenario
    }

    private func label(_ id: OperationID) -> String { labels[id] ?? id.description }

    /// The member asked the engine for `action` on `id`, and the engine accepted it.
    mutating func personDid(_ action: PersonAction, to id: OperationID) {
        asked[id, default: []].append(action)
    }

    /// `id` was saved inline: a rejection withdraws it.
    mutating func savedInline(_ id: OperationID) {
        inlineSaves.insert(id)
    }

    /// The row that stands for `id` now: itself, or the end of the chain of rows that replaced it.
    func standing(_ id: OperationID) -> Row? {
        var row = rows[id]
        var hops = 0
        while let next = row?.supersededBy, let replacement = rows[next], hops < 1000 {
            row = replacement
            hops += 1
        }
        return row
    }

    // MARK: Reading

    /// Reads the events appended since the last call, with the requests that crossed the wire
    /// meanwhile, checking each; then checks that nothing the engine owes is missing.
    mutating func read(_ events: [JournalEvent], exchanges: [String: [WireExchange]]) throws {
        for (key, more) in exchanges { wire[key, default: []].append(contentsOf: more) }
        for event in events {
            guard event.seq == lastSeq.next else {
                throw InvariantBroken("the journal skipped from seq \(lastSeq) to \(event.seq): events were removed before the audit read them")
            }
            lastSeq = event.seq
            if let id = event.operationID {
                try apply(event, to: id)
            } else if case .compacted(let compacted) = event.body {
                for operation in compacted.operations {
                    guard let row = rows[operation.id], row.status.isTerminal, row.status == operation.status else {
                        throw InvariantBroken("compaction removed \(label(operation.id)) as \(operation.status), which the history left \(rows[operation.id]?.status.rawValue ?? "unknown")")
                    }
                    rows[operation.id]?.compacted = true
                }
            }
        }
        try checkNothingOwed()
    }

    /// What the engine must have recorded by now, the worker being at rest: every person's
    /// decision, every rule's decision on a conflict, and every request sent (but the one a
    /// process died holding the answer to, until the next pass abandons it).
    private func checkNothingOwed() throws {
        if let (id, actions) = asked.first(where: { !$0.value.isEmpty }) {
            throw InvariantBroken("the member's \(actions[0]) of \(label(id)) is not in its history")
        }
        for row in rows.values {
            if let conflict = row.undecidedConflict, let owed = owedDecision(row, revision: conflict.revision) {
                throw InvariantBroken("\(label(row.id)) conflicted and its rule's decision (\(owed)) is not in its history")
            }
        }
        for (key, left) in wire where !left.isEmpty {
            let id = OperationID(key)
            let awaitingAbandonment = left == [WireExchange(ifMatch: left[0].ifMatch, answer: .lostWithTheProcess)]
                && id.flatMap { rows[$0]?.status } == .syncing
            if !awaitingAbandonment {
                throw InvariantBroken("\(left.count) request(s) under key \(key) (\(id.map(label) ?? "no operation")) crossed the wire and no attempt in the journal accounts for them: \(left.map(\.answer))")
            }
        }
    }

    /// At the end of a healed run: no request is left unaccounted for.
    func checkFinal() throws {
        if let (key, left) = wire.first(where: { !$0.value.isEmpty }) {
            throw InvariantBroken("after healing, \(left.count) request(s) under key \(key) are in no attempt of the journal")
        }
    }

    /// The decision the row's conflict rule makes by itself, in the commit of the conflicted
    /// outcome; `nil` when a person decides.
    private func owedDecision(_ row: Row, revision: String?) -> JournalEventKind? {
        switch scenario.conflictRule(for: row.operationType) {
        case .askMember: nil
        case .serverWins: .discarded
        case .rebase(let maxTimes): row.rebases < maxTimes && revision != nil ? .rebased : nil
        }
    }

    // MARK: One event

    private mutating func apply(_ event: JournalEvent, to id: OperationID) throws {
        if case .enqueued(let enqueued) = event.body {
            try enqueue(enqueued, event: event, id: id)
            return
        }
        guard var row = rows[id] else {
            throw InvariantBroken("\(label(id)) has a \(event.kind) event and was never enqueued")
        }
        func broken(_ text: String) -> InvariantBroken {
            InvariantBroken("\(label(id)) (\(row.status), \(row.operationType)), \(event.kind) at seq \(event.seq): \(text)")
        }
        if let conflict = row.undecidedConflict {
            // A conflicted row waits for a decision: its rule's, in the same commit, or a person's.
            if let owed = owedDecision(row, revision: conflict.revision), event.kind != owed || event.seq != conflict.seq.next {
                throw broken("its rule owed \(owed) right after the conflict at seq \(conflict.seq)")
            }
            guard [.discarded, .superseded, .rebased].contains(event.kind) else {
                throw broken("a conflicted row changed without a decision")
            }
        }

        switch event.body {
        case .enqueued, .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped:
            throw broken("an engine event under an operation")

        case .heldOnRollback, .rollbackAcknowledged:
            throw broken("\(event.kind) for a write of no record: this workload writes none")

        case .attemptStarted(let started):
            guard row.status == .queued else { throw broken("only a queued row may be sent") }
            guard started.attempt.rawValue == row.attempts + 1 else { throw broken("attempt \(started.attempt) after \(row.attempts)") }
            if let ahead = lanes[row.lane]?.first(where: { $0 != id && rows[$0].map { !$0.status.isTerminal && $0.laneSeq < row.laneSeq } ?? false }) {
                throw broken("sent while \(label(ahead)), ahead of it in its lane, is \(rows[ahead]!.status)")
            }
            for dependency in row.dependsOn {
                let current = standing(dependency)
                guard let current, current.status == .synced else {
                    throw broken("sent before its dependency \(label(dependency)) was synced (it stands as \(current.map { "\(label($0.id)) \($0.status)" } ?? "unknown"))")
                }
            }
            if row.attempts == 0, !row.dependsOn.isEmpty { tally["dependents sent", default: 0] += 1 }
            row.status = .syncing
            row.attempts += 1
            if row.epochStartedAt == nil { row.epochStartedAt = DeviceMoment(wall: event.recordedAt, uptime: event.uptime) }

        case .attemptFinished(let finished):
            guard row.status == .syncing, finished.attempt.rawValue == row.attempts else { throw broken("no attempt \(finished.attempt) in flight") }
            if finished.outcome != .notSent {
                guard let exchange = takeExchange(for: id) else {
                    throw broken("an attempt's outcome is recorded and no request under its key crossed the wire")
                }
                let ifMatch = row.baseRevision.map { "\"\($0)\"" }
                guard exchange.ifMatch == ifMatch else {
                    throw broken("sent with If-Match \(exchange.ifMatch ?? "none") while its revision is \(row.baseRevision ?? "none")")
                }
                switch (finished.outcome, exchange.answer) {
                case (.response(let recorded), .response(let status, let revision)) where recorded == status:
                    if finished.disposition == .conflicted, finished.serverRevision != revision {
                        throw broken("recorded the server's revision as \(finished.serverRevision ?? "none"); the server sent \(revision ?? "none")")
                    }
                case (.noResponse, .noResponse):
                    break
                default:
                    throw broken("recorded \(finished.outcome); what reached the engine was \(exchange.answer)")
                }
            }
            guard (finished.outcome == .response(statusCode: 412)) == (finished.disposition == .conflicted) else {
                throw broken("\(finished.outcome) was classified \(finished.disposition)")
            }
            if finished.disposition == .transientFailure || finished.disposition == .gaveUp {
                let attempts = row.attempts - row.epochAttempts
                // Measured as the engine must: by the device's uptime within a boot, never by
                // its wall clock, which the workload moves by hours.
                let now = DeviceMoment(wall: event.recordedAt, uptime: event.uptime)
                let policy = scenario.retryPolicy
                let age = DeviceMoment.elapsed(from: row.epochStartedAt ?? now, to: now, bootGapCapSeconds: policy.maxDelaySeconds)
                let pastLimits = policy.maxAttempts.map { attempts >= $0 } ?? false || policy.maxAgeSeconds.map { age >= $0 } ?? false
                if pastLimits != (finished.disposition == .gaveUp) {
                    throw broken("\(finished.disposition) after \(attempts) attempts over \(Int(age)) s since the last retry, under \(scenario.retryDescription)")
                }
            }
            row.status = finished.disposition.status
            if finished.disposition == .conflicted {
                row.undecidedConflict = (event.seq, finished.serverRevision)
                tally["conflicts", default: 0] += 1
            }
            if finished.disposition == .gaveUp { tally["given up", default: 0] += 1 }
            if finished.disposition == .accepted || finished.disposition == .replayed,
                let entity = row.entityID, SimulationScenario.editTypes.contains(row.operationType),
                let revision = finished.serverRevision.flatMap(Int.init)
            {
                learnedRevisions[entity] = max(learnedRevisions[entity] ?? 0, revision)
            }

        case .attemptAbandoned(let abandoned):
            guard row.status == .syncing, abandoned.attempt.rawValue == row.attempts else { throw broken("no attempt \(abandoned.attempt) in flight") }
            guard let exchange = takeExchange(for: id) else {
                throw broken("an attempt is abandoned and no request under its key crossed the wire")
            }
            guard exchange.answer == .lostWithTheProcess else {
                throw broken("abandoned, though \(exchange.answer) reached the engine alive")
            }
            row.status = .queued

        case .withdrawn:
            guard row.status == .failed, inlineSaves.contains(id) else { throw broken("only a rejected inline save is withdrawn") }
            row.status = .withdrawn

        case .requeued(let requeued):
            guard requeued.requestedBy == .member, take(.retry, for: id) else { throw broken("requeued without the member asking") }
            row.status = .queued
            row.epochAttempts = row.attempts
            row.epochStartedAt = nil
            row.endedDependency = nil

        case .discarded(let discarded):
            switch (discarded.requestedBy, discarded.reason) {
            case (.rule, .serverWon):
                guard scenario.conflictRule(for: row.operationType) == .serverWins, let conflict = row.undecidedConflict,
                    event.seq == conflict.seq.next
                else { throw broken("discarded by a rule that does not apply") }
            case (.member, .memberDiscarded):
                guard take(.discard, for: id) else { throw broken("discarded without the member asking") }
            case (.member, .serverWon):
                guard take(.keepTheirs, for: id) else { throw broken("resolved keeping the server's version without the member asking") }
            default:
                throw broken("discarded by \(discarded.requestedBy) for \(discarded.reason), which nothing in this run asks for")
            }
            if discarded.requestedBy == .rule { tally["server won by rule", default: 0] += 1 }
            if discarded.requestedBy == .member, discarded.reason == .serverWon { tally["kept theirs", default: 0] += 1 }
            row.status = .discarded
            row.discardedBy = discarded.requestedBy
            row.undecidedConflict = nil

        case .approvalDecided(let decision):
            guard row.status == .pendingApproval, take(.approvalDecision, for: id) else { throw broken("an approval decision nobody made") }
            row.status = decision.approved ? .synced : .failed

        case .superseded(let superseded):
            switch superseded.reason {
            case .revised:
                guard take(.revise, for: id) else { throw broken("revised without the member asking") }
            case .resolvedMine:
                guard take(.keepMine, for: id) else { throw broken("resolved keeping the member's version without the member asking") }
            case .coalesced:
                guard scenario.coalesces(row.operationType), row.status == .queued, row.attempts == 0 else {
                    throw broken("coalesced, but its type does not coalesce or it was already sent")
                }
            }
            tally[superseded.reason == .revised ? "corrections" : superseded.reason == .resolvedMine ? "kept mine" : "coalesced", default: 0] += 1
            row.status = .superseded
            row.supersededBy = superseded.by
            row.undecidedConflict = nil

        case .rebased(let rebased):
            guard case .rebase(let maxTimes) = scenario.conflictRule(for: row.operationType), row.rebases < maxTimes,
                let conflict = row.undecidedConflict, event.seq == conflict.seq.next
            else { throw broken("rebased without its rule (or past its limit: \(row.rebases) so far)") }
            guard rebased.baseRevision == conflict.revision else {
                throw broken("rebased onto \(rebased.baseRevision), not the server's revision \(conflict.revision ?? "none")")
            }
            tally["rebases", default: 0] += 1
            row.status = .queued
            row.baseRevision = rebased.baseRevision
            row.rebases += 1
            row.undecidedConflict = nil

        case .dependencyEnded(let ended):
            guard row.status == .queued else { throw broken("only a queued row waits for its dependencies") }
            let ends = row.dependsOn.compactMap(standing)
            guard ends.contains(where: { $0.id == ended.dependency && $0.status == ended.status }),
                ended.status == .discarded || ended.status == .withdrawn
            else { throw broken("blocked for dependency \(label(ended.dependency)) ending \(ended.status), which its dependencies do not show") }
            tally["dependencies ended", default: 0] += 1
            row.status = .blocked
            row.endedDependency = ended.dependency
        }
        row.latestSeq = event.seq
        rows[id] = row
    }

    private mutating func enqueue(_ enqueued: Enqueued, event: JournalEvent, id: OperationID) throws {
        guard rows[id] == nil else {
            throw InvariantBroken("\(label(id)) was enqueued twice (seq \(event.seq)): one id made two operations")
        }
        let request = enqueued.request
        var laneSeq = event.seq
        if let replaced = enqueued.supersedes {
            guard let old = rows[replaced.operation], old.supersededBy == id, old.latestSeq == event.seq.previous else {
                throw InvariantBroken("\(label(id)) replaces \(label(replaced.operation)) without its superseded event in the same commit")
            }
            // A row of an entity's lane is replaced in its place; a row of a lane of its own has
            // no place to keep.
            let lane = Lane(businessID: request.businessID, entityID: request.entityID, operation: id)
            guard replaced.laneSeq == old.laneSeq, request.entityID == nil || old.lane == lane else {
                throw InvariantBroken("\(label(id)) replaces \(label(replaced.operation)) but not in its lane's place")
            }
            laneSeq = old.laneSeq
        }
        for dependency in request.dependsOn where rows[dependency] == nil {
            throw InvariantBroken("\(label(id)) depends on \(label(dependency)), never enqueued")
        }
        let row = Row(
            id: id, operationType: request.operationType, entityID: request.entityID,
            lane: Lane(businessID: request.businessID, entityID: request.entityID, operation: id),
            laneSeq: laneSeq, dependsOn: request.dependsOn, baseRevision: request.baseRevision, latestSeq: event.seq
        )
        rows[id] = row
        lanes[row.lane, default: []].append(id)
    }

    /// The next request sent under `id`'s key, which an attempt now accounts for; `nil` when
    /// none is left.
    private mutating func takeExchange(for id: OperationID) -> WireExchange? {
        guard var left = wire[id.idempotencyKey], !left.isEmpty else { return nil }
        let exchange = left.removeFirst()
        wire[id.idempotencyKey] = left
        return exchange
    }

    /// Takes one `action` the member asked for on `id`; `false` when none is waiting.
    private mutating func take(_ action: PersonAction, for id: OperationID) -> Bool {
        guard let index = asked[id]?.firstIndex(of: action) else { return false }
        asked[id]?.remove(at: index)
        return true
    }
}

extension JournalSequence {
    /// The position right before this one.
    fileprivate var previous: JournalSequence { JournalSequence(rawValue: rawValue - 1) }
}
