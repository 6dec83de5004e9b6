import Foundation
package import Outbox
package import OutboxAudit

/// How long passed between two events, and how that is known.
///
/// Since journal format 2 each event carries the device's uptime (seconds since boot, and the
/// boot): two events of one boot measure the time between them whatever the wall clock did. Across
/// a restart, or in older records, only the wall clock is left, and it may have been moved.
package enum Elapsed: Equatable, Sendable {
    /// Measured by the device's uptime: one boot.
    case measured(Double)
    /// Read from the wall clock, which went forward: across a restart (a new boot), or in
    /// records that carry no uptime.
    case byWallClock(Double, acrossRestart: Bool)
    /// The wall clock reads earlier at the later event, and nothing measures the time between.
    case unknown(clockBack: Double, acrossRestart: Bool)

    /// From `earlier` to `later` (in journal order).
    package static func between(_ earlier: JournalEvent, _ later: JournalEvent) -> Elapsed {
        let wall = later.recordedAt.timeIntervalSince(earlier.recordedAt)
        if let start = earlier.uptime, let end = later.uptime, start.bootID == end.bootID {
            return .measured(max(0, end.seconds - start.seconds))
        }
        let acrossRestart = earlier.uptime != nil && later.uptime != nil
        return wall >= 0 ? .byWallClock(wall, acrossRestart: acrossRestart) : .unknown(clockBack: -wall, acrossRestart: acrossRestart)
    }

    /// The time passed, never negative; `nil` when unknown.
    package var seconds: Double? {
        switch self {
        case .measured(let seconds), .byWallClock(let seconds, _): seconds
        case .unknown: nil
        }
    }

    /// `+2 h 14 min`, or `unknown (clock moved back)`.
    package var gapText: String {
        seconds.map { "+" + Moments.duration($0) } ?? "unknown (clock moved back)"
    }

    /// `6 s after it was saved`, with how it is known when the uptime did not measure it.
    package func after(_ what: String) -> String {
        switch self {
        case .measured(let seconds): "\(Moments.duration(seconds)) after \(what)"
        case .byWallClock(let seconds, false): "\(Moments.duration(seconds)) after \(what) by the device clock"
        case .byWallClock(let seconds, true): "\(Moments.duration(seconds)) after \(what) by the device clock, across a restart"
        case .unknown: "how long after \(what) is unknown: the device clock was moved back in between"
        }
    }
}

/// What the device clock did between two events, told apart by the uptime.
package enum ClockChange: Equatable, Sendable {
    /// Within one boot the wall clock went back: `by` seconds, while `measured` passed.
    case movedBack(by: Double, measured: Double)
    /// Within one boot the wall clock leapt ahead of the time that passed.
    case movedForward(by: Double, measured: Double)
    /// Across a restart the wall clock reads earlier than before it.
    case readsEarlierAcrossRestart(by: Double)
    /// The wall clock reads earlier, in records with no uptime.
    case readsEarlier(by: Double)

    /// Changes smaller than this are the clock's own corrections, not worth a word.
    package static let tolerance: Double = 60

    /// What the clock did from `earlier` to `later`; `nil` when it simply ran.
    package static func between(_ earlier: JournalEvent, _ later: JournalEvent) -> ClockChange? {
        let wall = later.recordedAt.timeIntervalSince(earlier.recordedAt)
        if let start = earlier.uptime, let end = later.uptime, start.bootID == end.bootID {
            let measured = max(0, end.seconds - start.seconds)
            let jump = wall - measured
            if jump <= -tolerance { return .movedBack(by: -jump, measured: measured) }
            if jump >= tolerance { return .movedForward(by: jump, measured: measured) }
            return nil
        }
        guard wall <= -tolerance else { return nil }
        return earlier.uptime != nil && later.uptime != nil ? .readsEarlierAcrossRestart(by: -wall) : .readsEarlier(by: -wall)
    }

    /// The note under the later event's row: `the device clock moved back 328 days here; ...`.
    package func note(since earlier: JournalEvent) -> String {
        switch self {
        case .movedBack(let by, let measured):
            "the device clock moved back \(Moments.durationInWords(by)) here: by its uptime, \(Moments.duration(measured)) passed "
                + "since seq \(earlier.seq)"
        case .movedForward(let by, let measured):
            "the device clock leapt forward \(Moments.durationInWords(by)) here: by its uptime, only \(Moments.duration(measured)) "
                + "passed since seq \(earlier.seq)"
        case .readsEarlierAcrossRestart(let by):
            "the device clock reads \(Moments.durationInWords(by)) earlier here than at seq \(earlier.seq), across a restart: it "
                + "was set back; how long passed is unknown"
        case .readsEarlier(let by):
            "the device clock reads \(Moments.durationInWords(by)) earlier here than at seq \(earlier.seq): it was moved back "
                + "(these records carry no uptime, so how long passed is unknown)"
        }
    }
}
