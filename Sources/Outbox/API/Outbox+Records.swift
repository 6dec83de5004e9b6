import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// The member's records: written with the writes that send them, read as the member sees them.
/// See `Docs/records.md`.
extension Outbox {
    // MARK: Reading

    /// The member's view of one record, its server base and its sync state, in one snapshot;
    /// `nil` when the journal holds nothing of it. Synchronous, from any thread.
    public func record(_ key: RecordKey) throws -> LocalRecord? {
        guard var record = try store.queries.record(key, policy: configuration.recordPolicy(for: key.type)) else { return nil }
        record.freshness = try freshness(business: key.business, type: key.type)
        return record
    }

    /// A page of one business's records of one type, in the order of their ids' bytes: pending
    /// creates included, records the member deleted left out. One snapshot.
    public func records(_ query: RecordQuery) throws -> RecordQuery.Page {
        var page = try store.queries.records(query, policy: configuration.recordPolicy(for: query.type))
        if let freshness = try freshness(business: query.business, type: query.type) {
            page.freshness = freshness
            for index in page.records.indices { page.records[index].freshness = freshness }
        }
        return page
    }

    /// How fresh the base of one business's type is: `nil` unless the type is pulled.
    private func freshness(business: String, type: String) throws -> LocalRecord.Freshness? {
        guard let pull = configuration.pull, pull.pulls(type: type), !configuration.recordPolicy(for: type).isLocalOnly else { return nil }
        let state = try feedState(business: business)
        return LocalRecord.Freshness(caughtUpAt: state?.caughtUpAt, ageSeconds: state?.lagSeconds,
                               freshnessSeconds: pull.exactTypes[ExactString(type)]?.freshnessSeconds ?? pull.freshnessSeconds)
    }

    /// The first page of `query` now, then again after each commit that changed it (a write, an
    /// answer, a pulled page, a resnapshot's swap, a dropped base...), and once when its freshness
    /// turns stale: ``observe(_:)`` of ``OutboxObservation/records(_:)``. The stream ends when the
    /// outbox closes.
    public func recordUpdates(_ query: RecordQuery) -> AsyncStream<RecordQuery.Page> {
        observe(.records(query))
    }

    /// Why the record holds its value: every event that made it, with the revision and SHA-256
    /// of each value, and a verdict in words ("shows the member's ... from write 6c4e..., waiting
    /// for internet; the server last confirmed ... at revision 2").
    /// - Parameter showingValues: name values by their JSON text (the member's data) rather
    ///   than by their hash.
    public func recordHistory(_ key: RecordKey, showingValues: Bool = false) throws -> LocalRecord.History {
        try store.queries.recordHistory(key, policy: configuration.recordPolicy(for: key.type), showingValues: showingValues)
    }

    // MARK: Writing without sending

