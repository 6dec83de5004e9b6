public import Foundation
public import Outbox
public import OutboxAudit

/// A clock that runs faster than real time: the demo's afternoon passes in seconds, and its
/// retries (2 s, 4 s, ...) come at the moments the engine schedules, only sooner.
public final class AcceleratedClock: OutboxClock {
    private let virtualStart: Date
    private let realStart = ContinuousClock.now
    /// Virtual seconds per real second.
    public let speed: Double

    public init(start: Date, speed: Double) {
        precondition(speed > 0, "speed must be positive")
        self.virtualStart = start
        self.speed = speed
    }

    public func now() -> Date {
        let elapsed = ContinuousClock.now - realStart
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return virtualStart.addingTimeInterval(seconds * speed)
    }

    /// The device's own: the demo runs on a real device, only its afternoon goes faster.
    public func uptime() -> Uptime? { Uptime.system }

    /// The device's own time zone.
    public var timeZone: TimeZone { .current }

    public func sleep(until deadline: Date) async throws {
        let virtualSeconds = deadline.timeIntervalSince(now())
        if virtualSeconds > 0 {
            try await Task.sleep(for: .seconds(virtualSeconds / speed))
        } else {
            try Task.checkCancellation()
        }
    }
}
