import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// The projections as a pure function of the folded state.
///
/// What one operation state puts in the indexes is computed here (and what it counts, in
/// ``JournalCounters``), and nowhere else, both when an event is appended and when `verify`
/// rebuilds the projections in memory to compare.
enum Projection {
    /// An index the projection keeps, apart from `operations` itself: each maps a key to an
    /// operation id, but the Sync tab's, which maps it to the row its operation shows
    /// (``holdsRow``).
    ///
    /// Its cases come in the order of their prefixes in `state`: the order a rebuild appends them.
    enum Index: CaseIterable {
        case schedule
        case lanes
        case syncTab
        case recordWrites
        case recordOps
        case byStatus
        case notices
        case attachments

        /// Whether a state has at most one key in the index; the record indexes hold one per
        /// record the write changes.
        var isSingleKey: Bool { self != .recordWrites && self != .recordOps }

        /// Whether an entry holds what its operation's row shows rather than its id: the Sync
        /// tab's (``StateCodec/encodeTabRow(_:into:)``), whose cards are then read from the
        /// tab's own pages, one page fault per page of rows instead of one per row (the
        /// `operations` entries of a card's rows lie far apart in a long journal).
        var holdsRow: Bool { self == .syncTab }

        /// Appends the value of `state`'s entry to `value`, in an index that ``holdsRow``: its
        /// tab row. (Every other index's value is the id.)
        func encodeRow(of state: OperationState, into value: inout ByteWriter) {
            precondition(holdsRow, "\(self) holds operation ids")
            StateCodec.encodeTabRow(state, into: &value)
        }

        /// Every key of `state` in a record index (without the table's prefix), through its codec.
        func recordKeys(of state: OperationState) -> [[UInt8]] {
            guard state.compactedAt == nil, !state.records.isEmpty else { return [] }
            switch self {
            case .recordOps:
                // A write is in one of the two per record: `record-writes` while the view may
                // show it, here once it no longer does. An enqueue then writes one index row per
                // record, not two (one leaf dirtied instead of two), and the move comes with the
                // outcome that retires it.
                let shown = Projection.shownRecords(of: state)
                return state.records.filter { !shown.contains($0) }.map { JournalCodec.RecordOpKey.bytes(($0, state.firstSeq)) }
            case .recordWrites:
                return Projection.shownRecords(of: state).map { JournalCodec.RecordWriteKey.bytes(($0, state.laneSeq, state.firstSeq)) }
            default:
                preconditionFailure("\(self) holds one key per state")
            }
        }

        // MARK: The rule of each index, stated once

        /// Whether `state` has an entry in this index (a single-key one).
        func holds(_ state: OperationState) -> Bool {
            switch self {
            case .byStatus: true
            case .notices: Projection.notice(of: state) != nil
            case .attachments: state.compactedAt == nil && !state.attachments.isEmpty
            case .schedule: state.status == .queued
            case .lanes: !state.status.isTerminal
            case .syncTab: tabGroup(of: state.status) != nil
            case .recordWrites, .recordOps: !recordKeys(of: state).isEmpty
            }
        }

        /// Appends `state`'s key in this index (without the table's prefix) to `bytes`, through
        /// the index's codec. Only for a state the index ``holds(_:)``.
        func encodeKey(of state: OperationState, into bytes: inout [UInt8]) {
            switch self {
            case .byStatus:
                JournalCodec.StatusKey.encode((state.status, state.firstSeq), into: &bytes)
            case .notices:
                JournalCodec.ScheduleKey.encode((Projection.notice(of: state), state.firstSeq), into: &bytes)
            case .attachments:
                JournalCodec.Seq.encode(state.firstSeq, into: &bytes)
            case .schedule:
                JournalCodec.ScheduleKey.encode((state.nextAttemptAt, state.firstSeq), into: &bytes)
            case .lanes:
                // A correction takes the place of the row it replaces: its lane position, not its own seq.
                JournalCodec.LaneKey.encode(laneOf: state, into: &bytes)
            case .syncTab:
                if let group = tabGroup(of: state.status) {
                    JournalCodec.TabKey.encode((group, state.category, state.latestSeq), into: &bytes)
                }
            case .recordWrites, .recordOps:
                preconditionFailure("\(self) holds one key per record")
            }
        }

