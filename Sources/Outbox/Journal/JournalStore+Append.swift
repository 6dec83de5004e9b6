import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// Appending: the group commit's transaction.
extension JournalStore {
    /// Appends units of events in one write transaction: the group commit.
    ///
    /// Each unit is folded first and written only if every one of its events is legal, so a unit
    /// lands whole or not at all; an illegal unit fails alone and the others still commit. Units
    /// that arrive while the transaction runs join it: `joining` hands over one more each time it
    /// is asked, until it answers `nil` or ``JournalWriter/maxUnitsPerCommit`` are in.
    ///
    /// The records were encoded on their producers' tasks; here each gets its seq and moment, and
    /// is written straight into its page. Each operation's state is written once, with the index
    /// entries that changed, however many events of the transaction touch it, and the counters
    /// once for them all.
    ///
    /// With `flush: false` the commit is not flushed to disk (``LMDBEnvironment/write(flushing:_:)``):
    /// it survives the app ending, not the device losing power, until the next flushing commit.
    /// - Returns: for each unit, the given ones and then those that joined, its events as
    ///   committed or the reason it was refused.
    /// - Throws: when the transaction itself fails (the map or disk is full, an I/O error):
    ///   then nothing of any unit was written.
    func append(
        _ units: [[PreparedDraft]],
        joining: () -> [PreparedDraft]? = { nil },
        flush: Bool = true,
        at now: Date,
        uptime: Uptime? = nil
    ) throws(OutboxError) -> [Result<[JournalEvent], OutboxError>] {
        precondition(!options.readOnly, "append on a read-only journal")
        // Every unit of the transaction, those that joined included: when a full map makes
        // LMDB run it again, it writes them all again, and asks for more only after.
        var all = units
        let remembered = committedCounters.withLock { $0 }
        let (results, counters) = try Self.run(options) { [schema] in
            try environment.write(flushing: flush) { txn in
                var batch = try AppendBatch(schema: schema, now: now, uptime: uptime, counters: remembered, in: txn)
                var results: [Result<[JournalEvent], OutboxError>] = []
                results.reserveCapacity(all.count)
                var index = 0
                while true {
                    if index == all.count {
                        guard all.count < JournalWriter.maxUnitsPerCommit, let unit = joining() else { break }
                        all.append(unit)
                    }
                    results.append(try batch.add(all[index], in: txn))
                    index += 1
                }
                try batch.finish(in: txn)
                return (results, batch.counters)
            }
        }
        // Committed: the next append starts from these.
        committedCounters.withLock { $0 = counters }
        return results
    }

    /// Appends units of drafts, encoded here: for code that is already on the writer's queue.
    func append(_ units: [[Draft]], flush: Bool = true, at now: Date, uptime: Uptime? = nil) throws(OutboxError) -> [Result<[JournalEvent], OutboxError>] {
        try append(units.map { $0.map(PreparedDraft.init) }, flush: flush, at: now, uptime: uptime)
    }
}

/// What one append transaction has changed so far: the seq it reached, the counters, and each
/// operation it touched, as stored before it and as it stands now.
private struct AppendBatch {
    let schema: JournalSchema
    let now: Date
    let uptime: Uptime?
    var lastSeq: JournalSequence
    var counters: JournalCounters
    /// Each operation touched, in the order first touched, and where it sits in that list.
    var touched: [(before: OperationState?, after: OperationState)] = []
    var position: [OperationID: Int] = [:]
    /// The states one unit folded, before it is known to land.
    var folding: [(id: OperationID, before: OperationState?, after: OperationState)] = []
    /// Each feed row the transaction's landed units wrote, as they left it.
    var feedRows: [ExactString: FeedRow] = [:]
    var scratch = Projection.Scratch()

    /// - Parameter counters: the counters the last append committed, when known.
    init(schema: JournalSchema, now: Date, uptime: Uptime?, counters: JournalCounters?, in txn: borrowing LMDBTransaction) throws {
        self.schema = schema
        self.now = now
        self.uptime = uptime
        lastSeq = try schema.lastSeq(in: txn)
        self.counters = try counters ?? schema.counters(in: txn)
        position.reserveCapacity(64)
        touched.reserveCapacity(64)
    }

