public import Foundation
public import OutboxCore

/// The Sync tab: what is waiting on this device, read from the local journal alone.
public struct SyncTab: Sendable, Equatable, Codable {
    /// Waiting to sync (queued, syncing, failed, blocked): one card per category, the card
    /// changed most recently first.
    public var cards: [SyncTab.Card]
    /// Waiting for someone's approval.
    public var approvalCard: SyncTab.Card?
    /// Changed elsewhere since the member's edit began (`conflicted`): each row with the
    /// server's version when it answered, waiting for the member to keep theirs or the server's.
    public var conflictCard: SyncTab.Card?
    /// Every population.
    public var totalCount: Int
    public var banner: SyncTab.Banner
    /// The badge (``Outbox/badgeCount()``) read in the same snapshot as the cards, so the two
    /// never disagree: queued, syncing, failed, blocked and conflicted.
    public var badgeCount: Int
    /// What the engine decided for the member lately (the server's version kept, a change sent
    /// again over one made elsewhere, a change given up), newest first, for
    /// ``OutboxConfiguration/decisionNoticeSeconds``; never counted in the badge.
    public var notices: [SyncTab.Notice]

    public init(cards: [SyncTab.Card], approvalCard: SyncTab.Card?, conflictCard: SyncTab.Card? = nil, totalCount: Int, banner: SyncTab.Banner,
                badgeCount: Int = 0, notices: [SyncTab.Notice] = []) {
        self.cards = cards
        self.approvalCard = approvalCard
        self.conflictCard = conflictCard
        self.totalCount = totalCount
        self.banner = banner
        self.badgeCount = badgeCount
        self.notices = notices
    }

    /// The card of `category`, if anything of it waits.
    public func card(_ category: String) -> SyncTab.Card? {
        cards.first { $0.category == category }
    }
}

extension SyncTab {
    /// One card: a category of waiting changes.
    public struct Card: Sendable, Equatable, Codable {
        /// The category (`OutboxRequest.category`), or ``SyncTab.Card/approvalCategory``.
        public var category: String
        /// How many rows wait in it (all of them, not only those in ``rows``).
        public var count: Int
        /// The moment of its latest change.
        public var latestChangeAt: Date
        /// Its rows, newest first, up to the tab's row limit.
        public var rows: [SyncTab.Row]
        /// The approval card's sentence, by category: "1 product is waiting for approval", "1
        /// product and 2 employees are waiting for approval" (``OutboxConfiguration/categoryNouns``);
        /// `nil` on the other cards, whose category and ``countText`` say it.
        public var headline: String? = nil

        /// The approval card's category.
        public static let approvalCategory = "Waiting for approval"
        /// The conflict card's category.
        public static let conflictCategory = "Changed elsewhere"

        /// "1 change", "3 changes".
        public var countText: String { OutboxConfiguration.CategoryNoun.change.counted(count) }
    }
}

extension SyncTab {
    /// One waiting change as the member sees it. Failed and blocked rows carry their last error.
    public struct Row: Sendable, Equatable, Codable {
        public var operationID: OperationID
        public var category: String
        public var entityLabel: String
        public var summary: String
        public var status: OutboxStatus
        /// When it last changed.
        public var changedAt: Date
        public var lastErrorCode: String?
        /// Why it waits, in words the member reads (``OutboxWords/english``): never a retried
        /// failure's body.
        public var lastErrorMessage: String?
        /// The message recorded with the last failure, as the server's answer carried it: what
        /// support reads, and what an app's own ``OutboxWords`` are asked with.
        public var lastServerMessage: String?
        /// For a conflicted row: the server's version of the record when it answered (its JSON
        /// text), to show beside the member's; `nil` when the server sent none or it is sealed and
        /// the key is not known.
        public var serverValue: String?
        /// For a queued row held by something: what, in words the member reads ("Waits for
        /// Antiseptic 500 ml to sync first"); `nil` otherwise.
        public var waitingReason: String?
        /// The row this one replaces (a correction, a resolution, a coalesced write).
        public var supersedes: OperationID?

        package init(_ state: OperationState) {
            operationID = state.id
            category = state.category
            entityLabel = state.entityLabel
            summary = state.summary
            status = state.status
            changedAt = state.changedAt
            lastErrorCode = state.lastErrorCode
            lastErrorMessage = OutboxWords.english.failure(code: state.lastErrorCode, serverMessage: state.lastErrorMessage)
            lastServerMessage = state.lastErrorMessage
            serverValue = state.serverCurrent.map { String(decoding: $0, as: UTF8.self) }
            supersedes = state.supersedes?.operation
        }
    }
}

extension SyncTab {
    /// A decision the engine made for the member about one of their changes, told on the Sync tab
    /// for a while: nothing is asked of them, but nothing they typed is dropped in silence.
    public struct Notice: Sendable, Equatable, Codable {
        public var operationID: OperationID
        public var category: String
        public var entityLabel: String
        public var summary: String
        public var decision: AutomaticDecision
        public var decidedAt: Date
        /// What the member reads: "Resolved for you: the server's version of Antiseptic 500 ml was
        /// kept".
        public var text: String

        package init(_ state: OperationState, decision: AutomaticDecision, decidedAt: Date) {
            operationID = state.id
            category = state.category
            entityLabel = state.entityLabel
            summary = state.summary
            self.decision = decision
            self.decidedAt = decidedAt
            let label = state.entityLabel.isEmpty ? "a change" : state.entityLabel
            text = switch decision {
            case .serverKept: "Resolved for you: the server's version of \(label) was kept, and your change was not sent"
            case .resentOverServer: "Resolved for you: your change to \(label) was sent over a change made elsewhere"
            case .gaveUp: "Not sent: \(label) could not reach the server after \(state.attemptCount) tries"
            case .coalesced: "Your newer change to \(label) was sent in its place"
            }
        }
    }
}
