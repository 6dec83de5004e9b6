import Foundation
import OutboxCore

/// Rows whose stored due moment lies further than the retry cap from now, and when each was first
/// seen so: a pure structure, the worker's guard against a device clock moved backwards.
///
/// Retry moments are wall-clock. No retry is ever scheduled more than one cap ahead, so a due
/// moment beyond the cap means the clock moved back since it was scheduled; such a row counts as
/// due one cap after it was first seen, instead of waiting out the hours the clock lost. The worker
/// hands it what the schedule shows at each pass; it answers which rows are due by the clamp.
struct ClockSkewClamp: Sendable, Equatable {
    let policy: OperationTypePolicy.RetryPolicy
    /// Each row seen beyond the cap, with the moment it was first seen so.
    private(set) var firstSeen: [OperationID: Date] = [:]

    init(policy: OperationTypePolicy.RetryPolicy) {
        self.policy = policy
    }

    /// Stored due moments after this moment count as a clock moved backwards.
    func horizon(now: Date) -> Date {
        now.addingTimeInterval(policy.maxDelaySeconds)
    }

    /// Takes the rows whose stored due moment is beyond ``horizon(now:)`` at `now` (all of them):
    /// remembers when each was first seen so, forgets the rows no longer beyond it, and answers
    /// the ones due by the clamp (first seen at least one cap ago), in the order given.
    ///
    /// A row "first seen" after `now` was seen before the clock moved back again: it counts as
    /// first seen now.
    mutating func observe(beyondCap ids: [OperationID], now: Date) -> [OperationID] {
        for id in ids where firstSeen[id].map({ $0 > now }) ?? true {
            firstSeen[id] = now
        }
        let current = Set(ids)
        firstSeen = firstSeen.filter { current.contains($0.key) }
        return ids.filter { id in
            firstSeen[id].map { $0.addingTimeInterval(policy.maxDelaySeconds) <= now } ?? false
        }
    }

    /// When a queued row with stored due moment `stored` is really due, read at `now`: never later
    /// than one cap after it was first seen beyond the cap (or, not seen yet, after now).
    /// - Returns: `nil` when `stored` is `nil` (due at once).
    func effectiveDue(_ stored: Date?, of id: OperationID, now: Date) -> Date? {
        policy.effectiveDue(stored, now: now, firstSeen: firstSeen[id])
    }
}
