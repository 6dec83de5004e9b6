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
    /// The device's monotonic clock: seconds since boot and the boot, recorded with every event
    /// so that a gap, a clock moved back and a restart can be told apart; `nil` when it cannot
    /// be read. ``SystemClock`` reads the system's (``Uptime/system``).
    ///
    /// No default: a clock made for a test that forgot this member would read the real device
    /// in silence, so every clock says where its uptime comes from.
    func uptime() -> Uptime?
    /// The device's time zone, recorded when the journal is opened: how the member's own clock
    /// reads. ``SystemClock`` answers the system's (`TimeZone.current`); no default, as above.
    var timeZone: TimeZone { get }
}

extension Uptime {
    /// This device's uptime now: `ProcessInfo.systemUptime` (a clock that does not go back within
    /// a boot) and the boot's id (Linux's `boot_id`; on Apple platforms the boot moment); `nil`
    /// when the boot cannot be told.
    public static var system: Uptime? {
        guard let boot = bootID else { return nil }
        return Uptime(seconds: ProcessInfo.processInfo.systemUptime, bootID: boot)
    }

    /// Read once per process: the boot does not change while the process runs.
    private static let bootID: UUID? = {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        return UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines))
        #else
        // The moment of boot, to the second, as a stable id for this boot.
        let booted = Date().addingTimeInterval(-ProcessInfo.processInfo.systemUptime).timeIntervalSince1970.rounded()
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: UInt64(booted).bigEndian) { for (index, byte) in $0.enumerated() { bytes[8 + index] = byte } }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        #endif
    }()
}

/// The device's clock.
public struct SystemClock: OutboxClock {
    public init() {}

    public func now() -> Date { Date() }

    public func uptime() -> Uptime? { Uptime.system }

    public var timeZone: TimeZone { .current }

    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSinceNow
        if seconds > 0 {
            try await Task.sleep(for: .seconds(seconds))
        } else {
            try Task.checkCancellation()
        }
    }
}
