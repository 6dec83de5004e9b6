/// Where one operation stands.
///
/// Six statuses a member sees, and two terminal ones the Sync tab never shows:
///
/// | status | meaning |
/// |---|---|
/// | `queued` | durable on the device, waiting to be sent (now, or at its scheduled moment) |
/// | `syncing` | an attempt is in flight |
/// | `synced` | the server applied it (terminal) |
/// | `pending_approval` | the server holds it for someone's approval |
/// | `failed` | the server refused the payload; it needs correcting |
/// | `blocked` | the server refused the member or the key; it needs a person |
/// | `withdrawn` | an inline save the server rejected; it never existed for the member (terminal) |
/// | `discarded` | a person chose to drop it; its payload stays in the history (terminal) |
public enum OutboxStatus: String, Sendable, Codable, CodingKeyRepresentable, JournalCode {
    case queued
    case syncing
    case synced
    case pendingApproval = "pending_approval"
    case failed
    case blocked
    case withdrawn
    case discarded

    /// No event may follow a terminal status.
    public var isTerminal: Bool {
        switch self {
        case .synced, .withdrawn, .discarded: true
        case .queued, .syncing, .pendingApproval, .failed, .blocked: false
        }
    }

    /// Counted on the badge: the rows that need the network or a person.
    public var needsAttention: Bool {
        switch self {
        case .queued, .syncing, .failed, .blocked: true
        case .synced, .pendingApproval, .withdrawn, .discarded: false
        }
    }

    /// Shown on the Sync tab: waiting to sync, or waiting for approval.
    public var isOnSyncTab: Bool { needsAttention || self == .pendingApproval }

    /// The one-byte code the journal's indexes store.
    public var code: UInt8 {
        switch self {
        case .queued: 1
        case .syncing: 2
        case .synced: 3
        case .pendingApproval: 4
        case .failed: 5
        case .blocked: 6
        case .withdrawn: 7
        case .discarded: 8
        }
    }

}
