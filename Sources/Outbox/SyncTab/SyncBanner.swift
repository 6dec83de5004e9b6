/// The line at the top of the Sync tab.
public struct SyncBanner: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        /// Offline, with changes waiting for the network.
        case offline
        /// Online, with changes that will sync on their own.
        case willSync
        /// Nothing waits for the network, but failed or blocked changes need a person.
        case needsAttention
        /// Everything synced but changes waiting for approval.
        case waitingForApproval
        /// Nothing waiting at all.
        case allSynced
    }

    public var kind: Kind
    /// What the member reads.
    public var text: String

    /// The banner for these counts.
    public static func make(isOnline: Bool, waitingForNetwork: Int, needingAttention: Int, waitingForApproval: Int) -> SyncBanner {
        if waitingForNetwork > 0 {
            return isOnline
                ? SyncBanner(kind: .willSync, text: "These changes will sync automatically")
                : SyncBanner(kind: .offline, text: "Connect to the internet to sync these changes")
        }
        if needingAttention > 0 {
            let text = needingAttention == 1 ? "1 change needs your attention" : "\(needingAttention) changes need your attention"
            return SyncBanner(kind: .needsAttention, text: text)
        }
        if waitingForApproval > 0 {
            let text = waitingForApproval == 1
                ? "All synced; 1 change is waiting for approval"
                : "All synced; \(waitingForApproval) changes are waiting for approval"
            return SyncBanner(kind: .waitingForApproval, text: text)
        }
        return SyncBanner(kind: .allSynced, text: "You're all synced")
    }
}
