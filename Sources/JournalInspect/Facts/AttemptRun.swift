import Foundation
package import Outbox
package import OutboxAudit

/// Consecutive attempts that met the same answer: 51 attempts answered 503 read as one line, not
/// 102.
package struct AttemptRun: Sendable, Equatable {
    /// The attempts, in order; each ended with the same outcome, disposition, code and message.
    package var attempts: [AttemptSummary]

    /// Runs this long or longer are told as one.
    package static let shortest = 4

    package var count: Int { attempts.count }
    package var first: AttemptSummary { attempts[0] }
    package var last: AttemptSummary { attempts[attempts.count - 1] }

    /// What each attempt met: `503 (server_unavailable: "The server is having trouble")`.
    package var outcomeText: String {
        guard let finished = first.finished else { return "no outcome" }
        // Without a response the message is the engine's own: the outcome says it.
        guard case .response = finished.outcome else { return EventText.outcome(finished.outcome) }
        let error = Verdict.quoted(code: finished.errorCode, message: finished.errorMessage)
        return EventText.outcome(finished.outcome) + (error.isEmpty ? "" : " (\(error))")
    }

    /// The runs of identical finished attempts in `attempts`, each at least ``shortest`` long.
    package static func runs(in attempts: [AttemptSummary]) -> [AttemptRun] {
        var runs: [AttemptRun] = []
        var current: [AttemptSummary] = []
        func close() {
            if current.count >= shortest { runs.append(AttemptRun(attempts: current)) }
            current = []
        }
        for attempt in attempts {
            guard let finished = attempt.finished else {
                close()
                continue
            }
            if let previous = current.last?.finished, !sameAnswer(previous, finished) { close() }
            current.append(attempt)
        }
        close()
        return runs
    }

    /// The run the operation's attempts end with, if they end with one.
    package static func trailing(_ attempts: [AttemptSummary]) -> AttemptRun? {
        guard let run = runs(in: attempts).last, run.last.number == attempts.last?.number else { return nil }
        return run
    }

    static func sameAnswer(_ one: AttemptFinished, _ other: AttemptFinished) -> Bool {
        one.outcome == other.outcome && one.disposition == other.disposition && one.errorCode == other.errorCode
            && one.errorMessage == other.errorMessage
    }
}
