public import Foundation

extension OperationTypePolicy.RetryPolicy {
    /// The delay after failed attempt number `attempt` of `operation`, jitter included.
    ///
    /// `initialDelaySeconds × multiplier^(attempt-1)`, capped at ``maxDelaySeconds``; with jitter,
    /// less up to ``jitterFraction`` of it, by an amount derived from the operation id and the
    /// attempt (the same every time they are the same).
    package func delaySeconds(afterAttempt attempt: AttemptNumber, of operation: OperationID) -> Double {
        let exponent = Double(max(attempt.rawValue, 1) - 1)
        let uncapped = initialDelaySeconds * pow(multiplier, exponent)
        let delay = uncapped.isFinite ? min(uncapped, maxDelaySeconds) : maxDelaySeconds
        guard jitterFraction > 0 else { return delay }
        return delay * (1 - jitterFraction * Self.unitInterval(operation, attempt))
    }

    /// When the next attempt is due after failed attempt `attempt`, decided at `now`.
    ///
    /// The backoff, or the server's `Retry-After` moment when that is later; never further than
    /// the cap from now, because a due moment beyond the cap is read as a clock that moved
    /// backwards (see ``effectiveDue(_:now:firstSeen:)``).
    package func nextAttempt(
        afterAttempt attempt: AttemptNumber,
        of operation: OperationID,
        now: Date,
        retryAfter: Date? = nil
    ) -> Date {
        let backoff = now.addingTimeInterval(delaySeconds(afterAttempt: attempt, of: operation))
        let due = max(backoff, retryAfter ?? backoff)
        return min(due, now.addingTimeInterval(maxDelaySeconds))
    }

    /// When a queued row with stored due moment `due` is really due, read at `now`.
    ///
    /// Retry moments are wall-clock, so a device clock moved backwards could strand a row for
    /// hours. A due moment further than the cap from the moment it was first seen counts as that
    /// moment plus the cap.
    /// - Parameters:
    ///   - due: the stored due moment; `nil` means due at once.
    ///   - firstSeen: when the worker first saw this row's due moment beyond the cap.
    public func effectiveDue(_ due: Date?, now: Date, firstSeen: Date? = nil) -> Date? {
        guard let due else { return nil }
        let limit = (firstSeen ?? now).addingTimeInterval(maxDelaySeconds)
        return min(due, limit)
    }

    /// A number in 0..<1 fixed by the operation and the attempt (SplitMix64 of the id's bits).
    static func unitInterval(_ operation: OperationID, _ attempt: AttemptNumber) -> Double {
        var mixed = operation.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        mixed ^= operation.bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        mixed &+= UInt64(attempt.rawValue) &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return Double(mixed >> 11) / Double(1 << 53)
    }
}

extension OperationTypePolicy {
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
        /// After this many attempts (counted from the last retry a person asked for), a transient
        /// failure settles `failed`, code `gave_up`; `nil` (the default): never.
        public var maxAttempts: Int?
        /// After this many seconds since the first attempt (since the last retry a person asked
        /// for), a transient failure settles `failed`, code `gave_up`; `nil` (the default): never.
        /// Measured by the device clock, so a clock moved forward can end it early; rows never
        /// attempted (offline all along) never age out.
        public var maxAgeSeconds: Double?

        /// A policy; its values are checked when an `Outbox` opens with it, which throws
        /// `OutboxError.invalidConfiguration` naming the first one out of range
        /// (``problems``).
        public init(initialDelaySeconds: Double, multiplier: Double, maxDelaySeconds: Double, jitterFraction: Double = 0) {
            self.initialDelaySeconds = initialDelaySeconds
            self.multiplier = multiplier
            self.maxDelaySeconds = maxDelaySeconds
            self.jitterFraction = jitterFraction
        }

        /// Each value out of its range, with the range: empty for a usable policy.
        public var problems: [(field: String, problem: String)] {
            var problems: [(field: String, problem: String)] = []
            if !(initialDelaySeconds > 0 && initialDelaySeconds <= 86_400) {
                problems.append(("initialDelaySeconds", "must be more than 0 and at most 86,400 seconds, not \(initialDelaySeconds)"))
            }
            if !(multiplier >= 1 && multiplier <= 1_000) {
                problems.append(("multiplier", "must be within 1...1,000, not \(multiplier)"))
            }
            if !(maxDelaySeconds >= initialDelaySeconds && maxDelaySeconds <= 7 * 86_400) {
                problems.append(("maxDelaySeconds", "must be at least initialDelaySeconds (\(initialDelaySeconds)) and at most 604,800 seconds (a week), not \(maxDelaySeconds)"))
            }
            if !(0...1).contains(jitterFraction) {
                problems.append(("jitterFraction", "must be within 0...1, not \(jitterFraction)"))
            }
            if let maxAttempts, maxAttempts < 1 {
                problems.append(("maxAttempts", "must be at least 1 (or nil: never give up), not \(maxAttempts)"))
            }
            if let maxAgeSeconds, !(maxAgeSeconds > 0 && maxAgeSeconds.isFinite) {
                problems.append(("maxAgeSeconds", "must be more than 0 seconds (or nil: never give up), not \(maxAgeSeconds)"))
            }
            return problems
        }

        /// 2 s, doubling, capped at 300 s, no jitter.
        public static let standard = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 2, multiplier: 2, maxDelaySeconds: 300)

        /// This policy, giving up on a row after `attempts` attempts or `age` seconds since its first
        /// attempt, whichever comes first (either may be `nil`). A row given up on is `failed`, code
        /// `gave_up`; ``Outbox/retry(_:)`` starts both limits over.
        ///
        /// ```swift
        /// retryPolicy: .standard.givingUp(afterAttempts: 50, orAge: 7 * 86_400)
        /// ```
        public func givingUp(afterAttempts attempts: Int? = nil, orAge age: Double? = nil) -> OperationTypePolicy.RetryPolicy {
            var policy = self
            policy.maxAttempts = attempts
            policy.maxAgeSeconds = age
            return policy
        }

        /// Whether a transient failure of attempt `attempts` (counted since the last retry), whose
        /// first attempt was `ageSeconds` ago (measured as `Docs/events.md` says: by the device's
        /// uptime within a boot), is past the limits.
        public func givesUp(attempts: Int, ageSeconds: TimeInterval) -> Bool {
            if let maxAttempts, attempts >= maxAttempts { return true }
            if let maxAgeSeconds, ageSeconds >= maxAgeSeconds { return true }
            return false
        }

        /// This policy with up to `fraction` of each delay removed, by an amount fixed per operation.
        public func jittered(_ fraction: Double = 0.5) -> OperationTypePolicy.RetryPolicy {
            var policy = self
            policy.jitterFraction = fraction
            return policy
        }
    }
}
