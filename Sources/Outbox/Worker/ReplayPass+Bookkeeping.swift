import Foundation
import OutboxCore
import OutboxStorage

/// The events a pass records on its own: an interrupted attempt abandoned, a row blocked when a
/// write it depends on ended or its key's claim may be forgotten.
extension ReplayPass {
    /// Blocks a row the rule says cannot be sent as it is, a person to decide: one whose
    /// dependency ended without being applied, or one first sent longer ago than the server keeps
    /// claims (replayed under its key, it could apply twice).
    func recordBlocked(_ candidate: PassPlan.Candidate, by verdict: Eligibility.Verdict) async {
        let body: JournalEventBody
        let why: String
        var reason: String?
        switch verdict {
        case .dependencyEnded(let dependency, let status):
            body = .dependencyEnded(DependencyEnded(dependency: dependency, status: status))
            why = "a write it depends on ended \(status.rawValue)"
            reason = dependency.description
        case .claimMayBeForgotten(let firstAttemptAt, let window):
            body = .claimMayBeForgotten(ClaimMayBeForgotten(firstAttemptAt: firstAttemptAt, retentionSeconds: window))
            why = "first sent longer ago than the server keeps claims"
        case .ready, .waiting, .notQueued:
            return
        }
        do {
            _ = try await room.append([JournalStore.Draft(operationID: candidate.id, body: body)])
            var metadata: OutboxLogger.Metadata = [EngineLog.Key.operation: .string(candidate.id.description)]
            if let reason { metadata[EngineLog.Key.reason] = .string(reason) }
            log.log(.notice, "row blocked: \(why)", metadata)
        } catch OutboxError.illegalTransition {
            // A decision or another pass changed the row meanwhile: nothing to do.
        } catch {
            log.problem(.factNotRecorded, "could not block a row (\(why)); the next pass tries again", error: error, operation: candidate.id)
        }
    }

    /// Records `attemptAbandoned` for syncing rows no attempt of this process holds: their
    /// outcome could not be recorded. They are due at once, replayed under the same key.
    func abandonOrphans() async {
        let syncing: [JournalStore.Draft]
        do {
            syncing = try store.interruptedAttempts()
        } catch {
            log.problem(.journalRead, "could not look for interrupted attempts; the next pass looks again", error: error)
            return
        }
        guard !syncing.isEmpty else { return }
        // Read the rows first, then who holds them: an attempt inserts itself before its
        // `attemptStarted` commits, so every live attempt seen syncing is held here.
        let holding = attempts.inFlight.ids
        for draft in syncing {
            guard let id = draft.operationID, !holding.contains(id) else { continue }
            do {
                let events = try await room.append([draft])
                log.log(.info, "interrupted attempt abandoned; the row is due at once, under the same key", [
                    EngineLog.Key.operation: .string(id.description),
                    EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
                ])
            } catch OutboxError.illegalTransition {
                // Another attempt settled the row meanwhile, and the fold refused: nothing to do.
            } catch {
                log.problem(.abandonmentNotRecorded, "could not record an interrupted attempt's abandonment; the next pass tries again", error: error, operation: id)
            }
        }
    }
}
