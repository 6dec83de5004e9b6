import Foundation
import OutboxCore

/// Records an attempt's planned outcome (``OutcomePlanner``): its events as one unit, committed
/// at once or carried to the next start's commit (``CarriedOutcomes``), and logged once
/// committed.
struct OutcomeRecorder: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let inFlight: InFlightRows
    let log: EngineLog

    /// An attempt's outcome drafted: its unit of events and what to log once it is committed.
    struct Draft: Sendable {
        var id: OperationID
        /// `attemptFinished` with the events that land with it.
        var unit: [JournalStore.Draft]
        var metadata: OutboxLogger.Metadata
        /// Whether the unit pauses the worker (a 401).
        var pauses: Bool
        var classification: Classification
        var errorCode: String? { classification.errorCode }
    }

    /// The plan's events as one unit, after `before` (an `attemptStarted` that lands with its
    /// outcome when nothing was sent), the server's record sealed when the journal is.
    func draft(_ plan: OutcomePlanner.Plan, of state: OperationState, statusCode: Int?, before: [JournalStore.Draft] = []) -> Draft {
        var unit = before
        for body in plan.events {
            switch body {
            case .attemptFinished(var finished):
                if let current = finished.classification.serverCurrent, let sealing = store.schema.sealing.sealing {
                    // The server's record is the member's data too: sealed like a payload at rest.
                    finished.sealedServerCurrent = sealing.sealServerCurrent(current, id: state.id)
                }
                unit.append(JournalStore.Draft(operationID: state.id, body: .attemptFinished(finished), storeWrites: plan.storeWrites))
            case .sessionPaused:
                unit.append(JournalStore.Draft(operationID: nil, body: body))
            default:
                unit.append(JournalStore.Draft(operationID: state.id, body: body))
            }
        }
        let classification = plan.classification
        var metadata: OutboxLogger.Metadata = [
            EngineLog.Key.operation: .string(state.id.description),
            EngineLog.Key.operationType: .string(state.operationType),
            EngineLog.Key.attempt: "\(plan.finished.attempt.rawValue)",
            EngineLog.Key.disposition: .string(classification.disposition.rawValue),
            EngineLog.Key.outcome: .string(EngineLog.describe(classification.outcome)),
        ]
        if let code = classification.errorCode { metadata[EngineLog.Key.errorCode] = .string(code) }
        if let statusCode { metadata[EngineLog.Key.statusCode] = "\(statusCode)" }
        if let next = plan.finished.nextAttemptAt { metadata[EngineLog.Key.nextAttemptAt] = EngineLog.moment(next) }
        return Draft(id: state.id, unit: unit, metadata: metadata, pauses: plan.pauses, classification: classification)
    }

    /// Commits `draft` now, or, with a `carry` and no pause, leaves it for the next start's
    /// commit, its row held in flight until then (no pass abandons it meanwhile).
    /// - Returns: whether it is recorded or carried.
    func record(_ draft: Draft, carry: CarriedOutcomes?) async -> Bool {
        if let carry, !draft.pauses {
            inFlight.hold([draft.id])
            carry.carry(draft)
            return true
        }
        return await commit(draft)
    }

    /// Commits outcomes no start took, each alone, and lets their rows go.
    func commit(_ drafts: [Draft]) async {
        for draft in drafts {
            _ = await commit(draft)
            inFlight.letGo([draft.id])
        }
    }

    /// Commits one outcome; logs it, or the failure to record it.
    /// - Returns: whether it was recorded.
    func commit(_ draft: Draft) async -> Bool {
        do {
            committed(draft, events: try await room.append(draft.unit))
            return true
        } catch {
            log.problem(.outcomeNotRecorded, "the attempt's outcome could not be recorded; the row stays syncing until the attempt is abandoned and replayed under the same key",
                        error: error, operation: draft.id, draft.metadata)
            return false
        }
    }

    /// Logs an outcome its commit recorded.
    func committed(_ draft: Draft, events: [JournalEvent]) {
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
}
