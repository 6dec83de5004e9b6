package import Foundation

/// How long the server remembers an idempotency key's answer, and so how old a write's first
/// attempt may be before sending it again under its key stops being safe.
///
/// The server keeps each claim for a while (30 days by default); past that, a replay it has
/// forgotten is applied as new. A write whose first attempt is older than the retention less a
/// margin is therefore not replayed blindly: the worker blocks it for a person. The retention is
/// the configuration's, or the shorter one the server announces (`Outbox-Claim-Retention`, in
/// seconds).
package struct ClaimRetention: Sendable, Equatable {
    /// The retention the app configured.
    package var configuredSeconds: Double
    /// The margin kept below it: a clock that drifts, a claim swept early.
    package var marginSeconds: Double
    /// The shortest retention a server's answer announced since the engine started.
    package var announcedSeconds: Double?

    package init(configuredSeconds: Double, marginSeconds: Double, announcedSeconds: Double? = nil) {
        self.configuredSeconds = configuredSeconds
        self.marginSeconds = marginSeconds
        self.announcedSeconds = announcedSeconds
    }

    /// How old a first attempt may be and still be replayed under its key.
    package var window: Double {
        max(0, min(configuredSeconds, announcedSeconds ?? .infinity) - marginSeconds)
    }

    /// Takes in a server's `Outbox-Claim-Retention` value: whole seconds, above zero; anything
    /// else is ignored (a server that cannot say is judged by the configuration).
    package mutating func observe(announced value: String?) {
        guard let value, let seconds = UInt64(value.trimmingCharacters(in: .whitespaces)), seconds > 0 else { return }
        announcedSeconds = min(announcedSeconds ?? .infinity, Double(seconds))
    }
}
