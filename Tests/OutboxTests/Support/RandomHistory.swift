import Foundation
import TestHarness
@testable import Outbox
import OutboxAudit

/// Drives a journal through a random but legal history: enqueues, attempts with every
/// disposition, abandonments, withdrawals, retries, discards, approval decisions and engine
/// events. Now and then it also tries an illegal event, which must be refused.
struct RandomHistory {
    var generator: SeededRandom
    /// What the history believes each operation's status is.
    private(set) var statuses: [OperationID: OutboxStatus] = [:]
    private(set) var attempts: [OperationID: Int] = [:]
    private(set) var refusals = 0

    init(seed: UInt64) {
        generator = SeededRandom(seed: seed)
    }

    /// A journal through a random history with compactions in it, so that `compacted` events
    /// (which name operations of every shard) are among the events folded.
    static func withCompactions(_ journal: TestJournal, _ outbox: Outbox, seed: UInt64) async throws -> RandomHistory {
        var history = RandomHistory(seed: seed)
        for round in 0..<3 {
            for _ in 0..<200 {
                try await history.step(outbox, now: journal.clock.now())
                journal.clock.advance(by: 7)
            }
            if round < 2 { _ = try await outbox.compact(before: journal.clock.now().addingTimeInterval(-300)) }
        }
        return history
    }

    /// Appends one random step (a few events) through the engine's writer.
    mutating func step(_ outbox: Outbox, now: Date) async throws {
        let ids = statuses.keys.sorted()
        let roll = Int.random(in: 0..<100, using: &generator)
        if ids.isEmpty || roll < 20 {
            let number = Int.random(in: 0..<1000, using: &generator)
            let lane = Bool.random(using: &generator) ? "entity-\(number % 7)" : nil
            let category = ["Products", "Employees", "Dispatches"].randomElement(using: &generator)!
            let id = try await outbox.enqueue(productRequest(number, entityID: lane, category: category))
            statuses[id] = .queued
            attempts[id] = 0
            return
        }
        if roll < 24 {
            let body: JournalEventBody = Bool.random(using: &generator)
                ? .sessionPaused(SessionPaused(reason: ErrorCode.unauthorized, triggeredBy: ids.randomElement(using: &generator)))
                : .sessionResumed
            _ = try await outbox.writer.append([JournalStore.Draft(operationID: nil, body: body)])
            return
        }
        let id = ids.randomElement(using: &generator)!
        let status = statuses[id]!
        let attempt = AttemptNumber(rawValue: attempts[id]!)
        if roll < 30 {
            // An event the status does not allow must be refused and change nothing.
            try await expectRefusal(outbox, id: id, body: illegalBody(for: status, attempt: attempt))
            return
        }
        var body: JournalEventBody?
        switch status {
        case .queued:
            if Int.random(in: 0..<10, using: &generator) == 0 {
                body = .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded))
            } else {
                body = .attemptStarted(AttemptStarted(attempt: attempt.next, trigger: WakeReason.allCases.randomElement(using: &generator)!))
                attempts[id] = attempt.rawValue + 1
            }
        case .syncing:
            if Int.random(in: 0..<8, using: &generator) == 0 {
                body = .attemptAbandoned(AttemptAbandoned(attempt: attempt))
            } else {
                let disposition = Disposition.allCases.randomElement(using: &generator)!
                body = .attemptFinished(AttemptFinished(
                    attempt: attempt,
                    outcome: .response(statusCode: [200, 201, 202, 400, 401, 403, 409, 422, 429, 500, 503].randomElement(using: &generator)!),
                    disposition: disposition,
                    errorCode: disposition == .blocked && Bool.random(using: &generator) ? ErrorCode.idempotencyConflict : "code",
                    errorMessage: "message",
                    approvalRequestID: disposition == .pendingApproval ? "apr-\(attempt)" : nil,
                    serverRevision: Bool.random(using: &generator) ? "rev-\(attempt)" : nil,
                    nextAttemptAt: disposition == .transientFailure ? now.addingTimeInterval(Double(Int.random(in: 1...300, using: &generator))) : nil
                ))
            }
        case .failed:
            body = [
                .requeued(Requeued(requestedBy: .member)),
                .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)),
                .withdrawn(Withdrawn(errorCode: ErrorCode.validationFailed, errorMessage: "bad")),
            ].randomElement(using: &generator)!
        case .blocked:
            body = Bool.random(using: &generator)
                ? .requeued(Requeued(requestedBy: .member))
                : .discarded(Discarded(requestedBy: .app, reason: .signOut))
        case .pendingApproval:
            body = .approvalDecided(ApprovalDecided(approved: Bool.random(using: &generator), reference: nil))
        case .conflicted:
            body = Bool.random(using: &generator)
                ? .rebased(Rebased(baseRevision: "rev-\(attempt)"))
                : .discarded(Discarded(requestedBy: .rule, reason: .serverWon))
        case .synced, .withdrawn, .discarded, .superseded:
            try await expectRefusal(outbox, id: id, body: .requeued(Requeued(requestedBy: .member)))
        }
        guard let body else { return }
        let events = try await outbox.writer.append([JournalStore.Draft(operationID: id, body: body)])
        statuses[id] = try Fold.replay(try outbox.journalEvents(of: id)).map(\.status)
        precondition(events.count == 1)
    }

    private func illegalBody(for status: OutboxStatus, attempt: AttemptNumber) -> JournalEventBody {
        switch status {
        case .queued: .attemptFinished(AttemptFinished(attempt: attempt.next, outcome: .response(statusCode: 201), disposition: .accepted))
        case .syncing: .attemptStarted(AttemptStarted(attempt: attempt.next, trigger: .timer))
        default: .attemptAbandoned(AttemptAbandoned(attempt: attempt))
        }
    }

    private mutating func expectRefusal(_ outbox: Outbox, id: OperationID, body: JournalEventBody) async throws {
        let before = try outbox.lastSeq()
        do {
            _ = try await outbox.writer.append([JournalStore.Draft(operationID: id, body: body)])
            throw RandomHistoryError.illegalEventAccepted(id, body.kind)
        } catch OutboxError.illegalTransition {
            refusals += 1
        }
        if try outbox.lastSeq() != before { throw RandomHistoryError.refusalWroteSomething(id) }
    }
}

enum RandomHistoryError: Error {
    case illegalEventAccepted(OperationID, JournalEventKind)
    case refusalWroteSomething(OperationID)
}
