public import Foundation
public import OutboxCrypto

/// What a store keeps for one claim.
///
/// A claim is taken (``State-swift.enum/inProgress(token:leaseExpiresAt:)``) when a first request
/// with its key starts, and completed (``State-swift.enum/completed(response:completedAt:)``) in
/// the same transaction as the write it protects. A failed write removes it.
public struct ClaimRecord: Hashable, Sendable {
    /// Where the claim is in its life.
    public enum State: Hashable, Sendable {
        /// Taken by the request holding `token`, whose write has not committed yet. Past
        /// `leaseExpiresAt` the taker is presumed dead and another request may take the claim.
        case inProgress(token: ClaimToken, leaseExpiresAt: Date)
        /// The write committed and answered `response`, which every replay sends again.
        case completed(response: ClaimResponse, completedAt: Date)
    }

    /// SHA-256 of the first request's body: a later request with the same key must match it.
    public var fingerprint: SHA256Digest
    /// When the claim was taken, by the server's clock.
    public var takenAt: Date
    /// In progress or completed.
    public var state: State

    public init(fingerprint: SHA256Digest, takenAt: Date, state: State) {
        self.fingerprint = fingerprint
        self.takenAt = takenAt
        self.state = state
    }

    /// The stored response, once completed.
    public var response: ClaimResponse? {
        if case .completed(let response, _) = state { return response }
        return nil
    }
}

/// Identifies one taking of a claim, so that only the request that took it completes or
/// releases it.
public struct ClaimToken: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    public init(uuid: UUID = UUID()) {
        self.uuid = uuid
    }

    public var description: String { uuid.uuidString }
}
