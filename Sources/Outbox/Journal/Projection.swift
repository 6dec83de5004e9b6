import Foundation
import OutboxCore
import OutboxStorage

/// The projections as a pure function of the folded state.
///
/// What one operation state contributes (its index entries and counters) and what one event
/// adds (its event counters) are computed here, and nowhere else, both when an
/// event is appended and when `verify` rebuilds the projections in memory to compare.
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

    /// A counter a state adds to.
    enum Counter: Hashable {
        case status(OutboxStatus)
        case attempts
        case outcome(OutcomeCategory)
        case conflicts(operationType: String)
        case tab(JournalSchema.TabGroup, category: String)

        /// Its key in the `counters` database.
        var name: String {
            switch self {
            case .status(let status): CounterName.status(status)
            case .attempts: CounterName.attempts
            case .outcome(let outcome): CounterName.outcome(outcome)
            case .conflicts(let operationType): CounterName.conflicts(operationType)
            case .tab(let group, let category): CounterName.tab(group, category: category)
            }
        }
    }

    /// What one operation state puts in the indexes (each key as its index's codec encodes it)
    /// and counters.
    struct Footprint {
        var byStatus: [UInt8]
        var schedule: [UInt8]?
        var lane: [UInt8]?
        var syncTab: [UInt8]?
        var counters: [(counter: Counter, count: Int64)] = []

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

    /// The footprint of a state. Its counters come from the state, not from its events, so they
    /// survive compaction: attempts, the latest outcome, a key conflict met.
    static func footprint(of state: OperationState) -> Footprint {
        var footprint = Footprint(byStatus: JournalCodec.StatusKey.bytes((state.status, state.firstSeq)))
        footprint.counters.append((.status(state.status), 1))
        if state.attemptCount > 0 { footprint.counters.append((.attempts, Int64(state.attemptCount))) }
        if let outcome = state.latestOutcome { footprint.counters.append((.outcome(outcome), 1)) }
        if state.lastErrorCode == ErrorCode.idempotencyConflict {
            footprint.counters.append((.conflicts(operationType: state.operationType), 1))
        }
        if state.status == .queued {
            footprint.schedule = JournalCodec.ScheduleKey.bytes((state.nextAttemptAt, state.firstSeq))
        }
        if !state.status.isTerminal {
            footprint.lane = JournalCodec.LaneKey.bytes((state.lane, state.firstSeq))
        }
        if let group = tabGroup(of: state.status) {
            footprint.syncTab = JournalCodec.TabKey.bytes((group, state.category, state.latestSeq))
            footprint.counters.append((.tab(group, category: state.category), 1))
        }
        return footprint
    }

    static func tabGroup(of status: OutboxStatus) -> JournalSchema.TabGroup? {
        if status.needsAttention { return .waiting }
        if status == .pendingApproval { return .approval }
        return nil
    }

    // MARK: Applying to the stored projections

    /// Writes what one event changes: the states of the operations it touches and their index
    /// entries, and the engine state; adds its counter changes to `counterDeltas`, which the
    /// transaction writes once at its end (``writeCounters(_:schema:in:)``), however many
    /// events it holds. Runs inside the append's write transaction.
    /// - Parameters:
    ///   - changes: each operation the event changed, before and after (one for an operation
    ///     event; one per compacted operation for a `compacted` event).
    ///   - extraCounters: counter changes the event brings besides its own (a compaction takes
    ///     the removed events off the journal's size).
    static func apply(
        _ event: JournalEvent,
        recordSize: Int,
        changes: [(before: OperationState?, after: OperationState)],
        engine: EngineState?,
        extraCounters: [String: Int64] = [:],
        counterDeltas: inout [String: Int64],
        schema: JournalSchema,
        in txn: borrowing LMDBTransaction
    ) throws {
        counterDeltas[CounterName.events, default: 0] += 1
        counterDeltas[CounterName.eventBytes, default: 0] += Int64(recordSize)
        counterDeltas.merge(extraCounters, uniquingKeysWith: +)
        for (before, after) in changes {
            try txn.put(schema.operations, after.id, after)
            let old = before.map(footprint(of:))
            let new = footprint(of: after)
            for index in Index.allCases where old?.key(in: index) != new.key(in: index) {
                if let key = old?.key(in: index) { try index.delete(key, schema: schema, in: txn) }
                if let key = new.key(in: index) { try key.withUnsafeBytes { try index.put($0, after.id, schema: schema, in: txn) } }
            }
            for (counter, count) in old?.counters ?? [] { counterDeltas[counter.name, default: 0] -= count }
            for (counter, count) in new.counters { counterDeltas[counter.name, default: 0] += count }
        }
        if let engine {
            try txn.put(schema.meta, JournalSchema.MetaKey.engineState, StateCodec.encode(engine))
        }
    }

    /// Adds each delta to its stored counter, deleting a counter that reaches zero.
    static func writeCounters(_ counterDeltas: [String: Int64], schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
        for (name, delta) in counterDeltas where delta != 0 {
            try addToCounter(name, delta, schema: schema, in: txn)
        }
    }

    private static func addToCounter(_ name: String, _ delta: Int64, schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
        let next = try schema.counter(name, in: txn) + delta
        if next == 0 {
            try txn.delete(schema.counters, name)
        } else {
            try txn.put(schema.counters, name, next)
        }
    }
}
