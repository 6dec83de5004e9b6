public import Foundation
import Synchronization

/// The server's only source of time for claims.
///
/// A claim's age is measured by the server's clock, never by anything the client sends: a
/// phone's clock may be wrong by days, and a replay must not depend on it.
public protocol ClaimClock: Sendable {
    /// The current moment.
    func now() -> Date
}

/// The machine's clock.
public struct SystemClaimClock: ClaimClock {
    public init() {}

    public func now() -> Date { Date() }
}

/// A clock that moves only when told, for tests of retention and leases.
///
/// A test double, so `package`: this package's tests and its simulation use it, and a server
/// links none of it. A server's own tests write theirs in a few lines over ``ClaimClock``.
///
/// ```swift
/// let clock = ManualClaimClock()
/// let claims = IdempotencyClaims(store: store, clock: clock)
/// clock.advance(by: 31 * 86_400)   // past the default retention
/// ```
package final class ManualClaimClock: ClaimClock {
    private let moment: Mutex<Date>

    /// - Parameter now: the starting moment (by default 2027-01-15 08:00 UTC).
    package init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        moment = Mutex(now)
    }

    package func now() -> Date {
        moment.withLock { $0 }
    }

    /// Moves the clock forward by `seconds`.
    package func advance(by seconds: TimeInterval) {
        precondition(seconds >= 0, "advance(by:) moves forward; use set(to:) to move back")
        moment.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to any moment, earlier ones included.
    package func set(to date: Date) {
        moment.withLock { $0 = date }
    }
}
