import Foundation
import OutboxCore

extension Outbox {
    /// One operation as it stands now, with its request; `nil` when no operation has this id.
    public func operation(_ id: OperationID) throws -> OperationSnapshot? {
        try ensureOpen()
        return try store.queries.operationSnapshot(id, now: configuration.clock.now())
    }

    /// The folded state of one operation, without reading its payload.
    package func operationState(_ id: OperationID) throws -> OperationState? {
        try ensureOpen()
        return try store.queries.operationState(id)
    }

    /// What happened to one write, in journal order: each event as a ``HistoryEntry`` (when,
    /// what kind, in words, and its fields). The proof a support screen shows.
    /// - Throws: ``OutboxError/operationNotFound(_:)`` for an unknown id;
    ///   ``OutboxError/journalCorrupt(seq:reason:)`` when a record fails its checksum.
    public func history(_ id: OperationID) throws -> [HistoryEntry] {
        try journalEvents(of: id).map { HistoryEntry($0) }
    }

    /// Every event of one operation, in journal order, as the engine journaled it.
    package func journalEvents(of id: OperationID) throws -> [JournalEvent] {
        try ensureOpen()
        return try store.queries.history(id)
    }

    /// A stream that yields after every commit from now on, with the operations and records it
    /// touched. It ends when the outbox closes, or when the reading task is cancelled.
    ///
    /// ```swift
    /// for await change in outbox.changes() where change.operations.contains(id) { ... }
    /// ```
    /// - Parameter buffering: what waits while the reader is busy: by default the newest 64
    ///   changes apart and the older merged into one (``OutboxChanges.Change/coalesced`` says how many).
    public func changes(buffering: OutboxChanges.Buffering = .standard) -> OutboxChanges {
        broadcaster.subscribe(buffering: buffering)
    }

    /// The seq of the latest event.
    public func lastSeq() throws -> JournalSequence {
        try ensureOpen()
        return try store.queries.lastSeq()
    }

    /// The engine-level state: whether the worker is paused, which engine opened the journal.
    package func engineState() throws -> EngineState {
        try ensureOpen()
        return try store.queries.engineState()
    }

    /// Why the worker sends nothing, when a 401 paused it: `nil` while it sends. The Sync tab's
    /// banner says the same to the member; ``resumeSession()`` ends it once the session is
    /// refreshed.
    public func workerPause() throws -> Outbox.WorkerPause? {
        try engineState().pause
    }

    /// Up to `limit` events from `start` on, in journal order.
    package func events(from start: JournalSequence = 1, limit: Int = 1000) throws -> [JournalEvent] {
        try ensureOpen()
        return try store.queries.events(from: start, limit: limit)
    }
}
