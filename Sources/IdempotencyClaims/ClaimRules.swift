public import Foundation
public import OutboxCrypto

/// What to do with a request, given the claim stored for its key. Pure: no store, no clock.
public enum ClaimDecision: Hashable, Sendable {
    /// No live claim: take one and run the write.
    case take
    /// The write already happened: send its stored response again.
    case replay(ClaimResponse)
    /// The key was used with a different body.
    case conflict
    /// Another request with this key has taken the claim and not finished.
    case inProgress
}

/// The rules that turn a stored claim and a request into a ``ClaimDecision``.
///
/// | stored claim                          | same body   | different body |
/// |---------------------------------------|-------------|----------------|
/// | none                                  | take        | take           |
/// | completed, within retention           | replay      | conflict       |
/// | completed, past retention             | take        | take           |
/// | in progress, lease running            | in progress | conflict       |
/// | in progress, lease over (abandoned)   | take        | take           |
public enum ClaimRules {
    /// Decides for a request whose body hashes to `fingerprint`, at `now` by the server's clock.
    public static func decide(
        existing: ClaimRecord?,
        fingerprint: SHA256Digest,
        now: Date,
        policy: ClaimPolicy
    ) -> ClaimDecision {
        guard let existing, isLive(existing, now: now, policy: policy) else { return .take }
        guard existing.fingerprint == fingerprint else { return .conflict }
        switch existing.state {
        case .inProgress:
            return .inProgress
        case .completed(let response, _):
            return .replay(response)
        }
    }

    /// Whether a claim still counts: completed within retention, or in progress within its lease.
    public static func isLive(_ record: ClaimRecord, now: Date, policy: ClaimPolicy) -> Bool {
        switch record.state {
        case .inProgress(_, let leaseExpiresAt):
            return now < leaseExpiresAt
        case .completed(_, let completedAt):
            return now < completedAt.addingTimeInterval(policy.retention)
        }
    }
}