    /// Folds one unit and, when every event of it is legal, writes its records.
    /// - Returns: its events, or the reason it was refused (nothing of it written).
    /// - Throws: when the storage fails: the transaction is lost.
    mutating func add(_ given: [JournalStore.PreparedDraft], in txn: borrowing LMDBTransaction) throws -> Result<[JournalEvent], OutboxError> {
        var unit = given
        var events: [JournalEvent] = []
        events.reserveCapacity(unit.count)
        folding.removeAll(keepingCapacity: true)
        var movedFeeds: [ExactString: FeedRow] = [:]
        do {
            var seq = lastSeq
            var index = 0
            while index < unit.count {
                seq = seq.next
                if let feedWrite = unit[index].draft.feedWrite {
                    // The row is checked before anything of the step is written: a page asked
                    // from a cursor another pull has since moved applies nothing.
                    let business = ExactString(feedWrite.business)
                    let stored = try movedFeeds[business] ?? feedRows[business] ?? schema.feedRow(business: feedWrite.business, in: txn)
                    switch feedWrite {
                    case .move(_, let expectFrom, let to):
                        guard stored?.cursor == expectFrom, stored?.staging == nil else {
                            return .failure(.feedMoved(business: feedWrite.business, pageFrom: expectFrom?.text, stored: stored?.cursor?.text))
                        }
                        var row = stored ?? FeedRow(cursor: nil, pageSeq: seq)
                        row.cursor = to
                        row.pageSeq = seq
                        movedFeeds[business] = row
                        // A record the page deleted: each write of it still waiting learns so.
                        unit += try deletedOnServer(unit[index].draft.storeWrites, tombstoneSeq: seq,
                                                    base: schema.baseTable(generation: row.generation), in: txn).map(JournalStore.PreparedDraft.init)
                    case .replace(_, let expect, var row):
                        guard stored.map({ var row = $0; row.pageSeq = expect?.pageSeq ?? row.pageSeq; return row }) == expect else {
                            return .failure(.feedMoved(business: feedWrite.business, pageFrom: expect?.cursor?.text, stored: stored?.cursor?.text))
                        }
                        row.pageSeq = seq
                        // A staging this event begins starts at it.
                        if row.staging?.startedSeq == .zero { row.staging?.startedSeq = seq }
                        movedFeeds[business] = row
                        if let expect, expect.staging != nil, row.staging == nil, row.generation != expect.generation {
                            // The swap: what vanished from under a pending write is deleted in the
                            // new base, and each write still waiting on it is asked about.
                            let (swap, conflicts) = try swapped(unit[index].draft, from: expect, tombstoneSeq: seq, in: txn)
                            unit[index] = JournalStore.PreparedDraft(swap)
                            unit += conflicts.map(JournalStore.PreparedDraft.init)
                        }
                    }
                }
                let prepared = unit[index]
                let event = JournalEvent(seq: seq, operationID: prepared.draft.operationID, recordedAt: now, uptime: uptime, body: prepared.draft.body)
                if let id = prepared.draft.operationID {
                    let before: OperationState?
                    let after: OperationState
                    if let local = folding.lastIndex(where: { $0.id == id }) {
                        before = folding[local].after
                        after = try Fold.apply(event, to: before)
                        folding[local].after = after
                    } else {
                        before = try position[id].map { touched[$0].after } ?? storedState(id, in: txn)
                        after = try Fold.apply(event, to: before)
                        folding.append((id, before, after))
                    }
                    // A write of records rolled back: the later writes of its records, made on its
                    // value, are held in the same commit, so that value never shows through them.
                    if let before, after.rolledBackSeq != nil, before.rolledBackSeq == nil {
                        unit += try heldOnRollback(after, in: txn).map(JournalStore.PreparedDraft.init)
                    }
                    // A write that was on its way when a tombstone of its record came back queued:
                    // the tombstone's question is asked now.
                    if before?.status == .syncing, after.status == .queued, !after.records.isEmpty {
                        unit += try deletedWhileSent(after, in: txn).map(JournalStore.PreparedDraft.init)
                    }
                }
                events.append(event)
                index += 1
            }
        } catch let error as OutboxError {
            return .failure(error)
        }
        for (prepared, event) in zip(unit, events) {
            try withUnsafeBytes(of: event.seq.rawValue.bigEndian) { key in
                try txn.put(schema.events.database, key: key, reservingValueOf: prepared.record.count, flags: .append) { record in
                    prepared.record.finish(into: record, seq: event.seq, recordedAt: now, uptime: uptime)
                    assert((try? schema.decode(Array(record), seq: event.seq)) == event, "record does not round-trip: \(event)")
                }
            }
            if let scope = prepared.draft.dropsBase {
                try schema.dropBase(business: scope.business, type: scope.type, in: txn)
                // The feed moved past the dropped records: the next pull fetches the type again.
                if var row = try schema.feedRow(business: scope.business, in: txn), !row.resync.contains(scope.type) {
                    row.resync.append(scope.type)
                    try txn.put(schema.feeds, scope.business, row)
                }
            }
            let visibleAt: FeedPosition? = if case .attemptFinished(let finished) = event.body { finished.visibleAt } else { nil }
            // Each business's feed row read once for the draft's writes: nothing in between moves it
            // (a page's own row lands last, below).
            var rows: [ExactString: FeedRow?] = [:]
            func row(_ business: String) throws -> FeedRow? {
                if let known = rows[ExactString(business)] { return known }
                let read = try schema.feedRow(business: business, in: txn)
                rows[ExactString(business)] = .some(read)
                return read
            }
            for write in prepared.draft.storeWrites {
                let row = write.table == .base ? try row(write.key.business) : nil
                guard !JournalSchema.feedPassed(write, visibleAt: visibleAt, row: row) else { continue }
                try schema.store(write, seq: event.seq, at: now, visibleAt: visibleAt, row: row, in: txn)
            }
            for write in prepared.draft.stagedWrites {
                // The generation the business's feed row does not show (as written so far).
                let generation = try row(write.key.business)?.otherGeneration ?? 1
                try schema.store(write, seq: event.seq, at: now, into: schema.baseTable(generation: generation), in: txn)
            }
            if let feedWrite = prepared.draft.feedWrite, let row = movedFeeds[ExactString(feedWrite.business)] {
                // Last of the step: the cursor lands with the changes it stands for.
                try txn.put(schema.feeds, feedWrite.business, row)
            }
            if event.operationID == nil {
                // Engine events are rare, and change no operation (a compaction appends through
                // `compact`): counted and projected at once.
                assert(event.kind != .compacted, "a compaction appended as a unit")
                try schema.projectEngineEvent(event, recordSize: prepared.record.count, counters: &counters, in: txn)
            } else {
                counters.events += 1
                counters.eventBytes += Int64(prepared.record.count)
            }
        }
        for (id, before, after) in folding {
            if let index = position[id] {
                touched[index].after = after
            } else {
                position[id] = touched.count
                touched.append((before, after))
            }
        }
        feedRows.merge(movedFeeds) { $1 }
        lastSeq = events.last?.seq ?? lastSeq
        return .success(events)
    }