        /// Whether two states that both have an entry have the same key (and, where the index
        /// ``holdsRow``, the same value): compared field by field, so that an unchanged entry
        /// is never encoded on the hot path.
        func sameKey(_ before: OperationState, _ after: OperationState) -> Bool {
            switch self {
            case .byStatus: before.status == after.status && before.firstSeq == after.firstSeq
            case .notices: Projection.notice(of: before) == Projection.notice(of: after) && before.firstSeq == after.firstSeq
            case .attachments: before.firstSeq == after.firstSeq
            case .schedule: before.nextAttemptAt == after.nextAttemptAt && before.firstSeq == after.firstSeq
            // A lane is its operation's business and entity (or its id), which never change.
            case .lanes: before.laneSeq == after.laneSeq
            // Its entry holds the row, which an event may change: the rows are compared only when
            // the key is the same (when no event of the operation came in between).
            case .syncTab: tabGroup(of: before.status) == tabGroup(of: after.status) && before.category == after.category
                && before.latestSeq == after.latestSeq && StateCodec.tabRowBytes(before) == StateCodec.tabRowBytes(after)
            case .recordWrites: before.laneSeq == after.laneSeq && Projection.shownRecords(of: before) == Projection.shownRecords(of: after)
            case .recordOps: before.records == after.records && (before.compactedAt == nil) == (after.compactedAt == nil)
                && Projection.shownRecords(of: before) == Projection.shownRecords(of: after)
            }
        }

        /// The index's table in `state`.
        func table(in schema: JournalSchema) -> StoredTable {
            switch self {
            case .byStatus: StoredTable(schema.byStatus)
            case .notices: StoredTable(schema.notices)
            case .attachments: StoredTable(schema.attachments)
            case .schedule: StoredTable(schema.schedule)
            case .lanes: StoredTable(schema.lanes)
            case .syncTab: StoredTable(schema.syncTab)
            case .recordWrites: StoredTable(schema.recordWrites)
            case .recordOps: StoredTable(schema.recordOps)
            }
        }

        // MARK: Storing

