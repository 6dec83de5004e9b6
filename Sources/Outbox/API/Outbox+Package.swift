import Foundation
import OutboxCore

/// Hooks for the package's own tools and tests (the simulation, `journal-inspect`), not for apps.
extension Outbox {
    /// Waits for the worker to stop after ``close()``: no attempt of this engine is in flight
    /// afterwards.
    package func waitForWorkerToStop() async {
        await worker.stop()
    }

    /// The first row of `lane` not yet terminal: the only one of the lane the worker may send.
    package func laneHead(_ lane: Lane) throws -> OperationID? {
        try ensureOpen()
        return try replayPass.laneHead(lane)
    }

    /// Every difference between the stored projections and a rebuild from the events (empty
    /// when equal). A rebuild meeting an illegal transition throws, naming its seq.
    package func projectionMismatches() throws -> [String] {
        try ensureOpen()
        return try store.compareProjectionsWithRebuild().map(\.description)
    }
}
