import Foundation

/// The time a budgeted drain (``Outbox/drain(until:)``) was given, as a pure rule: whether one
/// more request may start.
///
/// A request starts only when the time left covers a whole one (the configuration's
/// ``OutboxConfiguration/attemptBudgetSeconds``), so an attempt started ends before the system
/// takes its time back; once the system asks for it back (``Outbox/expire()``, or the drain's
/// task is cancelled), nothing starts until the next wake or drain.
struct DrainBudget: Sendable, Equatable {
    /// When the time given ends; `nil` outside a budgeted drain.
    var deadline: Date?
    /// The system took its time back: nothing starts until the next wake or drain.
    var expired = false

    /// Why a drain stopped early.
    enum Stop: Sendable, Equatable {
        /// Less time was left than one request needs.
        case budgetSpent
        /// The system took its time back (or the drain's task was cancelled).
        case expired
    }

    /// Why no request may start at `now` when one needs `requestSeconds`; `nil` when it may.
    func stop(at now: Date, requestSeconds: TimeInterval) -> Stop? {
        if expired { return .expired }
        if let deadline, deadline.timeIntervalSince(now) < requestSeconds { return .budgetSpent }
        return nil
    }
}
