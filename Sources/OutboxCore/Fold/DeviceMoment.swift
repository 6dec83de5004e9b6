package import Foundation

/// A moment as the device recorded it: its wall clock and, from journal format 2, its uptime
/// and boot.
///
/// The wall clock is for display: a member can move it by hours. A decision that waits out a
/// period (the retry policy's age limit, compaction's keep period) measures it with
/// ``elapsed(from:to:bootGapCapSeconds:)``:
///
/// | the two moments | elapsed |
/// |---|---|
/// | one boot, both uptimes known | the uptime between them (never less than 0) |
/// | another boot | the uptime since this boot began, plus the wall-clock gap before it clamped to [0, the cap] |
/// | either without uptime (format 1, or a clock that cannot read it) | the wall-clock gap, never less than 0 |
///
/// So a clock moved forward never ends a period early, and a clock moved back never makes one
/// longer, within a boot; across a restart only the cap's worth of wall-clock time is believed.
package struct DeviceMoment: Sendable, Equatable {
    package var wall: Date
    package var uptime: Uptime?

    package init(wall: Date, uptime: Uptime?) {
        self.wall = wall
        self.uptime = uptime
    }

    /// Seconds from `start` to `end`, by the rule above.
    package static func elapsed(from start: DeviceMoment, to end: DeviceMoment, bootGapCapSeconds: TimeInterval) -> TimeInterval {
        let wallGap = max(0, end.wall.timeIntervalSince(start.wall))
        guard let from = start.uptime, let to = end.uptime else { return wallGap }
        if from.bootID == to.bootID { return max(0, to.seconds - from.seconds) }
        // This boot's own time is known; before it, only the wall clock says, and it is capped.
        let sinceBoot = max(0, to.seconds)
        return sinceBoot + min(max(0, wallGap - sinceBoot), bootGapCapSeconds)
    }
}
