import Foundation
import OutboxCore

extension Outbox {
    /// The Sync tab, from the local journal alone.
    ///
    /// ```swift
    /// let tab = try outbox.syncTab(isOnline: reachability.isOnline)
    /// tab.banner.text                  // "Connect to the internet to sync these changes"
    /// tab.card("Products")?.countText  // "1 change"
    /// ```
    /// Read from counters and indexes: as fast at ten thousand waiting rows as at one.
    /// - Parameter rowsPerCard: the most detail rows per card (each card's count covers all).
    public func syncTab(isOnline: Bool, rowsPerCard: Int = 50) throws -> SyncTab {
        try ensureOpen()
        return try store.queries.syncTab(isOnline: isOnline, rowsPerCard: rowsPerCard, wording: SyncTabWording(configuration))
    }

    /// Rows that need the network or a person: queued, syncing, failed, blocked and conflicted.
    /// Never waiting for approval, synced, withdrawn, discarded or superseded.
    public func badgeCount() throws -> Int {
        try ensureOpen()
        return try store.queries.badgeCount()
    }

    /// The Sync tab now and after every commit that changed it: ``observe(_:)`` of a read of
    /// ``syncTab(isOnline:rowsPerCard:)``. A slow reader gets the newest tab, never a backlog. The
    /// stream ends when the outbox closes. A tab that cannot be read is skipped (and counted in
    /// ``OutboxMetrics/problems``); the next commit that changes it brings a fresh one.
    /// - Parameter isOnline: asked each time a tab is built.
    public func syncTabUpdates(isOnline: @escaping @Sendable () -> Bool, rowsPerCard: Int = 50) -> AsyncStream<SyncTab> {
        observe(OutboxObservation { try $0.syncTab(isOnline: isOnline(), rowsPerCard: rowsPerCard) })
    }
}
