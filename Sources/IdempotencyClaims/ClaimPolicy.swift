public import Foundation
import OutboxWire

/// How long claims live and what they keep.
public struct ClaimPolicy: Sendable {
    /// One day, in seconds.
    public static let day: TimeInterval = 86_400

    /// How long a completed claim replays its response, by the server's clock.
    ///
    /// Claims must outlive the longest time a phone may stay offline: a phone that queued a
    /// write, lost its response and comes back after this long would have its retry applied a
    /// second time. 30 days by default; raise it if your users may stay offline longer.
    public var retention: TimeInterval
    /// How long a claim may stay in progress before it is presumed abandoned (its taker
    /// crashed between taking it and finishing) and another request may take it over.
    /// Must exceed the slowest write; 5 minutes by default.
    public var inProgressLease: TimeInterval
    /// The response headers a claim stores and replays, matched without regard to case.
    /// Others (dates, request ids, cookies) are dropped from the first answer too, so that the
    /// first answer and its replays are the same. `Outbox-Visible-At` is among them by default:
    /// a replay says from which feed position its write is visible, as the first answer did.
    public var storedHeaderNames: Set<String>

    /// `Content-Type`, `Location`, `ETag` and `Outbox-Visible-At`.
    public static let defaultStoredHeaderNames: Set<String> = ["Content-Type", "Location", "ETag", WireHeader.visibleAt]

    public init(
        retention: TimeInterval = 30 * ClaimPolicy.day,
        inProgressLease: TimeInterval = 300,
        storedHeaderNames: Set<String> = ClaimPolicy.defaultStoredHeaderNames
    ) {
        precondition(retention > 0, "retention must be positive")
        precondition(inProgressLease > 0, "inProgressLease must be positive")
        self.retention = retention
        self.inProgressLease = inProgressLease
        self.storedHeaderNames = storedHeaderNames
    }
}
