import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage

/// The record store's reads and writes, inside a transaction.
extension JournalSchema {
    /// Writes `write` into the record store, brought by the event at `seq`: a base only when its
    /// revision is newer than the one stored (the base never moves back); a local record always.
    func store(_ write: RecordStoreWrite, seq: JournalSequence, at now: Date, in txn: borrowing LMDBTransaction) throws {
        let table = write.table == .base ? base : localRecords
        let stored = try txn.get(table, write.key)
        guard write.replaces(storedRevision: stored?.revision) else { return }
        var entry = RecordStoreEntry(
            revision: write.revision, learntAt: now, seq: seq, schemaVersion: write.schemaVersion,
            valueHash: write.value.map { SHA256Digest(of: $0) }
        )
        if let value = write.value {
            if let sealing = sealing.sealing {
                entry.sealedValue = sealing.sealStoredValue(value, table: write.table.rawValue, key: write.key)
            } else {
                entry.value = value
            }
        }
        try txn.put(table, write.key, entry)
    }

    /// A record's server base, its value opened when the journal is sealed and the key known.
    func serverBase(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> RecordStoreEntry? {
        try opened(try txn.get(base, key), table: .base, key: key)
    }

    /// A local-only record, opened likewise.
    func localRecord(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> RecordStoreEntry? {
        try opened(try txn.get(localRecords, key), table: .local, key: key)
    }

    /// `entry` with its sealed value opened when the key is known; as stored otherwise.
    func opened(_ entry: RecordStoreEntry?, table: RecordStoreWrite.Table, key: RecordKey) throws -> RecordStoreEntry? {
        guard var entry, let sealed = entry.sealedValue, let sealing = sealing.sealing else { return entry }
        entry.value = try sealing.unsealStoredValue(sealed, table: table.rawValue, key: key)
        entry.sealedValue = nil
        return entry
    }

    /// The writes whose change a record's view may show (`record-writes`), in the order the
    /// member made them.
    func recordWriteIDs(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> [OperationID] {
        var ids: [OperationID] = []
        try txn.scan(recordWrites, leading: key.bytes) { entry in
            ids.append(try entry.value())
            return .next
        }
        return ids
    }

    /// Every write of a record still in the journal (`record-ops`), oldest first.
    func recordOpIDs(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> [OperationID] {
        var ids: [OperationID] = []
        try txn.scan(recordOps, leading: key.bytes) { entry in
            ids.append(try entry.value())
            return .next
        }
        return ids
    }

    /// The change `operation` made to `key`, read from its `enqueued` event (at `seq`), its value
    /// opened when the journal is sealed and the key known.
    func recordChange(_ key: RecordKey, of state: OperationState, in txn: borrowing LMDBTransaction) throws -> RecordWrite? {
        guard let event = try self.event(state.firstSeq, in: txn), case .enqueued(let enqueued) = event.body else { return nil }
        return enqueued.changes.first { $0.key == key }
    }
}
