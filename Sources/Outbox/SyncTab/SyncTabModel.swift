public import Observation
public import OutboxCore

/// The Sync tab and the badge as an observable model a SwiftUI view can bind to.
///
/// ```swift
/// @State var model = SyncTabModel(outbox: outbox, isOnline: false)
/// ...
/// Text(model.tab.banner.text).badge(model.badgeCount)
/// ```
///
/// It refreshes itself after every commit of the outbox, and when ``isOnline`` changes.
@MainActor
@Observable
public final class SyncTabModel {
    /// The tab as of the latest commit.
    public private(set) var tab: SyncTab
    /// The badge as of the latest commit.
    public private(set) var badgeCount: Int
    /// The last error reading the journal, cleared by the next good read.
    public private(set) var lastError: OutboxError?
    /// Whether the device is online: decides the banner.
    public var isOnline: Bool {
        didSet { refresh() }
    }

    @ObservationIgnored private let outbox: Outbox
    @ObservationIgnored private let rowsPerCard: Int

    public init(outbox: Outbox, isOnline: Bool, rowsPerCard: Int = 50) {
        self.outbox = outbox
        self.isOnline = isOnline
        self.rowsPerCard = rowsPerCard
        self.tab = SyncTab(cards: [], approvalCard: nil, totalCount: 0, banner: .make(
            isOnline: isOnline, waitingForNetwork: 0, needingAttention: 0, waitingForApproval: 0))
        self.badgeCount = 0
        refresh()
        let changes = outbox.changes()
        Task { [weak self] in
            for await _ in changes {
                guard let self else { return }
                self.refresh()
            }
        }
    }

    /// Reads the tab and the badge again, from one snapshot of the journal.
    public func refresh() {
        do {
            tab = try outbox.syncTab(isOnline: isOnline, rowsPerCard: rowsPerCard)
            badgeCount = tab.badgeCount
            lastError = nil
        } catch let error as OutboxError {
            lastError = error
        } catch {
            lastError = .storage(code: 0, message: "\(error)")
        }
    }
}
