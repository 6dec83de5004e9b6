public import Foundation

/// The engine's only source of time.
///
/// Wall-clock moments are recorded for display and used for retry schedules; no order depends
/// on them (the journal's `seq` is the order). Tests inject `ManualClock` from `OutboxTesting`
/// so that nothing waits on real time.
public protocol OutboxClock: Sendable {
    /// The current moment.
    func now() -> Date
    /// Suspends until `deadline` has passed (at once if it already has).
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The device's clock.
public struct SystemClock: OutboxClock {
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSinceNow
        if seconds > 0 {
            try await Task.sleep(for: .seconds(seconds))
        } else {
            try Task.checkCancellation()
        }
    }
}
