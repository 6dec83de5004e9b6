import Foundation
import OutboxCore
package import OutboxStorage

/// A read-only view of a journal, for other processes and tools (a widget, `journal-inspect`).
///
/// ```swift
/// let reader = try JournalReader(directory: journalURL)
/// let events = try reader.history(id)
/// ```
///
/// It never writes and never blocks the engine writing the same journal: each read sees one
/// consistent snapshot. Open it in a process that does not also have the journal open as an
/// ``Outbox`` (that one answers the same reads).
public final class JournalReader: Sendable {
    let store: JournalStore
    /// The projections folded from the events, when the stored ones are of another layout.
    private let folded: ProjectionImage?

    /// Opens the journal in `directory` read-only.
    /// - Throws: ``OutboxError/notAJournal(path:reason:)`` for a missing path or something that
    ///   is not a journal; ``OutboxError/newerFormat(found:supported:)``.
    public init(directory: URL) throws {
        let store = try JournalStore.open(directory: directory, options: JournalStore.Options(readOnly: true))
        self.store = store
        if store.projectionsAreCurrent {
            folded = nil
        } else {
            let schema = store.schema
            folded = try store.read { txn in try ProjectionImage.build(schema: schema, in: txn) }
        }
    }

    deinit {
        store.close()
    }

    /// The journal's directory.
    public var path: String { store.environment.path }

    /// Whether the stored projections were written by this engine's layout. When not, the
    /// engine rebuilds them at its next open, and this reader folded the events at open instead.
    public var projectionsAreCurrent: Bool { store.projectionsAreCurrent }

    public func operation(_ id: OperationID) throws -> OperationSnapshot? {
        guard let folded else { return try store.operationSnapshot(id) }
        guard let state = folded.states[id] else { return nil }
        let schema = store.schema
        let payload = try store.read { txn in try schema.payload(of: state, in: txn) }
        return OperationSnapshot(state: state, request: state.request(payload: payload))
    }

    public func history(_ id: OperationID) throws -> [JournalEvent] {
        guard folded != nil else { return try store.history(id) }
        let events = try store.events(from: 1, limit: .max).filter { $0.operationID == id }
        guard !events.isEmpty else { throw OutboxError.operationNotFound(id) }
        return events
    }

    public func lastSeq() throws -> JournalSequence {
        try store.lastSeq()
    }

    public func engineState() throws -> EngineState {
        guard let folded else { return try store.engineState() }
        return folded.engine
    }

    public func events(from start: JournalSequence = 1, limit: Int = 1000) throws -> [JournalEvent] {
        try store.events(from: start, limit: limit)
    }

    /// Runs `body` on one snapshot of the journal, for tools in this package.
    package func withSnapshot<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        try store.read(body)
    }

    /// How many events the snapshot holds.
    package func eventCount(in txn: borrowing LMDBTransaction) throws -> Int {
        try txn.count(store.schema.events)
    }

    /// Closes the reader.
    public func close() {
        store.close()
    }
}
