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

    /// A fresh Sync tab now and after every commit. A slow reader gets the newest tab, never a
    /// backlog. The stream ends when the outbox closes. A tab that cannot be read is skipped
    /// (and counted in ``OutboxMetrics/problems``); the next commit brings a fresh one.
    /// - Parameter isOnline: asked each time a tab is built.
    public func syncTabUpdates(isOnline: @escaping @Sendable () -> Bool, rowsPerCard: Int = 50) -> AsyncStream<SyncTab> {
        let changes = self.changes()
        let (stream, continuation) = AsyncStream.makeStream(of: SyncTab.self, bufferingPolicy: .bufferingNewest(1))
        let store = self.store
        let log = self.log
        let configuration = self.configuration
        let task = Task {
            /// The tab now; `nil` when it cannot be read (logged and counted, unless the outbox
            /// closed): that update is skipped, and the next commit brings a fresh one.
            func tab() -> SyncTab? {
                do {
                    return try store.queries.syncTab(isOnline: isOnline(), rowsPerCard: rowsPerCard, wording: SyncTabWording(configuration))
                } catch {
                    log.problem(.viewUpdateFailed, "could not read the Sync tab for an update; skipping it", error: error)
                    return nil
                }
            }
            if let tab = tab() { continuation.yield(tab) }
            for await _ in changes {
                if let tab = tab() { continuation.yield(tab) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
