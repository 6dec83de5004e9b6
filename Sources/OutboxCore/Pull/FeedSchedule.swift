package import Foundation
import OutboxCrypto

/// When a business's feed is pulled next: a pure function of what the feed did last and the
/// moment asked, so a screen can say "updated 2 hours ago" and the worker can arm one timer.
///
/// | the feed | due |
/// |---|---|
/// | never reached its end | now |
/// | its last pull failed (n failures in a row) | the retry policy's backoff after the n-th failure, from that failure, or the server's `Retry-After` when later |
/// | it reached its end at T | when the base is older than the type's freshness: T plus the freshness, measured by uptime within a boot and by the wall clock across one (no cap: a phone off for days has a stale base) |
///
/// A wake the member causes (the app launched or came to the foreground, the network came back,
/// the session was refreshed, `pull()`) pulls at once, past freshness and past a backoff the
/// network caused; never before a server's own `Retry-After`.
package enum FeedSchedule {
    /// What the schedule reads of a feed.
    package struct Feed: Sendable, Equatable {
        /// When a page last reached the feed's end.
        package var caughtUpAt: DeviceMoment?
        /// Failed pulls since the last one that succeeded, and when the last failed.
        package var failures: Int
        package var lastFailureAt: Date?
        /// The moment the server asked not to be asked before (429, 503 with `Retry-After`).
        package var retryAfter: Date?

        package init(caughtUpAt: DeviceMoment? = nil, failures: Int = 0, lastFailureAt: Date? = nil, retryAfter: Date? = nil) {
            self.caughtUpAt = caughtUpAt
            self.failures = failures
            self.lastFailureAt = lastFailureAt
            self.retryAfter = retryAfter
        }
    }

    /// The wall moment the feed is due: at or before `now` when it is due now.
    package static func due(_ feed: Feed, business: String, freshnessSeconds: TimeInterval, policy: OperationTypePolicy.RetryPolicy, now: DeviceMoment) -> Date {
        if feed.failures > 0, let failedAt = feed.lastFailureAt {
            return policy.nextAttempt(afterAttempt: AttemptNumber(rawValue: feed.failures), of: seed(business), now: failedAt,
                                      retryAfter: feed.retryAfter)
        }
        if let retryAfter = feed.retryAfter, retryAfter > now.wall { return retryAfter }
        guard let caughtUp = feed.caughtUpAt else { return now.wall }
        let age = DeviceMoment.elapsed(from: caughtUp, to: now, bootGapCapSeconds: .infinity)
        return now.wall.addingTimeInterval(max(0, freshnessSeconds - age))
    }

    /// Whether to pull now. - Parameter forced: a wake the member caused.
    package static func isDue(_ feed: Feed, business: String, freshnessSeconds: TimeInterval, policy: OperationTypePolicy.RetryPolicy,
                              now: DeviceMoment, forced: Bool) -> Bool {
        if let retryAfter = feed.retryAfter, retryAfter > now.wall { return false }
        return forced || due(feed, business: business, freshnessSeconds: freshnessSeconds, policy: policy, now: now) <= now.wall
    }

    /// The business as the retry policy's seed, so two businesses' backoffs spread apart the same
    /// way every time.
    static func seed(_ business: String) -> OperationID {
        OperationID(bytes: SHA256Digest(of: Data(business.utf8)).bytes.prefix(16))!
    }
}
