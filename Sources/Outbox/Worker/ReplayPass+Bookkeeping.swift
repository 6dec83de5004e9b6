import Foundation
import OutboxCore
import OutboxStorage

/// The events a pass records on its own: an interrupted attempt abandoned, a row blocked when a
/// write it depends on ended.
extension ReplayPass {
    /// Blocks a row whose dependency ended without being applied: a person decides.
    func recordDependencyEnded(_ candidate: PassPlan.Candidate, dependency: OperationID, status: OutboxStatus) async {
        do {
            _ = try await room.append([JournalStore.Draft(
                operationID: candidate.id, body: .dependencyEnded(DependencyEnded(dependency: dependency, status: status))
            )], whenFull: .reserve)
            log.log(.notice, "row blocked: a write it depends on ended \(status.rawValue)", [
                EngineLog.Key.operation: .string(candidate.id.description),
                EngineLog.Key.reason: .string(dependency.description),
            ])
        } catch OutboxError.illegalTransition {
            // A decision or another pass changed the row meanwhile: nothing to do.
        } catch {
            log.problem(.factNotRecorded, "could not block a row whose dependency ended; the next pass tries again", error: error, operation: candidate.id)
        }
    }

    /// Blocks a row first sent longer ago than the server keeps claims: replayed under its key,
    /// it could apply twice. A person checks whether it landed, then retries or corrects it.
    func recordClaimMayBeForgotten(_ candidate: PassPlan.Candidate, firstAttemptAt: Date, window: Double) async {
        do {
            _ = try await room.append([JournalStore.Draft(
                operationID: candidate.id,
                body: .claimMayBeForgotten(ClaimMayBeForgotten(firstAttemptAt: firstAttemptAt, retentionSeconds: window))
            )], whenFull: .reserve)
            log.log(.notice, "row blocked: first sent longer ago than the server keeps claims", [
                EngineLog.Key.operation: .string(candidate.id.description),
            ])
        } catch OutboxError.illegalTransition {
            // A decision or another pass changed the row meanwhile: nothing to do.
        } catch {
            log.problem(.factNotRecorded, "could not block a row whose claim may be forgotten; the next pass tries again", error: error, operation: candidate.id)
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
                let events = try await room.append([draft], whenFull: .reserve)
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
