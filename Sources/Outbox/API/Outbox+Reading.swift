import Foundation
import OutboxCore

extension Outbox {
    /// One operation as it stands now, with its request; `nil` when no operation has this id.
    public func operation(_ id: OperationID) throws -> OperationSnapshot? {
        try ensureOpen()
        let schema = store.schema
        return try store.read { txn in
            guard let state = try schema.state(id, in: txn) else { return nil }
            return OperationSnapshot(state: state, request: state.request(payload: try schema.payload(of: state, in: txn)))
        }
    }

    /// The folded state of one operation, without reading its payload.
    public func operationState(_ id: OperationID) throws -> OperationState? {
        try ensureOpen()
        let schema = store.schema
        return try store.read { txn in try schema.state(id, in: txn) }
    }

    /// Every event of one operation, in journal order: the proof of what happened to it.
    /// - Throws: ``OutboxError/operationNotFound(_:)`` for an unknown id;
    ///   ``OutboxError/journalCorrupt(seq:reason:)`` when a record fails its checksum.
    public func history(_ id: OperationID) throws -> [JournalEvent] {
        try ensureOpen()
        let schema = store.schema
        let events = try store.read { txn in try schema.history(id, in: txn) }
        guard !events.isEmpty else { throw OutboxError.operationNotFound(id) }
        return events
    }

    /// A stream that yields after every commit, with the operations it touched. It ends when the
    /// outbox closes.
    ///
    /// ```swift
    /// for await change in outbox.changes() where change.operations.contains(id) { ... }
    /// ```
    public func changes() -> AsyncStream<OutboxChange> {
        broadcaster.subscribe()
    }

    /// The seq of the latest event.
    public func lastSeq() throws -> JournalSequence {
        try ensureOpen()
        let schema = store.schema
        return try store.read { txn in try schema.lastSeq(in: txn) }
    }

    /// The engine-level state: whether the worker is paused, which engine opened the journal.
    public func engineState() throws -> EngineState {
        try ensureOpen()
        let schema = store.schema
        return try store.read { txn in try schema.engineState(in: txn) }
    }
}
