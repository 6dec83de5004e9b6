

extension SyncTab {
    /// The line at the top of the Sync tab.
    public struct Banner: Sendable, Equatable, Codable {
        public enum Kind: String, Sendable, Codable {
            /// Offline, with changes waiting for the network.
            case offline
            /// Online, with changes that will sync on their own.
            case willSync
            /// Changes wait for the member to sign in: a 401 paused the worker, nobody is signed in,
            /// or another account is. They do not sync on their own.
            case signInRequired
            /// The journal was restored onto this device from another: its changes wait until the
            /// app confirms them (``Outbox/adoptInstallation()``).
            case otherInstallation
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

        /// What holds every waiting change at once, whatever the network does.
        public enum Hold: Sendable, Equatable {
            /// A 401 paused the worker, nobody is signed in, or another account is.
            case signIn
            /// The journal's changes were made on another installation.
            case otherInstallation
        }

        /// The banner for these counts.
        /// - Parameter hold: what holds every waiting change at once; with one, the banner never
        ///   says they will sync on their own.
        public static func make(isOnline: Bool, waitingForNetwork: Int, needingAttention: Int, waitingForApproval: Int,
                                hold: Hold? = nil) -> SyncTab.Banner {
            if waitingForNetwork > 0, let hold {
                return switch hold {
                case .signIn: SyncTab.Banner(kind: .signInRequired, text: "Sign in to sync these changes")
                case .otherInstallation:
                    SyncTab.Banner(kind: .otherInstallation, text: "These changes were made on another device and wait to be confirmed")
                }
            }
            if waitingForNetwork > 0 {
                return isOnline
                    ? SyncTab.Banner(kind: .willSync, text: "These changes will sync automatically")
                    : SyncTab.Banner(kind: .offline, text: "Connect to the internet to sync these changes")
            }
            if needingAttention > 0 {
                let text = needingAttention == 1 ? "1 change needs your attention" : "\(needingAttention) changes need your attention"
                return SyncTab.Banner(kind: .needsAttention, text: text)
            }
            if waitingForApproval > 0 {
                let text = waitingForApproval == 1
                    ? "All synced; 1 change is waiting for approval"
                    : "All synced; \(waitingForApproval) changes are waiting for approval"
                return SyncTab.Banner(kind: .waitingForApproval, text: text)
            }
            return SyncTab.Banner(kind: .allSynced, text: "You're all synced")
        }
    }
}
