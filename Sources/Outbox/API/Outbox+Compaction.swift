public import Foundation
import OutboxCore

/// When the engine compacts on its own.
///
/// ```swift
/// OutboxConfiguration(account: "member-42", compaction: .init(maxEvents: 50_000, keepSettledSeconds: 7 * 86_400))
/// ```
public struct CompactionPolicy: Sendable, Equatable {
    /// Compact once the journal holds more events than this.
    public var maxEvents: Int
    /// Settled operations keep their details at least this long after they settled (by the
    /// device clock), so support can still read a recent timeline.
    public var keepSettledSeconds: TimeInterval

    /// A policy; `Outbox` checks its values when it opens (`maxEvents` at least 1,
    /// `keepSettledSeconds` zero or more).
    public init(maxEvents: Int, keepSettledSeconds: TimeInterval) {
        self.maxEvents = maxEvents
        self.keepSettledSeconds = keepSettledSeconds
    }
}

/// What one compaction did.
public struct CompactionResult: Sendable, Equatable {
    /// Operations whose events were removed.
    public var operations: Int
    /// Events removed.
    public var eventsRemoved: Int
    /// The `compacted` events appended (one per chunk of operations).
    public var compactedEvents: [JournalSequence]
}

/// Runs compactions through the journal's writer, a chunk of operations at a time: used by
/// `Outbox.compact(before:)`, by the compaction policy, and by ``JournalRoom`` when the budget or
/// the file is full.
struct Compactor: Sendable {
    let store: JournalStore
    let writer: JournalWriter
    let log: EngineLog

    /// - Parameter reason: why it runs, for the log (`requested`, `policy`, `budget`, `file_full`).
    func compact(before horizon: Date, reason: String) async throws -> CompactionResult {
        var result = CompactionResult(operations: 0, eventsRemoved: 0, compactedEvents: [])
        var chunk = JournalStore.compactionChunk
        while true {
            let ids = try store.compactable(before: horizon, limit: chunk)
            guard !ids.isEmpty else { break }
            let event: JournalEvent?
            do {
                event = try await writer.perform { store, now in
                    let event = try store.compact(ids, at: now)
                    return (event, event.map { [$0] } ?? [])
                }
            } catch OutboxError.storageFull where chunk > 1 {
                // A nearly full journal has little room for a transaction's copied pages: take
                // fewer operations at a time; the pages each frees serve the next.
                chunk /= 2
                continue
            }
            guard let event, case .compacted(let compacted) = event.body else { break }
            result.operations += compacted.operations.count
            result.eventsRemoved += compacted.removedCount
            result.compactedEvents.append(event.seq)
        }
        log.log(result.operations > 0 ? .info : .debug, "compaction finished", [
            EngineLog.Key.reason: .string(reason),
            EngineLog.Key.count: "\(result.operations)",
            EngineLog.Key.eventsRemoved: "\(result.eventsRemoved)",
            EngineLog.Key.seq: .array(result.compactedEvents.map { "\($0)" }),
        ])
        return result
    }
}

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
    public func compact(before horizon: Date) async throws -> CompactionResult {
        try ensureOpen()
        return try await Compactor(store: store, writer: writer, log: log).compact(before: horizon, reason: "requested")
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
            _ = try await Compactor(store: store, writer: writer, log: log)
                .compact(before: configuration.clock.now().addingTimeInterval(-policy.keepSettledSeconds), reason: "policy")
        } catch {
            log.problem(.compactionFailed, "the compaction policy's compaction failed; it runs again after a later write", error: error)
        }
    }
}

extension Outbox {
    /// Re-seals the journal under a new key (or, with `nil`, stores it in plaintext) in one
    /// transaction. Keep the new key before calling: from the moment this returns, only it
    /// opens the journal.
    public func rotateEncryptionKey(to newKey: SealingKey?) async throws {
        try ensureOpen()
        let current = store.schema.sealing.sealing
        let next = newKey.map(JournalSealing.init(key:))
        try await writer.perform { store, _ in
            try store.reseal(from: current, to: next)
            return ((), [])
        }
    }
}
