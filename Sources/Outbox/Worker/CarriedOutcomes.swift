import Synchronization

/// Outcomes waiting to be committed with the pass's next `attemptStarted`.
///
/// An attempt's outcome must be durable before the next request leaves, not sooner: holding it
/// until the pass starts its next attempt lets the two share one commit, one flush to disk where
/// there were two, whatever lanes the rows are in. The pass hands what waits here to the next
/// attempt it starts, and commits alone whatever no start takes before it waits on anything
/// else (the network, the schedule, the end of the pass), so an outcome never waits on a
/// request in flight.
final class CarriedOutcomes: Sendable {
    private let waiting = Mutex<[OutcomeRecorder.Draft]>([])

    /// Leaves an outcome for the next start.
    func carry(_ draft: OutcomeRecorder.Draft) {
        waiting.withLock { $0.append(draft) }
    }

    /// Everything waiting, which the caller now commits.
    func take() -> [OutcomeRecorder.Draft] {
        waiting.withLock { drafts in
            defer { drafts = [] }
            return drafts
        }
    }
}