        /// Stores an entry whose key and value the index's codecs encoded (the key without the
        /// table's prefix).
        func put(_ encodedKey: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, schema: JournalSchema,
                 in txn: borrowing LMDBTransaction, flags: LMDBPutFlags = []) throws {
            switch self {
            case .byStatus: try txn.put(schema.byStatus, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .notices: try txn.put(schema.notices, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .attachments: try txn.put(schema.attachments, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .schedule: try txn.put(schema.schedule, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .lanes: try txn.put(schema.lanes, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .syncTab: try txn.put(schema.syncTab, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .recordWrites: try txn.put(schema.recordWrites, encodedKey: encodedKey, encodedValue: value, flags: flags)
            case .recordOps: try txn.put(schema.recordOps, encodedKey: encodedKey, encodedValue: value, flags: flags)
            }
        }

        /// Its database and key prefix, as a rebuild and `verify` see it: a map of bytes.
        func storage(in schema: JournalSchema) -> StoredTable { table(in: schema) }
    }

    /// What one operation state puts in the indexes, each key as its index's codec encodes it:
    /// derived from each index's rule (``Index/holds(_:)``, ``Index/encodeKey(of:into:)``,
    /// ``Index/recordKeys(of:)``).
    struct Footprint {
        private var keys: [Index: [[UInt8]]] = [:]

        init(of state: OperationState) {
            for index in Index.allCases {
                if index.isSingleKey {
                    guard index.holds(state) else { continue }
                    var key: [UInt8] = []
                    index.encodeKey(of: state, into: &key)
                    keys[index] = [key]
                } else {
                    let recordKeys = index.recordKeys(of: state)
                    if !recordKeys.isEmpty { keys[index] = recordKeys }
                }
            }
        }

        /// Its keys in `index` (none, one, or one per record).
        func keys(in index: Index) -> [[UInt8]] { keys[index] ?? [] }
    }

    /// The records whose view may show `state`'s change (`record-writes`): every record of a
    /// write not yet settled (failed and blocked ones included: a retry shows them again); a
    /// synced write's records still awaiting the server's value; a discarded write's until its
    /// rollback is acknowledged (so the record can say it was rolled back). None for a write
    /// withdrawn (its form showed the error) or superseded (its change moved to its replacement).
    static func shownRecords(of state: OperationState) -> [RecordKey] {
        RecordRule.shownRecords(status: state.status, records: state.records, awaiting: state.awaitingServerValue,
                                rolledBack: state.rolledBackSeq != nil && !state.rollbackAcknowledged)
    }

    /// When the engine made a decision the member is told of (``AutomaticDecision/isShownToMember``)
    /// about `state`: its key in `notices`; `nil` for none, and once compacted.
    static func notice(of state: OperationState) -> Date? {
        guard state.compactedAt == nil, state.decision?.isShownToMember == true else { return nil }
        return state.decidedAt
    }

    /// The index keys of a state (its counters are ``JournalCounters/add(_:sign:)``'s).
    static func footprint(of state: OperationState) -> Footprint { Footprint(of: state) }

    static func tabGroup(of status: OutboxStatus) -> JournalSchema.TabGroup? {
        if status == .conflicted { return .conflicted }
        if status.countsOnBadge { return .waiting }
        if status == .pendingApproval { return .approval }
        return nil
    }

    // MARK: Applying to the stored projections

    /// Writes what one engine event changes: the states of the operations it touches (a
    /// `compacted` event's) and their index entries, and the engine state; adds its counter
    /// changes to `counters`, which the transaction writes once at its end
    /// (``writeCounters(_:schema:in:)``). Runs inside a write transaction.
    /// - Parameters:
    ///   - changes: each operation the event changed, before and after.
    static func apply(
        _ event: JournalEvent,
        recordSize: Int,
        changes: [(before: OperationState?, after: OperationState)],
        engine: EngineState?,
        counters: inout JournalCounters,
        schema: JournalSchema,
        in txn: borrowing LMDBTransaction
    ) throws {
        counters.events += 1
        counters.eventBytes += Int64(recordSize)
        var scratch = Scratch()
        for (before, after) in changes {
            try write(after, replacing: before, counters: &counters, scratch: &scratch, schema: schema, in: txn)
        }
        if let engine {
            try txn.put(schema.singletons, JournalSchema.SingletonKey.engine, StateCodec.encode(engine))
        }
    }

    /// Buffers a writer reuses for every row of a transaction: one state's bytes, one key's, and
    /// one tab row's (``Index/holdsRow``).
    struct Scratch {
        var state = ByteWriter(capacity: 512)
        var key: [UInt8] = []
        var row = ByteWriter(capacity: 256)

        init() {
            key.reserveCapacity(64)
        }
    }

    /// Writes one operation's state as it stands after a transaction's events, the index entries
    /// that changed since `before` (its state before them; `nil` for a new operation), and moves
    /// its counts in `counters`. Each index key is encoded only when it changed.
    static func write(
        _ after: OperationState,
        replacing before: OperationState?,
        counters: inout JournalCounters,
        scratch: inout Scratch,
        schema: JournalSchema,
        in txn: borrowing LMDBTransaction
    ) throws {
        scratch.state.removeAll()
        StateCodec.encode(after, into: &scratch.state)
        // Every key is built in the scratch buffer by its table's codec, the table's prefix
        // first, and written straight to `state`: no key array, no generic path to LMDB.
        let database = schema.state
        try JournalCodec.ID.withEncoded(after.id) { id in
            scratch.key.removeAll(keepingCapacity: true)
            scratch.key.append(contentsOf: schema.operations.prefix)
            JournalCodec.ID.encode(after.id, into: &scratch.key)
            try scratch.key.withUnsafeBytes { key in
                try scratch.state.bytes.withUnsafeBytes { value in try txn.put(database, key: key, value: value) }
            }
            // Each index: its entry before and after, by its own rule, written only when they differ.
            for index in Index.allCases {
                if !index.isSingleKey {
                    if let before, index.sameKey(before, after) { continue }
                    let prefix = index.table(in: schema).prefix
                    let old = before.map(index.recordKeys) ?? []
                    let new = index.recordKeys(of: after)
                    for key in old where !new.contains(key) {
                        try (prefix + key).withUnsafeBytes { _ = try txn.delete(database, key: $0) }
                    }
                    for key in new where !old.contains(key) {
                        try (prefix + key).withUnsafeBytes { try txn.put(database, key: $0, value: id) }
                    }
                    continue
                }
                let (had, has) = (before.map(index.holds) ?? false, index.holds(after))
                if had, has, let before, index.sameKey(before, after) { continue }
                let prefix = index.table(in: schema).prefix
                if had, let before {
                    scratch.key.removeAll(keepingCapacity: true)
                    scratch.key.append(contentsOf: prefix)
                    index.encodeKey(of: before, into: &scratch.key)
                    try scratch.key.withUnsafeBytes { _ = try txn.delete(database, key: $0) }
                }
                if has {
                    scratch.key.removeAll(keepingCapacity: true)
                    scratch.key.append(contentsOf: prefix)
                    index.encodeKey(of: after, into: &scratch.key)
                    if index.holdsRow {
                        scratch.row.removeAll()
                        index.encodeRow(of: after, into: &scratch.row)
                        try scratch.key.withUnsafeBytes { key in
                            try scratch.row.bytes.withUnsafeBytes { try txn.put(database, key: key, value: $0) }
                        }
                    } else {
                        try scratch.key.withUnsafeBytes { try txn.put(database, key: $0, value: id) }
                    }
                }
            }
        }
        counters.move(from: before, to: after)
    }

    /// Stores the counters: one value, written once per transaction.
    static func writeCounters(_ counters: JournalCounters, schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
        try txn.put(schema.singletons, JournalSchema.SingletonKey.counters, counters.encoded())
    }
}
