// Kept in one file: the record store's tables as the schema writes and reads them (a server base,
// a local record, each record's writes, its view and history), which share their lookups and their
// sealing; what a settled write lets go is in JournalSchema+RecordsLetGo.

import Foundation
import OutboxCore
import OutboxWire
import OutboxCrypto
import OutboxStorage

/// The record store's reads and writes, inside a transaction.
extension JournalSchema {
    /// Writes `write` into the record store, brought by the event at `seq`: a base only when its
    /// revision is newer than the one stored (the base never moves back); a local record always.
    /// A base goes to the generation the member sees and, while a resnapshot stages the other,
    /// there too, so the swap never takes a record back behind an answer that landed meanwhile,
    /// unless the snapshot already holds what the answer saw (``FeedStaging/covers(_:visibleAt:)``).
    /// - Parameter visibleAt: the answer's feed position, when it brought the write.
    /// - Parameter row: the business's feed row as this transaction holds it (read once by the
    ///   caller for all of an event's writes: a page's 500 share one read).
    func store(_ write: RecordStoreWrite, seq: JournalSequence, at now: Date, visibleAt: FeedPosition?, row: FeedRow?,
               in txn: borrowing LMDBTransaction) throws {
        guard write.table == .base else { return try store(write, seq: seq, at: now, into: localRecords, in: txn) }
        try store(write, seq: seq, at: now, into: baseTable(generation: row?.generation ?? 0), in: txn)
        if let row, let staging = row.staging, !staging.covers(write.key, visibleAt: visibleAt) {
            try store(write, seq: seq, at: now, into: baseTable(generation: row.otherGeneration), in: txn)
        }
    }

    /// Whether an answer's base write is one the business's feed has already passed: the answer
    /// names a position (``AttemptFinished/visibleAt``) at or before the feed's cursor, or of an
    /// older epoch. The feed then holds the record's state from that position on, newer than the
    /// answer (a stored answer replayed late, after a delete and a resnapshot, would otherwise
    /// bring the deleted record back); the answer's confirmation stays in the journal.
    static func feedPassed(_ write: RecordStoreWrite, visibleAt: FeedPosition?, row: FeedRow?) -> Bool {
        guard write.table == .base, let visibleAt, let cursor = row?.cursor else { return false }
        return visibleAt.isDelivered(by: cursor)
    }