    /// `deletedOnServer` for every write still waiting of each record a page deletes: the page's
    /// last change of the record a tombstone newer than its stored base. Which writes, by
    /// ``TombstoneConflict``.
    private func deletedOnServer(_ writes: [RecordStoreWrite], tombstoneSeq: JournalSequence,
                                 base: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>,
                                 in txn: borrowing LMDBTransaction) throws -> [JournalStore.Draft] {
        // Most pages delete nothing: then there is nothing to ask.
        guard writes.contains(where: { $0.table == .base && $0.value == nil }) else { return [] }
        var last: [RecordKey: RecordStoreWrite] = [:]
        for write in writes where write.table == .base {
            if let kept = last[write.key], kept.revision >= write.revision { continue }
            last[write.key] = write
        }
        var tombstones: [(key: RecordKey, revision: UInt64)] = []
        let deleted = last.values.filter { $0.value == nil }.map { (bytes: $0.key.bytes, write: $0) }
        for (_, write) in deleted.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            guard write.replaces(storedRevision: try txn.get(base, write.key)?.revision) else { continue }
            tombstones.append((write.key, write.revision))
        }
        return try deletedOnServer(tombstones, tombstoneSeq: tombstoneSeq, in: txn)
    }

    /// `deletedOnServer` for every write still waiting of each record deleted at `revision`.
    private func deletedOnServer(_ tombstones: [(key: RecordKey, revision: UInt64)], tombstoneSeq: JournalSequence,
                                 in txn: borrowing LMDBTransaction) throws -> [JournalStore.Draft] {
        var drafts: [JournalStore.Draft] = []
        for (key, revision) in tombstones {
            for (id, _) in try schema.recordWriteIDs(key, in: txn) {
                guard let current = try currentState(id, in: txn) else { continue }
                let deletes = try schema.recordChange(key, of: current, in: txn)?.isDelete ?? false
                let rule = TombstoneConflict.Write(status: current.status, deletes: deletes, firstSeq: current.firstSeq, isHeld: current.heldOn != nil)
                guard TombstoneConflict.decision(for: rule, tombstoneSeq: tombstoneSeq) == .conflict else { continue }
                drafts.append(JournalStore.Draft(operationID: id, body: .deletedOnServer(DeletedOnServer(key: key, revision: revision))))
            }
        }
        return drafts
    }

    /// `deletedOnServer` for a write back in the queue after an attempt, when a record it puts a
    /// value in was deleted in the base (by a pulled tombstone or a resnapshot's swap) after it
    /// was made: the question ``TombstoneConflict`` deferred while it was on its way.
    private func deletedWhileSent(_ state: OperationState, in txn: borrowing LMDBTransaction) throws -> [JournalStore.Draft] {
        for key in state.records {
            guard let base = try txn.get(schema.activeBase(business: key.business, in: txn), key), base.valueHash == nil,
                  try schema.recordChange(key, of: state, in: txn)?.isDelete == false else { continue }
            let rule = TombstoneConflict.Write(status: state.status, deletes: false, firstSeq: state.firstSeq, isHeld: state.heldOn != nil)
            guard TombstoneConflict.decision(for: rule, tombstoneSeq: base.seq) == .conflict else { continue }
            return [JournalStore.Draft(operationID: state.id, body: .deletedOnServer(DeletedOnServer(key: key, revision: base.revision)))]
        }
        return []
    }

    /// A resnapshot's swap, completed in its transaction: each record a pending write changes that
    /// the old base holds live and the staged one does not hold at all is deleted in the staged base at its
    /// old revision (so a write on its way settles against it, and a re-creation at a higher
    /// revision still wins; at 0 into another epoch, or at a first pull when the answer that
    /// brought it named no position of the snapshot's epoch), named in the event, and each write
    /// still waiting on it is asked about. Costs a read per record with pending writes (and, at a
    /// first pull, one of the event behind each vanished one), never one per record of the base.
    private func swapped(_ draft: JournalStore.Draft, from row: FeedRow, tombstoneSeq: JournalSequence,
                         in txn: borrowing LMDBTransaction) throws -> (JournalStore.Draft, [JournalStore.Draft]) {
        guard case .resnapshotFinished(var finished) = draft.body else { return (draft, []) }
        let old = schema.baseTable(generation: row.generation)
        let staged = schema.baseTable(generation: row.otherGeneration)
        var keys: [RecordKey] = []
        let scope = finished.type.map { RecordKey.scopeBytes(business: finished.business, type: $0) } ?? RecordKey.businessScopeBytes(finished.business)
        try txn.scan(schema.recordWrites, leading: scope) { entry in
            let (key, _, _) = try entry.key()
            if keys.last != key { keys.append(key) }
            return .next
        }
        var swap = draft
        var tombstones: [(key: RecordKey, revision: UInt64)] = []
        // Into a new epoch the old revisions mean nothing: a vanished record is deleted at 0, so
        // the new epoch's own revisions of it are all newer.
        let sameEpoch = finished.type != nil ? true : row.cursor.map { $0.epoch == finished.cursor.epoch }
        for key in keys {
            guard let before = try txn.get(old, key), before.valueHash != nil else { continue }
            // Staged at all, the new base knows the record: live from the snapshot, or deleted by
            // the member's own delete answered while it staged (nothing to ask anyone about).
            if try txn.get(staged, key) != nil { continue }
            let revision = sameEpoch ?? answeredInEpoch(finished.cursor.epoch, seq: before.seq, in: txn) ? before.revision : 0
            finished.vanished.append(RecordConfirmation(key: key, revision: revision, valueHash: nil, source: .snapshot))
            swap.stagedWrites.append(RecordStoreWrite(table: .base, key: key, revision: revision, schemaVersion: before.schemaVersion, value: nil))
            tombstones.append((key, revision))
        }
        swap.body = .resnapshotFinished(finished)
        return (swap, try deletedOnServer(tombstones, tombstoneSeq: tombstoneSeq, in: txn))
    }

    /// At a first pull (no cursor), whether the answer that brought a base row (the event at
    /// `seq`) was of `epoch`: only when it named a feed position of it. A base answers built is
    /// otherwise of an epoch the phone cannot tell (a 412's `current` names no position, and
    /// compaction may have taken the event), and deleted at its revision, a record a restored
    /// server holds again at that revision or below would stay deleted for good (seed 1000449).
    private func answeredInEpoch(_ epoch: UInt64, seq: JournalSequence, in txn: borrowing LMDBTransaction) -> Bool {
        guard case .attemptFinished(let answer)? = try? schema.event(seq, in: txn)?.body, let position = answer.visibleAt else { return false }
        return position.epoch == epoch
    }

    /// `heldOnRollback` for every queued write of `rolledBack`'s records made after it (in the
    /// member's order): they were made on its value. Read from the stored index and from the
    /// writes this transaction folded so far.
    private func heldOnRollback(_ rolledBack: OperationState, in txn: borrowing LMDBTransaction) throws -> [JournalStore.Draft] {
        var later = Set<OperationID>()
        for key in rolledBack.records {
            try txn.scan(schema.recordWrites, leading: key.bytes) { entry in
                let (_, laneSeq, _) = try entry.key()
                if laneSeq > rolledBack.laneSeq { later.insert(try entry.value()) }
                return .next
            }
        }
        let inBatch = touched.map(\.after) + folding.map(\.after)
        for state in inBatch where state.laneSeq > rolledBack.laneSeq && state.records.contains(where: rolledBack.records.contains) {
            later.insert(state.id)
        }
        var drafts: [JournalStore.Draft] = []
        for id in later.sorted() where id != rolledBack.id {
            guard let current = try currentState(id, in: txn), current.status == .queued else { continue }
            drafts.append(JournalStore.Draft(operationID: id, body: .heldOnRollback(HeldOnRollback(builtOn: rolledBack.id))))
        }
        return drafts
    }

    /// Writes each touched operation's state once, its changed index entries, and the counters.
    mutating func finish(in txn: borrowing LMDBTransaction) throws {
        for index in touched.indices {
            try Projection.write(touched[index].after, replacing: touched[index].before, counters: &counters, scratch: &scratch,
                                 schema: schema, in: txn)
        }
        try Projection.writeCounters(counters, schema: schema, in: txn)
    }

    /// The state of `id` as this transaction leaves it so far: folded by the unit in hand, by an
    /// earlier unit, or as stored.
    private func currentState(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        if let local = folding.last(where: { $0.id == id }) { return local.after }
        if let index = position[id] { return touched[index].after }
        return try storedState(id, in: txn)
    }

    /// The state of `id` as stored when the transaction began; `nil` for an operation the
    /// journal does not hold (a new one), read without decoding anything.
    private func storedState(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        // The key built by the table and its codec on the stack: no allocation per read.
        let bytes: [UInt8]? = try JournalCodec.ID.withEncoded(id) { encoded in
            try txn.withValue(schema.operations, encodedKey: encoded) { $0.map { Array($0) } }
        }
        guard let bytes else { return nil }
        do {
            return try StateCodec.decode(bytes)
        } catch {
            throw OutboxError.projectionCorrupt(reason: "the state of operation \(id): \(error)")
        }
    }
}
