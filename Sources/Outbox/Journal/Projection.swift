import Foundation
import OutboxCore
import OutboxStorage

/// The projections as a pure function of the folded state.
///
/// What one operation state puts in the indexes is computed here (and what it counts, in
/// ``JournalCounters``), and nowhere else, both when an event is appended and when `verify`
/// rebuilds the projections in memory to compare.
enum Projection {
    /// An index the projection keeps, apart from `operations` itself: each maps a key to an
    /// operation id.
    enum Index: CaseIterable {
        case byStatus
        case schedule
        case lanes
        case syncTab

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

    /// Writes what one event changes: the states of the operations it touches and their index
    /// entries, and the engine state; adds its counter changes to `counters`, which the
    /// transaction writes once at its end (``writeCounters(_:schema:in:)``), however many
    /// events it holds. Runs inside the append's write transaction.
    /// - Parameters:
    ///   - changes: each operation the event changed, before and after (one for an operation
    ///     event; one per compacted operation for a `compacted` event).
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
        for (before, after) in changes {
            try txn.put(schema.operations, after.id, after)
            let old = before.map(footprint(of:))
            let new = footprint(of: after)
            for index in Index.allCases where old?.key(in: index) != new.key(in: index) {
                if let key = old?.key(in: index) { try index.delete(key, schema: schema, in: txn) }
                if let key = new.key(in: index) { try key.withUnsafeBytes { try index.put($0, after.id, schema: schema, in: txn) } }
            }
            counters.move(from: before, to: after)
        }
        if let engine {
            try txn.put(schema.singletons, JournalSchema.SingletonKey.engine, StateCodec.encode(engine))
        }
    }

    /// Stores the counters: one value, written once per transaction.
    static func writeCounters(_ counters: JournalCounters, schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
        try txn.put(schema.singletons, JournalSchema.SingletonKey.counters, counters.encoded())
    }
}
