import Foundation
import OutboxCore

extension Outbox {
    /// Queue depth, the oldest pending row's age, attempts and outcomes, conflicts by type, the
    /// journal's size, and the problems the engine met since it opened (``OutboxMetrics/problems``).
    public func metrics() throws -> OutboxMetrics {
        try ensureOpen()
        var metrics = try store.queries.metrics(now: configuration.clock.now(), objectiveSeconds: configuration.acknowledgementObjectiveSeconds)
        metrics.problems = log.problemCounts
        replayPass.pulls?.fill(&metrics)
        return metrics
    }

    /// The latest problems the engine met since it opened, oldest first: at most
    /// ``OutboxLogger.Problem/recentLimit``, kept in memory only (never journaled), readable after
    /// ``close()`` too.
    public var recentProblems: [OutboxLogger.Problem] {
        log.recentProblems
    }
}
