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

        // MARK: The rule of each index, stated once

        /// Whether `state` has an entry in this index.
        func holds(_ state: OperationState) -> Bool {
            switch self {
            case .byStatus: true
            case .schedule: state.status == .queued
            case .lanes: !state.status.isTerminal
            case .syncTab: tabGroup(of: state.status) != nil
            }
        }

        /// Appends `state`'s key in this index (without the table's prefix) to `bytes`, through
        /// the index's codec. Only for a state the index ``holds(_:)``.
        func encodeKey(of state: OperationState, into bytes: inout [UInt8]) {
            switch self {
            case .byStatus:
                JournalCodec.StatusKey.encode((state.status, state.firstSeq), into: &bytes)
            case .schedule:
                JournalCodec.ScheduleKey.encode((state.nextAttemptAt, state.firstSeq), into: &bytes)
            case .lanes:
                // A correction takes the place of the row it replaces: its lane position, not its own seq.
                JournalCodec.LaneKey.encode(laneOf: state, into: &bytes)
            case .syncTab:
                if let group = tabGroup(of: state.status) {
                    JournalCodec.TabKey.encode((group, state.category, state.latestSeq), into: &bytes)
                }
            }
        }

        /// Whether two states that both have an entry have the same key: compared field by
        /// field, so that an unchanged key is never encoded on the hot path.
        func sameKey(_ before: OperationState, _ after: OperationState) -> Bool {
            switch self {
            case .byStatus: before.status == after.status && before.firstSeq == after.firstSeq
            case .schedule: before.nextAttemptAt == after.nextAttemptAt && before.firstSeq == after.firstSeq
            // A lane is its operation's business and entity (or its id), which never change.
            case .lanes: before.laneSeq == after.laneSeq
            case .syncTab: tabGroup(of: before.status) == tabGroup(of: after.status) && before.category == after.category
                && before.latestSeq == after.latestSeq
            }
        }

        /// The index's table in `state`.
        func table(in schema: JournalSchema) -> StoredTable {
            switch self {
            case .byStatus: StoredTable(schema.byStatus)
            case .schedule: StoredTable(schema.schedule)
            case .lanes: StoredTable(schema.lanes)
            case .syncTab: StoredTable(schema.syncTab)
            }
        }

        // MARK: Storing

        /// Stores `id` under a key the index's codec encoded (without the table's prefix).
        func put(_ encodedKey: UnsafeRawBufferPointer, _ id: OperationID, schema: JournalSchema, in txn: borrowing LMDBTransaction,
                 flags: LMDBPutFlags = []) throws {
            try JournalCodec.ID.withEncoded(id) { value in
                switch self {
                case .byStatus: try txn.put(schema.byStatus, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .schedule: try txn.put(schema.schedule, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .lanes: try txn.put(schema.lanes, encodedKey: encodedKey, encodedValue: value, flags: flags)
                case .syncTab: try txn.put(schema.syncTab, encodedKey: encodedKey, encodedValue: value, flags: flags)
                }
            }
        }

        /// Its database and key prefix, as a rebuild and `verify` see it: a map of bytes.
        func storage(in schema: JournalSchema) -> StoredTable { table(in: schema) }
    }

    /// What one operation state puts in the indexes, each key as its index's codec encodes it:
    /// derived from each index's rule (``Index/holds(_:)``, ``Index/encodeKey(of:into:)``).
    struct Footprint {
        private var keys: [Index: [UInt8]] = [:]

        init(of state: OperationState) {
            for index in Index.allCases where index.holds(state) {
                var key: [UInt8] = []
                index.encodeKey(of: state, into: &key)
                keys[index] = key
            }
        }

        /// Its key in `index`, if it has one there.
        func key(in index: Index) -> [UInt8]? { keys[index] }
    }

    /// The index keys of a state (its counters are ``JournalCounters/add(_:sign:)``'s).
    static func footprint(of state: OperationState) -> Footprint { Footprint(of: state) }

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
                    try scratch.key.withUnsafeBytes { try txn.put(database, key: $0, value: id) }
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
