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
    /// operation id.
    ///
    /// Its cases come in the order of their prefixes in `state`: the order a rebuild appends them.
    enum Index: CaseIterable {
        case schedule
        case lanes
        case syncTab
        case byStatus

        /// Stores `id` under a key the index's codec encoded.
        func put(_ encodedKey: UnsafeRawBufferPointer, _ id: OperationID, schema: JournalSchema, in txn: borrowing LMDBTransaction,
                 flags: LMDBPutFlags = []) throws {
            try withUnsafeBytes(of: id.uuid.uuid) { value in
                switch self {
                case .byStatus: try txn.put(schema.byStatus, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .schedule: try txn.put(schema.schedule, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .lanes: try txn.put(schema.lanes, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .syncTab: try txn.put(schema.syncTab, encodedKey: encodedKey, encodedValue: value, flags: flags)
                }
            }
        }

        func delete(_ encodedKey: [UInt8], schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
            switch self {
            case .byStatus: try txn.delete(schema.byStatus, encodedKey: encodedKey)
            case .schedule: try txn.delete(schema.schedule, encodedKey: encodedKey)
            case .lanes: try txn.delete(schema.lanes, encodedKey: encodedKey)
            case .syncTab: try txn.delete(schema.syncTab, encodedKey: encodedKey)
            }
        }

        /// Its database and key prefix, as a rebuild and `verify` see it: a map of bytes.
        func storage(in schema: JournalSchema) -> StoredTable {
            switch self {
            case .byStatus: StoredTable(schema.byStatus)
            case .schedule: StoredTable(schema.schedule)
            case .lanes: StoredTable(schema.lanes)
            case .syncTab: StoredTable(schema.syncTab)
            }
        }
    }

    /// What one operation state puts in the indexes, each key as its index's codec encodes it.
    struct Footprint {
        var byStatus: [UInt8]
        var schedule: [UInt8]?
        var lane: [UInt8]?
        var syncTab: [UInt8]?

        /// Its key in `index`, if it has one there.
        func key(in index: Index) -> [UInt8]? {
            switch index {
            case .byStatus: byStatus
            case .schedule: schedule
            case .lanes: lane
            case .syncTab: syncTab
            }
        }
    }

    /// The index keys of a state (its counters are ``JournalCounters/add(_:sign:)``'s).
    static func footprint(of state: OperationState) -> Footprint {
        var footprint = Footprint(byStatus: JournalCodec.StatusKey.bytes((state.status, state.firstSeq)))
        if state.status == .queued {
            footprint.schedule = JournalCodec.ScheduleKey.bytes((state.nextAttemptAt, state.firstSeq))
        }
        if !state.status.isTerminal {
            // A correction takes the place of the row it replaces: its lane position, not its own seq.
            footprint.lane = JournalCodec.LaneKey.bytes((state.lane, state.laneSeq))
        }
        if let group = tabGroup(of: state.status) {
            footprint.syncTab = JournalCodec.TabKey.bytes((group, state.category, state.latestSeq))
        }
        return footprint
    }

    static func tabGroup(of status: OutboxStatus) -> JournalSchema.TabGroup? {
        if status == .conflicted { return .conflicted }
        if status.needsAttention { return .waiting }
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

    /// Buffers a writer reuses for every row of a transaction: one state's bytes, one key's.
    struct Scratch {
        var state = ByteWriter(capacity: 512)
        var key: [UInt8] = []

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
        // Every key is built in the scratch buffer, its table's prefix first, and written
        // straight to `state`: no key array, no generic path between here and LMDB.
        let database = schema.state
        try withUnsafeBytes(of: after.id.uuid.uuid) { id in
            scratch.key.removeAll(keepingCapacity: true)
            scratch.key.append(JournalSchema.Prefix.operations)
            scratch.key.append(contentsOf: id)
            try scratch.key.withUnsafeBytes { key in
                try scratch.state.bytes.withUnsafeBytes { value in try txn.put(database, key: key, value: value) }
            }
            // Each index: its entry's key before and after, written only when they differ.
            func update(_ prefix: UInt8, had: Bool, has: Bool, same: Bool, _ encode: (OperationState, inout [UInt8]) -> Void) throws {
                guard !(had && has && same) else { return }
                if had, let before {
                    scratch.key.removeAll(keepingCapacity: true)
                    scratch.key.append(prefix)
                    encode(before, &scratch.key)
                    try scratch.key.withUnsafeBytes { _ = try txn.delete(database, key: $0) }
                }
                if has {
                    scratch.key.removeAll(keepingCapacity: true)
                    scratch.key.append(prefix)
                    encode(after, &scratch.key)
                    try scratch.key.withUnsafeBytes { try txn.put(database, key: $0, value: id) }
                }
            }
            try update(JournalSchema.Prefix.byStatus, had: before != nil, has: true,
                       same: before?.status == after.status && before?.firstSeq == after.firstSeq) { state, key in
                JournalCodec.StatusKey.encode((state.status, state.firstSeq), into: &key)
            }
            try update(JournalSchema.Prefix.schedule, had: before?.status == .queued, has: after.status == .queued,
                       same: before?.nextAttemptAt == after.nextAttemptAt && before?.firstSeq == after.firstSeq) { state, key in
                JournalCodec.ScheduleKey.encode((state.nextAttemptAt, state.firstSeq), into: &key)
            }
            // A lane is its operation's business and entity (or its id), which never change.
            try update(JournalSchema.Prefix.lanes, had: before.map { !$0.status.isTerminal } ?? false, has: !after.status.isTerminal,
                       same: before?.laneSeq == after.laneSeq) { state, key in
                JournalCodec.LaneKey.encode(laneOf: state, into: &key)
            }
            let (oldGroup, newGroup) = (before.flatMap { tabGroup(of: $0.status) }, tabGroup(of: after.status))
            try update(JournalSchema.Prefix.syncTab, had: oldGroup != nil, has: newGroup != nil,
                       same: oldGroup == newGroup && before?.category == after.category && before?.latestSeq == after.latestSeq) { state, key in
                if let group = tabGroup(of: state.status) {
                    JournalCodec.TabKey.encode((group, state.category, state.latestSeq), into: &key)
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