    /// Writes records of local-only types (drafts, preferences: ``OutboxConfiguration.RecordTypePolicy/isLocalOnly``),
    /// durable when it returns, never sent. One commit for them all.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` for a change that cannot be kept,
    ///   or of a type that is not local-only (its changes go with the write that sends them);
    ///   ``OutboxError/storageFull(limitBytes:errno:)``. Nothing is written then.
    public func writeLocal(_ changes: [RecordChange]) async throws {
        try ensureOpen()
        let writes = try checkedWrites(changes, business: nil, local: true)
        guard !writes.isEmpty else { return }
        var trail = writes
        for index in trail.indices { trail[index].value = nil }
        let stored = writes.map { RecordStoreWrite(table: .local, key: $0.key, revision: 0, schemaVersion: $0.schemaVersion, value: $0.value) }
        _ = try await room.appendMakingRoom([JournalStore.Draft(operationID: nil, body: .recordsWritten(RecordsWritten(writes: trail)), storeWrites: stored)],
                                              payloadBytes: writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
    }

    /// Says the member saw that a change of `key` was rolled back: the record stops saying so.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` when the record says nothing
    ///   was rolled back.
    public func acknowledgeRollback(of key: RecordKey) async throws {
        try ensureOpen()
        guard let rolledBack = try record(key)?.sync.rolledBack else {
            throw OutboxError.invalidRequest(field: "key", problem: "\(key) shows no rollback to acknowledge")
        }
        _ = try await room.append([JournalStore.Draft(operationID: rolledBack.operation, body: .rollbackAcknowledged(RollbackAcknowledged(key: key)))])
    }

    /// Drops the server base of one business's records of `type`: an app upgrade that changed
    /// the type without an adapter for its stored values fetches them again: the next pull of a
    /// business with a feed fetches that type again whole.
    /// Pending writes and their overlays are untouched; until the server's values come back,
    /// each record's view is its pending changes alone. Recorded as `recordBaseDropped`.
    public func dropRecordBase(business: String, type: String) async throws {
        try ensureOpen()
        try RecordKey.checkScope(business: business, type: type)
        let version = configuration.recordPolicy(for: type).schemaVersion
        var draft = JournalStore.Draft(operationID: nil, body: .recordBaseDropped(RecordBaseDropped(business: business, type: type, schemaVersion: version)))
        draft.dropsBase = (business, type)
        _ = try await room.append([draft])
    }

    // MARK: Checks

    /// A write's record changes as the journal keeps them, each checked.
    func recordWrites(_ changes: [RecordChange], for request: OutboxRequest) throws(OutboxError) -> [RecordWrite] {
        let writes = try checkedWrites(changes, business: request.businessID, local: false, payload: request.payload)
        if let key = request.revisionFrom {
            if let problem = key.problem { throw .invalidRequest(field: "revisionFrom.\(problem.field)", problem: problem.problem) }
            guard writes.contains(where: { $0.key == key }) else {
                throw .invalidRequest(field: "revisionFrom", problem: "names \(key), which the write does not change: name a record among its changes")
            }
            guard request.baseRevision == nil else {
                throw .invalidRequest(field: "revisionFrom", problem: "is given with baseRevision: a write takes its If-Match from one or the other")
            }
        }
        return writes
    }

    /// Checks each change: its key, its value (JSON, within the payload limit), its type's kind
    /// (local-only or synced, as `local` asks), no record named twice. A value byte for byte the
    /// write's `payload` is not parsed again: the request's own check answers for it.
    private func checkedWrites(_ changes: [RecordChange], business: String?, local: Bool,
                               payload: Data? = nil) throws(OutboxError) -> [RecordWrite] {
        var seen = Set<RecordKey>()
        var writes: [RecordWrite] = []
        for (index, change) in changes.enumerated() {
            let key = change.key
            let field = "changes[\(index)]"
            if let problem = key.problem { throw .invalidRequest(field: "\(field).key.\(problem.field)", problem: problem.problem) }
            if let business, !key.business.utf8.elementsEqual(business.utf8) {
                throw .invalidRequest(field: "\(field).key.business", problem: "is \"\(key.business.prefix(64))\", not the write's business \"\(business.prefix(64))\"")
            }
            guard seen.insert(key).inserted else {
                throw .invalidRequest(field: field, problem: "names \(key) again: a write changes each record once")
            }
            let policy = configuration.recordPolicy(for: key.type)
            if policy.isLocalOnly != local {
                throw .invalidRequest(field: "\(field).key.type", problem: local
                    ? "\"\(key.type)\" is not a local-only type: its changes go with the write that sends them (enqueue(_:changing:))"
                    : "\"\(key.type)\" is a local-only type: write it with writeLocal(_:), never with a write that sends")
            }
            if let value = change.value {
                guard value.count <= configuration.maxPayloadBytes else {
                    throw .invalidRequest(field: "\(field).value", problem: "is \(value.count) bytes, over the limit of \(configuration.maxPayloadBytes)")
                }
                if value != payload {
                    do {
                        try JSONNode.check(Array(value))
                    } catch {
                        throw .invalidRequest(field: "\(field).value", problem: "must be JSON: \(error.reason)")
                    }
                }
            }
            writes.append(RecordWrite(key: key, value: change.value, schemaVersion: policy.schemaVersion))
        }
        return writes
    }

    /// The changes of `old`, which move to the operation that replaces it.
    func inheritedChanges(of old: OperationState) throws -> [RecordWrite] {
        guard !old.records.isEmpty else { return [] }
        let schema = store.schema
        return try store.read { txn in try schema.enqueued(of: old, in: txn).changes }.map { write in
            var plain = write
            plain.sealedValue = nil
            return plain
        }
    }
}

extension OutboxChanges.Change {
    /// Whether the commit may have changed a record of `business` and `type`.
    func touchesRecords(business: String, type: String) -> Bool {
        records.contains { $0.business.utf8.elementsEqual(business.utf8) && $0.type.utf8.elementsEqual(type.utf8) }
    }
}
