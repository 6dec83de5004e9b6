/// Where one operation stands.
///
/// Seven statuses a member sees, and three terminal ones the Sync tab never shows:
///
/// | status | meaning |
/// |---|---|
/// | `queued` | durable on the device, waiting to be sent (now, or at its scheduled moment) |
/// | `syncing` | an attempt is in flight |
/// | `synced` | the server applied it (terminal) |
/// | `pending_approval` | the server holds it for someone's approval |
/// | `failed` | the server refused the payload; it needs correcting |
/// | `blocked` | the server refused the member or the key, or a write it depends on was dropped; it needs a person |
/// | `conflicted` | the record changed elsewhere since the edit began (412, `revision_conflict`); a person decides |
/// | `withdrawn` | an inline save the server rejected; it never existed for the member (terminal) |
/// | `discarded` | a person (or a conflict rule) chose to drop it; its payload stays in the history (terminal) |
/// | `superseded` | a correction, a resolution or a coalesced write replaced it; its payload stays in the history (terminal) |
///
/// `conflicted` and `superseded` came with journal format 2: an app that switches over statuses
/// handles them (conflicted with the failed and blocked rows a person decides; superseded with
/// the terminal ones no one sees).
public enum OutboxStatus: String, Sendable, Codable, CodingKeyRepresentable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    public var description: String { rawValue }

    case queued
    case syncing
    case synced
    case pendingApproval = "pending_approval"
    case failed
    case blocked
    case withdrawn
    case discarded
    case conflicted
    case superseded

    /// No event may follow a terminal status.
    public var isTerminal: Bool {
        switch self {
        case .synced, .withdrawn, .discarded, .superseded: true
        case .queued, .syncing, .pendingApproval, .failed, .blocked, .conflicted: false
        }
    }

    /// Waiting for the network: queued, or being sent.
    public var waitsForNetwork: Bool { self == .queued || self == .syncing }

    /// Waiting for a person: failed, blocked or conflicted (the banner's "needs your attention").
    public var needsAPerson: Bool { self == .failed || self == .blocked || self == .conflicted }

    /// Counted on the badge: waiting for the network or a person. The one set the badge, the Sync
    /// tab's count, a sign-out's refusal and the export of pending work all count.
    public var countsOnBadge: Bool { waitsForNetwork || needsAPerson }

    /// Shown on the Sync tab: counted on the badge, or waiting for approval.
    public var isOnSyncTab: Bool { countsOnBadge || self == .pendingApproval }

    /// The one-byte code the journal's indexes store.
    package var code: UInt8 {
        switch self {
        case .queued: 1
        case .syncing: 2
        case .synced: 3
        case .pendingApproval: 4
        case .failed: 5
        case .blocked: 6
        case .withdrawn: 7
        case .discarded: 8
        case .conflicted: 9
        case .superseded: 10
        }
    }

}
