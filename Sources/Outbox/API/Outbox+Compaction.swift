public import Foundation
import OutboxCore

extension Outbox {
    /// Removes the detailed events of operations that settled (synced, withdrawn, discarded)
    /// before `horizon`. Nothing queued, syncing, waiting for approval, failed or blocked is ever
    /// touched.
    ///
    /// Each chunk of up to 500 operations is removed in one transaction that appends a
    /// `compacted` event naming the seq range, the number of events removed and the SHA-256 of
    /// the removed records in order, and carrying each operation's ledger row. So what happened to
    /// a compacted operation still has an answer: its status, attempts, latest outcome and server
    /// revision stay in the ledger, and `operation(id)` reports when its details were compacted.
    /// Freed pages are reused by later writes.
    @discardableResult
    public func compact(before horizon: Date) async throws -> Outbox.CompactionResult {
        try ensureOpen()
        return try await Compactor(store: store, writer: writer, log: log, retention: Compactor.Retention(configuration)).compact(.settledBefore(horizon), reason: "requested")
    }

    /// Compacts when the configured policy says so; one at a time. A failure is logged and
    /// counted: the write that triggered it is already durable.
    func compactIfDue() async {
        guard let policy = configuration.compaction else { return }
        let events: Int
        do {
            events = try metrics().journalEvents
        } catch {
            log.problem(.journalRead, "could not count the journal's events; the compaction policy waits for the next write", error: error)
            return
        }
        guard events > policy.maxEvents, !compacting.exchange(true, ordering: .acquiring) else { return }
        defer { compacting.store(false, ordering: .releasing) }
        do {
            try ensureOpen()
            // How long a row has been settled is measured by the device's uptime, not its wall
            // clock (``DeviceMoment``): a clock moved forward never compacts a recent row.
            let now = DeviceMoment(wall: configuration.clock.now(), uptime: configuration.clock.uptime())
            _ = try await Compactor(store: store, writer: writer, log: log, retention: Compactor.Retention(configuration)).compact(
                .settledFor(policy.keepSettledSeconds, now: now, bootGapCapSeconds: configuration.retryPolicy.maxDelaySeconds), reason: "policy")
        } catch {
            log.problem(.compactionFailed, "the compaction policy's compaction failed; it runs again after a later write", error: error)
        }
    }
}

extension Outbox {
    /// Re-seals the journal under a new key (or, with `nil`, stores it in plaintext) in one
    /// transaction. Keep the new key before calling: from the moment this returns, only it
    /// opens the journal. The attachments' files are sealed with a key of their own, kept in
    /// the journal sealed with its key: the rotation re-seals that one value, never the files
    /// (with `nil` they stay sealed, their key kept in the clear).
    public func rotateEncryptionKey(to newKey: SealingKey?) async throws {
        try ensureOpen()
        let current = store.schema.sealing.sealing
        let next = newKey.map(JournalSealing.init(key:))
        try await writer.perform { store, _ in
            try store.reseal(from: current, to: next)
            return ((), [])
        }
        // The files keep their key; a file kept before the journal had one is sealed now.
        files.sealPlainFiles()
    }
}

extension OutboxConfiguration {
    /// When the engine compacts on its own.
    ///
    /// ```swift
    /// OutboxConfiguration(account: "member-42", compaction: .init(maxEvents: 50_000, keepSettledSeconds: 7 * 86_400))
    /// ```
    public struct CompactionPolicy: Sendable, Equatable {
        /// Compact once the journal holds more events than this.
        public var maxEvents: Int
        /// Settled operations keep their details at least this long after they settled, measured
        /// by the device's uptime within a boot (``DeviceMoment``), so support can still read a
        /// recent timeline whatever the wall clock says.
        public var keepSettledSeconds: TimeInterval

        /// A policy; `Outbox` checks its values when it opens (`maxEvents` at least 1,
        /// `keepSettledSeconds` zero or more).
        public init(maxEvents: Int, keepSettledSeconds: TimeInterval) {
            self.maxEvents = maxEvents
            self.keepSettledSeconds = keepSettledSeconds
        }
    }
}

extension Outbox {
    /// What one compaction did.
    public struct CompactionResult: Sendable, Equatable {
        /// Operations whose events were removed.
        public var operations: Int
        /// Events removed.
        public var eventsRemoved: Int
        /// The `compacted` events appended (one per chunk of operations).
        public var compactedEvents: [JournalSequence]
    }
}
