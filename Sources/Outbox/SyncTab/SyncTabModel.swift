public import Observation
public import OutboxCore
import Synchronization

/// The Sync tab and the badge as an observable model a SwiftUI view can bind to.
///
/// ```swift
/// @State var model = SyncTabModel(outbox: outbox, isOnline: false)
/// ...
/// Text(model.tab.banner.text).badge(model.badgeCount)
/// ```
///
/// It is an ``Outbox/observe(_:)`` of the tab: it refreshes itself after every commit that
/// changes the tab, and when ``isOnline`` changes.
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
        didSet {
            online.value.store(isOnline, ordering: .releasing)
            refresh()
        }
    }

    @ObservationIgnored private let outbox: Outbox
    @ObservationIgnored private let rowsPerCard: Int
    /// ``isOnline`` for the observation's reads, off the main actor.
    @ObservationIgnored private let online: OnlineFlag

    public init(outbox: Outbox, isOnline: Bool, rowsPerCard: Int = 50) {
        self.outbox = outbox
        self.isOnline = isOnline
        self.rowsPerCard = rowsPerCard
        self.online = OnlineFlag(isOnline)
        self.tab = SyncTab(cards: [], approvalCard: nil, totalCount: 0, banner: .make(
            isOnline: isOnline, waitingForNetwork: 0, needingAttention: 0, waitingForApproval: 0))
        self.badgeCount = 0
        refresh()
        let online = self.online
        let tabs = outbox.observe(OutboxObservation { try $0.syncTab(isOnline: online.value.load(ordering: .acquiring), rowsPerCard: rowsPerCard) })
        Task { [weak self] in
            for await tab in tabs {
                guard let self else { return }
                self.show(tab)
            }
        }
    }

    /// Reads the tab and the badge again, from one snapshot of the journal.
    public func refresh() {
        do {
            show(try outbox.syncTab(isOnline: isOnline, rowsPerCard: rowsPerCard))
        } catch {
            lastError = error as? OutboxError ?? .storage(code: 0, message: "\(error)")
            outbox.viewReadFailed(error)
        }
    }

    private func show(_ tab: SyncTab) {
        self.tab = tab
        badgeCount = tab.badgeCount
        lastError = nil
    }
}

/// ``SyncTabModel/isOnline`` as the observation's reads see it, off the main actor.
private final class OnlineFlag: Sendable {
    let value: Atomic<Bool>

    init(_ value: Bool) {
        self.value = Atomic(value)
    }
}