    /// Writes `write` into `table` by the same rule.
    func store(_ write: RecordStoreWrite, seq: JournalSequence, at now: Date, into table: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>,
               in txn: borrowing LMDBTransaction) throws {
        let storedRevision = try write.key.bytes.withUnsafeBytes { key in
            try txn.withValue(table, encodedKey: key) { try $0.map(JournalCodec.Record.revision) }
        }
        guard write.replaces(storedRevision: storedRevision) else { return }
        var entry = RecordStoreEntry(
            revision: write.revision, learntAt: now, seq: seq, schemaVersion: write.schemaVersion,
            valueHash: write.value.map { write.valueHash ?? SHA256Digest(of: $0) }
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

    /// Removes every server base of one business and type, in both generations.
    func dropBase(business: String, type: String, in txn: borrowing LMDBTransaction) throws {
        for table in [base, stagedBase] {
            var keys: [[UInt8]] = []
            try txn.scan(table, leading: RecordKey.scopeBytes(business: business, type: type)) { entry in
                keys.append(Array(entry.keyBytes))
                return .next
            }
            for key in keys { try txn.delete(table, encodedKey: key) }
        }
    }

    /// A record's server base (in the generation the member sees), its value opened when the
    /// journal is sealed and the key known.
    func serverBase(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> RecordStoreEntry? {
        try opened(try txn.get(activeBase(business: key.business, in: txn), key), table: .base, key: key)
    }

    /// A local-only record, opened likewise.
    func localRecord(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> RecordStoreEntry? {
        try opened(try txn.get(localRecords, key), table: .local, key: key)
    }

    /// `entry` with its sealed value opened when the key is known; as stored otherwise.
    package func opened(_ entry: RecordStoreEntry?, table: RecordStoreWrite.Table, key: RecordKey) throws -> RecordStoreEntry? {
        guard var entry, let sealed = entry.sealedValue, let sealing = sealing.sealing else { return entry }
        entry.value = try sealing.unsealStoredValue(sealed, table: table.rawValue, key: key)
        entry.sealedValue = nil
        return entry
    }

    /// The writes whose change a record's view may show (`record-writes`), in the order the
    /// member made them, each with the seq of its `enqueued`.
    func recordWriteIDs(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> [(id: OperationID, firstSeq: JournalSequence)] {
        var ids: [(id: OperationID, firstSeq: JournalSequence)] = []
        try txn.scan(recordWrites, leading: key.bytes) { entry in
            let firstSeq = try JournalCodec.Seq.decode(UnsafeRawBufferPointer(rebasing: entry.keyBytes.suffix(8)))
            ids.append((try entry.value(), firstSeq))
            return .next
        }
        return ids
    }

    /// What the view reads of one write of `key`: from its status alone when it is pending, else
    /// from its whole state; its change read from its `enqueued` record without the request.
    func viewWrite(_ id: OperationID, firstSeq: JournalSequence, key: RecordKey, in txn: borrowing LMDBTransaction) throws -> RecordView.Write {
        let status = try JournalCodec.ID.withEncoded(id) { encoded in
            try txn.withValue(operations, encodedKey: encoded) { $0.flatMap(StateCodec.status(of:)) }
        }
        let change = try recordChange(key, operation: id, firstSeq: firstSeq, in: txn)
        if let status, RecordView.Write.readsStatusAlone(status) {
            // A queued write that carries files says how far they got: its whole state, read only
            // for a write in the `attachments` index.
            if status == .queued, try txn.get(attachments, firstSeq) != nil, let state = try state(id, in: txn) {
                var write = RecordView.Write(state: state, change: change)
                if let file = state.pendingAttachment, write.upload != nil {
                    write.upload!.landed = min(file.manifest.size, write.upload!.landed + uploadProgress.sending(file))
                }
                return write
            }
            return RecordView.Write(pending: id, status: status, change: change)
        }
        guard let state = try state(id, in: txn) else {
            throw OutboxError.projectionCorrupt(reason: "record \(key) lists operation \(id), which the journal does not hold")
        }
        // A conflict's server value is sealed with the journal: opened, as the member reads it.
        return RecordView.Write(state: opened(state), change: change)
    }

    /// The change operation `id` made to `key`, from its `enqueued` record at `firstSeq`, its
    /// value opened when the journal is sealed and the key known.
    func recordChange(_ key: RecordKey, operation id: OperationID, firstSeq: JournalSequence, in txn: borrowing LMDBTransaction) throws -> RecordWrite? {
        guard let record = try txn.get(events, firstSeq) else { return nil }
        guard var change = try RecordCodec.change(to: key, of: record, seq: firstSeq) else { return nil }
        if let sealed = change.sealedValue, let sealing = sealing.sealing {
            change.value = try sealing.unsealRecordValue(sealed, id: id, key: key)
            change.sealedValue = nil
        }
        return change
    }

    /// Every write of a record still in the journal: those its view no longer shows
    /// (`record-ops`), then those it may show (`record-writes`). Each write is in one of the two.
    func recordOpIDs(_ key: RecordKey, in txn: borrowing LMDBTransaction) throws -> [OperationID] {
        var ids: [OperationID] = []
        try txn.scan(recordOps, leading: key.bytes) { entry in
            ids.append(try entry.value())
            return .next
        }
        return try ids + recordWriteIDs(key, in: txn).map(\.id)
    }

    /// The change `operation` made to `key`, read from its `enqueued` event (at `seq`), its value
    /// opened when the journal is sealed and the key known.
    func recordChange(_ key: RecordKey, of state: OperationState, in txn: borrowing LMDBTransaction) throws -> RecordWrite? {
        guard let event = try self.event(state.firstSeq, in: txn), case .enqueued(let enqueued) = event.body else { return nil }
        return enqueued.changes.first { $0.key == key }
    }
}

// MARK: The member's view

extension JournalSchema {
    /// The member's view of `key` in one snapshot: its base (or local value), and every write
    /// whose change it may show, with their states. `nil` when the journal holds nothing of it.
    func record(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy, in txn: borrowing LMDBTransaction) throws -> LocalRecord? {
        let entry = try txn.get(policy.isLocalOnly ? localRecords : activeBase(business: key.business, in: txn), key)
        var feed: FeedPosition?? = nil
        return try view(key, entry: entry, writes: recordWriteIDs(key, in: txn), policy: policy, feed: &feed, in: txn)
    }

    /// The records of one business and type in the order of their ids' bytes, after `after`: the
    /// member's view of each, pending creates included, records deleted in the view left out.
    ///
    /// Built straight from two cursors, a batch at a time: the store's table (bases, or local
    /// records) and `record-writes`, merged by the ids' bytes; each view from the entries the
    /// cursors read, with no second lookup.
    /// - Returns: at most `limit` records, and whether more may follow.
    func records(business: String, type: String, after: String?, limit: Int, policy: OutboxConfiguration.RecordTypePolicy,
                 in txn: borrowing LMDBTransaction) throws -> (records: [LocalRecord], more: Bool) {
        let scope = RecordKey.scopeBytes(business: business, type: type)
        // The first key past `after`: the id's bytes and one byte more than the terminator.
        var storeFrom: [UInt8]? = after.map { scope + Array($0.utf8) + [1] }
        var writeFrom = storeFrom
        let store = policy.isLocalOnly ? localRecords : try activeBase(business: business, in: txn)
        // Each entry is moved out of its batch into its view, not copied: the batch never holds
        // a second reference to a value, so building the view retains and releases nothing more.
        var stored: [(id: [UInt8], entry: RecordStoreEntry?)] = [], storedAt = 0
        var written: [(id: [UInt8], writes: [(id: OperationID, firstSeq: JournalSequence)])] = [], writtenAt = 0
        var feed: FeedPosition?? = nil
        var storeDone = false
        var writeDone = policy.isLocalOnly
        var found: [LocalRecord] = []
        found.reserveCapacity(min(limit, 1024))
        while true {
            // A side is refilled as soon as it runs out, so each side's front is its smallest id
            // not yet served, and the smaller front is the next record.
            if storedAt == stored.count, !storeDone {
                (stored, storeFrom, storeDone) = try Self.storedBatch(store, scope: scope, from: storeFrom, in: txn)
                storedAt = 0
            }
            if writtenAt == written.count, !writeDone {
                (written, writeFrom, writeDone) = try Self.writtenBatch(recordWrites, scope: scope, from: writeFrom, in: txn)
                writtenAt = 0
            }
            let hasStored = storedAt < stored.count
            let hasWritten = writtenAt < written.count
            // Which fronts hold the next id: both when they are the same record.
            let takeStored: Bool, takeWritten: Bool
            switch (hasStored, hasWritten) {
            case (false, false):
                return (found, false)
            case (true, false): (takeStored, takeWritten) = (true, false)
            case (false, true): (takeStored, takeWritten) = (false, true)
            case (true, true):
                let order = Self.order(stored[storedAt].id, written[writtenAt].id)
                (takeStored, takeWritten) = (order <= 0, order >= 0)
            }
            var entry: RecordStoreEntry?
            var writes: [(id: OperationID, firstSeq: JournalSequence)] = []
            let id: String
            if takeStored {
                swap(&entry, &stored[storedAt].entry)
                id = String(decoding: stored[storedAt].id, as: UTF8.self)
                storedAt += 1
            } else {
                id = String(decoding: written[writtenAt].id, as: UTF8.self)
            }
            if takeWritten {
                swap(&writes, &written[writtenAt].writes)
                writtenAt += 1
            }
            let key = RecordKey(business: business, type: type, id: id)
            guard let record = try view(key, entry: entry, writes: writes, policy: policy, feed: &feed, in: txn), record.exists else { continue }
            if found.count == limit { return (found, true) }
            found.append(record)
        }
    }

    /// How two ids' bytes compare: below 0 when `left` comes first, 0 when they are the same.
    private static func order(_ left: [UInt8], _ right: [UInt8]) -> Int {
        left.withUnsafeBufferPointer { left in
            right.withUnsafeBufferPointer { right in
                let common = min(left.count, right.count)
                if common > 0, let l = left.baseAddress, let r = right.baseAddress {
                    let compared = memcmp(l, r, common)
                    if compared != 0 { return Int(compared) }
                }
                return left.count - right.count
            }
        }
    }

    /// A record's view from its store entry (as stored: opened here) and its writes, read by key
    /// (``record(_:policy:in:)``) or by the query's cursors.
    /// - Parameter feed: the business's feed cursor once read (`nil`: not read yet), read here
    ///   the first time a synced write needs it.
    private func view(_ key: RecordKey, entry: consuming RecordStoreEntry?, writes: [(id: OperationID, firstSeq: JournalSequence)],
                      policy: OutboxConfiguration.RecordTypePolicy, feed: inout FeedPosition??, in txn: borrowing LMDBTransaction) throws -> LocalRecord? {
        // Moved, not copied; opened only when sealed.
        var opened = entry
        if opened?.sealedValue != nil { opened = try self.opened(opened, table: policy.isLocalOnly ? .local : .base, key: key) }
        let stored: RecordView.Stored
        if policy.isLocalOnly {
            stored = RecordView.Stored(base: nil, value: opened?.value, schemaVersion: opened?.schemaVersion, valueHash: .some(opened?.valueHash))
        } else {
            let base = opened.map { LocalRecord.ServerBase(value: $0.value, revision: $0.revision, learntAt: $0.learntAt, seq: $0.seq, valueHash: .some($0.valueHash)) }
            stored = RecordView.Stored(base: base, value: opened?.value, schemaVersion: opened?.schemaVersion, valueHash: .some(opened?.valueHash))
        }
        let viewWrites = try writes.map { try viewWrite($0.id, firstSeq: $0.firstSeq, key: key, in: txn) }
        guard stored.base != nil || stored.valueHash != nil || !viewWrites.isEmpty else { return nil }
        if feed == nil, viewWrites.contains(where: { $0.status == .synced }) { feed = .some(try feedRow(business: key.business, in: txn)?.cursor) }
        return RecordView.view(key, stored: stored, isLocalOnly: policy.isLocalOnly, writes: viewWrites, feed: feed ?? nil,
                               schemaVersion: policy.schemaVersion, upgrade: policy.upgrade)
    }

    /// The next store entries within `scope` from `start`, a batch, each with its id's bytes.
    private static func storedBatch(_ table: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>, scope: [UInt8], from start: [UInt8]?,
                                    in txn: borrowing LMDBTransaction) throws -> ([(id: [UInt8], entry: RecordStoreEntry?)], [UInt8]?, Bool) {
        var batch: [(id: [UInt8], entry: RecordStoreEntry?)] = []
        batch.reserveCapacity(Self.queryBatch)
        var done = true
        try txn.scan(table, leading: scope, from: start) { entry in
            let key = entry.keyBytes
            guard key.count > scope.count, key.last == 0 else { throw LMDBCodecError(reason: "a damaged record key") }
            batch.append((Array(key[scope.count..<(key.count - 1)]), try entry.value()))
            if batch.count >= Self.queryBatch {
                done = false
                return .stop
            }
            return .next
        }
        return (batch, batch.last.map { scope + $0.id + [1] } ?? start, done)
    }

    /// The next `record-writes` entries within `scope` from `start`, grouped by record, a batch.
    private static func writtenBatch(_ table: LMDBTable<JournalCodec.RecordWriteKey, JournalCodec.ID>, scope: [UInt8], from start: [UInt8]?,
                                     in txn: borrowing LMDBTransaction) throws -> ([(id: [UInt8], writes: [(id: OperationID, firstSeq: JournalSequence)])], [UInt8]?, Bool) {
        var batch: [(id: [UInt8], writes: [(id: OperationID, firstSeq: JournalSequence)])] = []
        var done = true
        try txn.scan(table, leading: scope, from: start) { entry in
            let key = entry.keyBytes
            guard key.count > scope.count + 17, key[key.count - 17] == 0 else { throw LMDBCodecError(reason: "a damaged record write key") }
            let id = Array(key[scope.count..<(key.count - 17)])
            let write = (id: try entry.value(), firstSeq: try JournalCodec.Seq.decode(UnsafeRawBufferPointer(rebasing: key.suffix(8))))
            if batch.last?.id == id {
                batch[batch.count - 1].writes.append(write)
                return .next
            }
            // A whole record's writes stay in one batch: stop only between records.
            if batch.count >= Self.queryBatch {
                done = false
                return .stop
            }
            batch.append((id, [write]))
            return .next
        }
        return (batch, batch.last.map { scope + $0.id + [1] } ?? start, done)
    }

    /// How many records each cursor reads at a time.
    private static let queryBatch = 64
}


extension JournalStore {
    /// The records whose view `events` (just committed) may have changed: the records of every
    /// write they touch, and those they confirm, write locally or acknowledge.
    func recordsTouched(by events: [JournalEvent]) throws(OutboxError) -> Set<RecordKey> {
        var keys = Set<RecordKey>()
        var operations = Set<OperationID>()
        for event in events {
            switch event.body {
            case .enqueued(let enqueued): keys.formUnion(enqueued.changes.map(\.key))
            case .attemptFinished(let finished): keys.formUnion(finished.confirmations.map(\.key))
            case .recordsWritten(let written): keys.formUnion(written.writes.map(\.key))
            case .rollbackAcknowledged(let acknowledged): keys.insert(acknowledged.key)
            default: break
            }
            if let id = event.operationID, event.kind != .enqueued { operations.insert(id) }
        }
        guard !operations.isEmpty else { return keys }
        let schema = self.schema
        return try read { txn in
            for id in operations {
                if let state = try schema.state(id, in: txn) { keys.formUnion(state.records) }
            }
            return keys
        }
    }
}

// MARK: The proof

extension JournalSchema {
    /// Every event that made `key`'s value, in journal order: the changes of each write of it
    /// still in the journal, each status change of those writes, what answers confirmed of it,
    /// the local write and the event that brought its base.
    func recordHistory(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy, showingValues: Bool, in txn: borrowing LMDBTransaction) throws -> LocalRecord.History {
        let record = try self.record(key, policy: policy, in: txn)
        var entries: [LocalRecord.History.Entry] = []
        var seen = Set<JournalSequence>()
        for id in try recordOpIDs(key, in: txn) {
            guard let state = try state(id, in: txn) else { continue }
            for seq in state.eventSeqs {
                guard let event = try event(seq, in: txn), seen.insert(seq).inserted else { continue }
                entries.append(Self.entry(event, key: key))
            }
        }
        let storeSeq = policy.isLocalOnly ? try localRecord(key, in: txn)?.seq : try serverBase(key, in: txn)?.seq
        if let storeSeq, !seen.contains(storeSeq), let event = try event(storeSeq, in: txn) {
            entries.append(Self.entry(event, key: key))
        }
        entries.sort { $0.seq < $1.seq }
        return LocalRecord.History(key: key, record: record, entries: entries,
                             verdict: LocalRecord.History.verdict(for: record, key: key, showingValues: showingValues))
    }

    /// One event in the words of a record's history.
    private static func entry(_ event: JournalEvent, key: RecordKey) -> LocalRecord.History.Entry {
        func made(_ what: String, revision: UInt64? = nil, hash: SHA256Digest? = nil) -> LocalRecord.History.Entry {
            LocalRecord.History.Entry(seq: event.seq, recordedAt: event.recordedAt, kind: event.kind, operation: event.operationID,
                                what: what, revision: revision, valueHash: hash)
        }
        switch event.body {
        case .enqueued(let enqueued):
            guard let change = enqueued.changes.first(where: { $0.key == key }) else { return made("saved") }
            return change.isDelete ? made("the member deleted it") : made("the member saved a value", hash: change.valueHash)
        case .attemptStarted(let started):
            return made("sent (attempt \(started.attempt))" + (started.sentRevision.map { ", If-Match revision \($0)" } ?? ""))
        case .attemptFinished(let finished):
            if let confirmation = finished.confirmations.first(where: { $0.key == key }) {
                let what = switch confirmation.source {
                case .answer: "the server confirmed its record"
                case .written: "the server confirmed the value written"
                case .conflict: "the server answered with its own record: changed elsewhere"
                case .pulled: "the server's change, pulled"
                case .snapshot: "the server's record, fetched again whole"
                }
                return made(confirmation.valueHash == nil ? "the server confirmed it deleted" : what,
                            revision: confirmation.revision, hash: confirmation.valueHash)
            }
            return made("answered: \(finished.disposition.rawValue)" + (finished.errorCode.map { " (\($0))" } ?? ""))
        case .recordsWritten(let written):
            let write = written.writes.first { $0.key == key }
            return write?.isDelete == true ? made("deleted on the phone (local-only)") : made("written on the phone (local-only)", hash: write?.valueHash)
        case .withdrawn: return made("withdrawn: the form showed the server's error")
        case .discarded(let discarded): return made("discarded (\(discarded.reason.rawValue)): rolled back")
        case .requeued: return made("retried: the member's value shows again")
        case .approvalDecided(let decision): return made(decision.approved ? "approved" : "rejected by the approver: rolled back")
        case .superseded(let superseded): return made("replaced by \(String(superseded.by.uuidString.prefix(8))): its change moved there")
        case .rebased(let rebased): return made("rebased onto the server's revision \(rebased.baseRevision)")
        case .dependencyEnded: return made("blocked: a write it depends on ended: rolled back")
        case .heldOnRollback(let held): return made("held: made on \(String(held.builtOn.uuidString.prefix(8))), which was rolled back")
        case .rollbackAcknowledged: return made("the member saw the rollback")
        case .deletedOnServer(let deleted): return made("conflicted: deleted on the server while the change waited", revision: deleted.revision)
        case .pageApplied(let page):
            let pulled = page.confirmations.last { $0.key == key }
            return made((pulled?.valueHash == nil ? "pulled: deleted on the server" : "pulled: the server's change")
                        + " (page \(page.from) -> \(page.to))", revision: pulled?.revision, hash: pulled?.valueHash)
        case .snapshotPageStaged(let page):
            let staged = page.confirmations.last { $0.key == key }
            return made("staged by the resnapshot (page \(page.page), read at \(page.position))", revision: staged?.revision, hash: staged?.valueHash)
        case .resnapshotFinished(let finished):
            if let vanished = finished.vanished.first(where: { $0.key == key }) {
                return made("gone from the server's snapshot: deleted at the swap", revision: vanished.revision)
            }
            return made("the resnapshot swapped in (feed from \(finished.cursor))")
        case .attemptAbandoned: return made("the app ended mid-send: sent again under the same key")
        default: return made(event.kind.rawValue)
        }
    }
}
