import Foundation

/// When a failed attempt is retried: exponential backoff, capped, optionally with jitter.
///
/// ``standard``: 2 s after the first failed attempt, doubling, capped at 300 s, no jitter:
/// 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, ... Deterministic, so schedules are testable. A fleet
/// of devices retrying in lockstep re-creates an outage, so ``jittered(_:)`` spreads retries,
/// still deterministically: the spread derives from the operation id, not a random source.
public struct RetryPolicy: Sendable, Equatable {
    /// The delay after the first failed attempt.
    public var initialDelaySeconds: Double
    /// Each further failure multiplies the delay by this.
    public var multiplier: Double
    /// No delay exceeds this (jitter included).
    public var maxDelaySeconds: Double
    /// The fraction of a delay that jitter may remove: 0 for none, 0.5 for up to half.
    public var jitterFraction: Double

    public init(initialDelaySeconds: Double, multiplier: Double, maxDelaySeconds: Double, jitterFraction: Double = 0) {
        precondition(initialDelaySeconds > 0, "initialDelaySeconds must be positive")
        precondition(multiplier >= 1, "multiplier must be at least 1")
        precondition(maxDelaySeconds >= initialDelaySeconds, "maxDelaySeconds below initialDelaySeconds")
        precondition((0...1).contains(jitterFraction), "jitterFraction must be within 0...1")
        self.initialDelaySeconds = initialDelaySeconds
        self.multiplier = multiplier
        self.maxDelaySeconds = maxDelaySeconds
        self.jitterFraction = jitterFraction
    }

    /// 2 s, doubling, capped at 300 s, no jitter.
    public static let standard = RetryPolicy(initialDelaySeconds: 2, multiplier: 2, maxDelaySeconds: 300)

    /// This policy with up to `fraction` of each delay removed, by an amount fixed per operation.
    public func jittered(_ fraction: Double = 0.5) -> RetryPolicy {
        var policy = self
        policy.jitterFraction = fraction
        return policy
    }
}
