import Foundation
import OutboxCore
import OutboxStorage

/// The projections as a pure function of the folded state.
///
/// What one operation state contributes (its index entries and counters) and what one event
/// adds (its history entry and event counters) are computed here, and nowhere else, both when an
/// event is appended and when `verify` rebuilds the projections in memory to compare.
enum Projection {
    /// An index the projection keeps, apart from `operations` itself.
    enum Index: CaseIterable {
        case byStatus
        case schedule
        case lanes
        case syncTab

        func database(in schema: JournalSchema) -> LMDBDatabase {
            switch self {
            case .byStatus: schema.byStatus
            case .schedule: schema.schedule
            case .lanes: schema.lanes
            case .syncTab: schema.syncTab
            }
        }
    }

    /// What one operation state puts in the indexes and counters.
    struct Footprint: Equatable {
        var entries: [Index: [UInt8]] = [:]
        var counters: [String: Int64] = [:]
    }

    /// The footprint of a state. Its counters come from the state, not from its events, so they
    /// survive compaction: attempts, the latest outcome, a key conflict met.
    static func footprint(of state: OperationState) -> Footprint {
        var footprint = Footprint()
        footprint.entries[.byStatus] = JournalSchema.statusKey(state.status, firstSeq: state.firstSeq)
        footprint.counters[CounterName.status(state.status)] = 1
        if state.attemptCount > 0 { footprint.counters[CounterName.attempts] = Int64(state.attemptCount) }
        if let outcome = state.latestOutcome { footprint.counters[CounterName.outcome(outcome)] = 1 }
        if state.lastErrorCode == ErrorCode.idempotencyConflict {
            footprint.counters[CounterName.conflicts(state.operationType)] = 1
        }
        if state.status == .queued {
            footprint.entries[.schedule] = JournalSchema.scheduleKey(dueAt: state.nextAttemptAt, firstSeq: state.firstSeq)
        }
        if !state.status.isTerminal {
            footprint.entries[.lanes] = JournalSchema.laneKey(state.lane, firstSeq: state.firstSeq)
        }
        if let group = tabGroup(of: state.status) {
            footprint.entries[.syncTab] = JournalSchema.tabKey(group, category: state.category, latestSeq: state.latestSeq)
            footprint.counters[CounterName.tab(group, category: state.category)] = 1
        }
        return footprint
    }

    static func tabGroup(of status: OutboxStatus) -> JournalSchema.TabGroup? {
        if status.needsAttention { return .waiting }
        if status == .pendingApproval { return .approval }
        return nil
    }

    /// The counters an event adds to, beyond those of the states it changes: the journal's size.
    static func eventCounters(recordSize: Int) -> [String: Int64] {
        [CounterName.events: 1, CounterName.eventBytes: Int64(recordSize)]
    }

    // MARK: Applying to the stored projections

    /// Writes what one event changes: the states of the operations it touches and their index
    /// entries, the history index, the counters and the engine state. Runs inside the append's
    /// write transaction.
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
        schema: JournalSchema,
        in txn: borrowing LMDBTransaction
    ) throws {
        var counterDeltas = eventCounters(recordSize: recordSize).merging(extraCounters, uniquingKeysWith: +)
        for (before, after) in changes {
            try txn.put(schema.operations, key: after.id.bytes, value: StateCodec.encode(after))
            if event.operationID != nil {
                try txn.put(schema.operationEvents, key: JournalSchema.operationEventKey(after.id, seq: event.seq), value: [UInt8]())
            }
            let old = before.map(footprint(of:)) ?? Footprint()
            let new = footprint(of: after)
            for index in Index.allCases where old.entries[index] != new.entries[index] {
                let database = index.database(in: schema)
                if let key = old.entries[index] { try txn.delete(database, key: key) }
                if let key = new.entries[index] { try txn.put(database, key: key, value: after.id.bytes) }
            }
            for (name, count) in old.counters { counterDeltas[name, default: 0] -= count }
            for (name, count) in new.counters { counterDeltas[name, default: 0] += count }
        }
        if let engine {
            try txn.put(schema.meta, key: JournalSchema.MetaKey.engineState, value: StateCodec.encode(engine))
        }
        for (name, delta) in counterDeltas where delta != 0 {
            try addToCounter(name, delta, schema: schema, in: txn)
        }
    }

    private static func addToCounter(_ name: String, _ delta: Int64, schema: JournalSchema, in txn: borrowing LMDBTransaction) throws {
        let key = Array(name.utf8)
        let current = try readCounter(key, schema: schema, in: txn)
        let next = current + delta
        if next == 0 {
            try txn.delete(schema.counters, key: key)
        } else {
            try txn.put(schema.counters, key: key, value: UInt64(bitPattern: next).bigEndianBytes)
        }
    }

    static func readCounter(_ key: [UInt8], schema: JournalSchema, in txn: borrowing LMDBTransaction) throws -> Int64 {
        try txn.withValue(schema.counters, key: key) { value in
            guard let value, value.count == 8 else { return 0 }
            return Int64(bitPattern: value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
    }
}
