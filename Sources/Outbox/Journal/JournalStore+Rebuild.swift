import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// Rebuilding every projection from the events: the migration a new projection layout needs.
extension JournalStore {
    /// How a rebuild splits its work. The defaults suit an app; tests shrink them so that every
    /// path runs on a small journal.
    struct RebuildTuning: Sendable {
        /// The most events rewritten in one transaction, and the most rows each step of a longer
        /// rebuild writes.
        var chunk = 20_000
        /// Below this many events the fold runs on one thread: starting more costs more than it saves.
        var shardingThreshold = 50_000
        /// How many threads fold a longer journal; `nil`: one per core, up to 8, counted when a
        /// rebuild runs (asking for the cores costs a fresh process some 0.3 ms, and an open that
        /// rebuilds nothing does not ask).
        var shards: Int?

        var threads: Int { shards ?? max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)) }
    }

    /// Writes every projection again from the events, into `state`: the migration a new
    /// projection layout needs, and the repair of damaged projections.
    ///
    /// The events are folded in memory first (``ProjectionImage``), on several threads for a long
    /// journal, while the write lock keeps them from changing; each thread then encodes its
    /// operations' rows. The rows are written in key order, appended page by page rather than
    /// inserted row by row. A journal of up to the tuning's `chunk` events is rewritten in one
    /// transaction: a crash midway leaves it exactly as it was. A longer one is written in steps
    /// of at most the tuning's `chunk` rows.
    ///
    /// Only the last step touches what an earlier layout stored: it empties that layout's
    /// databases and writes the projection version. Until then the journal is what it was, and
    /// when a step fails (the map or the disk full) what was written of `state` is cleared again:
    /// an engine of the earlier layout still opens it, and this one starts over at its next open.
    /// (A rebuild of this layout's own projections clears them, and the version, first.)
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for a damaged record or an illegal
    ///   transition, before anything is written; ``OutboxError/storageFull(limitBytes:errno:)``
    ///   when there is no room for the new projections.
    static func rebuildProjections(
        environment: LMDBEnvironment,
        schema: JournalSchema,
        options: Options,
        tuning: RebuildTuning = RebuildTuning()
    ) throws(OutboxError) {
        // Whether a transaction of the rebuild committed: until one does, nothing changed.
        var wrote = false
        do {
            try run(options) {
                let retired = try JournalSchema.retiredDatabases.compactMap { try environment.openExistingDatabase($0) }
                // The closures below depend on the events alone: when a full map makes `write` run
                // one again, it does the same again. The events cannot change in between (`write`
                // holds the write lock throughout), so the fold it ran the first time is kept.
                var folded: [RebuildShard]?
                let remaining: ArraySlice<RebuildPlan.Step> = try environment.write { txn in
                    let eventCount = try txn.count(schema.events.database)
                    let shards: [RebuildShard]
                    if let folded {
                        shards = folded
                    } else if eventCount < tuning.shardingThreshold || tuning.threads < 2 {
                        shards = [RebuildShard(try ProjectionImage.build(schema: schema, in: txn))]
                    } else {
                        shards = try ProjectionImage.buildSharded(schema: schema, environment: environment, count: tuning.threads) {
                            RebuildShard($0)
                        }
                    }
                    folded = shards
                    let steps = RebuildPlan(shards: shards, schema: schema, retired: retired, chunk: tuning.chunk).steps
                    let now = eventCount <= tuning.chunk ? steps.count : 1
                    for step in steps.prefix(now) { try step(txn) }
                    return steps.dropFirst(now)
                }
                wrote = true
                for step in remaining {
                    try environment.write { txn in try step(txn) }
                }
            }
        } catch {
            guard wrote else { throw error }
            // What was written of the new projections goes; the last step, which alone changes
            // what an earlier layout reads, never ran. Clearing frees pages, so it needs little
            // room; should it fail as well, the next rebuild clears them first.
            try? run(options) { try environment.write { txn in try txn.removeAll(schema.state) } }
            throw error
        }
    }
}

/// What one shard of a rebuild writes, encoded on the shard's own thread: its operations in id
/// order, its index rows in key order, and its counters. Encoded states and index keys sit in
/// one buffer each, rather than one array per row.
private struct RebuildShard: Sendable {
    struct Row: Sendable {
        var id: OperationID
        /// Where its bytes (the state, or the index key) sit in the shard's buffer.
        var bytes: Range<Int>
        /// An index row's value in ``indexValueBytes`` where the index holds a row
        /// (``Projection/Index/holdsRow``); `nil` for the id.
        var value: Range<Int>? = nil
    }

    var states: [Row] = []
    var stateBytes: [UInt8]
    var indexRows: [Projection.Index: [Row]] = [:]
    var indexKeyBytes: [UInt8]
    /// The values of the index rows that hold more than an id: the Sync tab's rows, a few per journal.
    var indexValueBytes: [UInt8]
    var counters = JournalCounters()
    var eventCount: Int64
    var eventBytes: Int64
    var engine: EngineState?

    init(_ image: consuming ProjectionImage) {
        eventCount = image.eventCount
        eventBytes = image.eventBytes
        engine = image.shard.ownsEngineEvents ? image.engine : nil
        let indexes = Projection.Index.allCases
        var states: [Row] = []
        var indexRuns = [[Row]](repeating: [], count: indexes.count)
        var stateWriter = ByteWriter(capacity: image.states.count * 256)
        var keys: [UInt8] = []
        var values = ByteWriter(capacity: 0)
        var counters = JournalCounters()
        // The image is done with: its states are moved out one by one rather than copied (their
        // order does not matter, the rows are sorted below).
        var pending = image.states.removeAll()
        states.reserveCapacity(pending.count)
        keys.reserveCapacity(pending.count * 12)
        while let state = pending.popLast() {
            let start = stateWriter.bytes.count
            StateCodec.encode(state, into: &stateWriter)
            states.append(Row(id: state.id, bytes: start..<stateWriter.bytes.count))
            let footprint = Projection.footprint(of: state)
            for (run, index) in indexes.enumerated() {
                for key in footprint.keys(in: index) {
                    var row = Row(id: state.id, bytes: keys.count..<keys.count + key.count)
                    if index.holdsRow {
                        let start = values.bytes.count
                        index.encodeRow(of: state, into: &values)
                        row.value = start..<values.bytes.count
                    }
                    indexRuns[run].append(row)
                    keys.append(contentsOf: key)
                }
            }
            counters.add(state, sign: 1)
        }
        self.counters = counters
        stateBytes = stateWriter.bytes
        indexKeyBytes = keys
        indexValueBytes = values.bytes
        states.sort { $0.id < $1.id }
        self.states = states
        keys.withUnsafeBytes { keys in
            for run in indexRuns.indices {
                indexRuns[run].sort {
                    Self.keyOrder(UnsafeRawBufferPointer(rebasing: keys[$0.bytes]), UnsafeRawBufferPointer(rebasing: keys[$1.bytes]))
                }
            }
        }
        indexRows = Dictionary(uniqueKeysWithValues: zip(indexes, indexRuns).filter { !$0.1.isEmpty })
    }

    /// LMDB's order of two keys: their bytes compared as unsigned, the shorter first on a tie.
    static func keyOrder(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        let common = min(left.count, right.count)
        let order = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
        return order != 0 ? order < 0 : left.count < right.count
    }
}

/// Where a row sits among several sorted runs.
private struct RowPosition {
    var run: Int
    var index: Int
}

/// Every position in runs of the given lengths (each run sorted), in merged order.
private func mergedOrder(runLengths: [Int], by areInIncreasingOrder: (RowPosition, RowPosition) -> Bool) -> [RowPosition] {
    if runLengths.count == 1 {
        return (0..<runLengths[0]).map { RowPosition(run: 0, index: $0) }
    }
    var order: [RowPosition] = []
    order.reserveCapacity(runLengths.reduce(0, +))
    var heads = [Int](repeating: 0, count: runLengths.count)
    while true {
        // A handful of runs, one per thread: the smallest head is found by looking at each.
        var smallest: RowPosition?
        for run in runLengths.indices where heads[run] < runLengths[run] {
            let head = RowPosition(run: run, index: heads[run])
            if let best = smallest, !areInIncreasingOrder(head, best) { continue }
            smallest = head
        }
        guard let next = smallest else { return order }
        order.append(next)
        heads[next.run] += 1
    }
}

/// The writes of a rebuild, in order, each small enough for one transaction: `state` cleared,
/// then its rows in key order (the engine state and counters, the operations, each index), then
/// the earlier layout's databases emptied and the version written, last.
private struct RebuildPlan {
    typealias Step = (borrowing LMDBTransaction) throws -> Void

    private(set) var steps: [Step] = []

    init(shards: [RebuildShard], schema: JournalSchema, retired: [LMDBDatabase], chunk: Int) {
        var counters = JournalCounters()
        for shard in shards {
            counters.add(shard.counters)
            counters.events += shard.eventCount
            counters.eventBytes += shard.eventBytes
        }
        let engine = shards.lazy.compactMap(\.engine).first ?? EngineState()
        let encodedCounters = counters.encoded()
        steps.append { txn in
            // Projections kept in `state` (this layout's, or an earlier one's from layout 5 on)
            // are gone from here on: without their version, an open midway, by this engine or
            // by the one that wrote them, rebuilds them again.
            if let stored = try txn.get(schema.meta, JournalSchema.MetaKey.projectionVersion),
               stored.count != 4 || stored.reduce(0, { $0 << 8 | UInt32($1) }) >= JournalSchema.firstLayoutInState {
                try txn.delete(schema.meta, JournalSchema.MetaKey.projectionVersion)
            }
            try txn.removeAll(schema.state)
            // The singletons' keys in order: "counters" before "engine".
            try txn.put(schema.singletons, JournalSchema.SingletonKey.counters, encodedCounters, flags: .append)
            try txn.put(schema.singletons, JournalSchema.SingletonKey.engine, StateCodec.encode(engine), flags: .append)
        }

        // Each shard's rows are sorted already: they are merged by position, without copying.
        let stateOrder = mergedOrder(runLengths: shards.map(\.states.count)) {
            shards[$0.run].states[$0.index].id < shards[$1.run].states[$1.index].id
        }
        for first in stride(from: 0, to: stateOrder.count, by: chunk) {
            let slice = stateOrder[first..<min(first + chunk, stateOrder.count)]
            steps.append { txn in
                for position in slice {
                    let row = shards[position.run].states[position.index]
                    try shards[position.run].stateBytes.withUnsafeBytes { bytes in
                        try JournalCodec.ID.withEncoded(row.id) { key in
                            try txn.put(schema.operations, encodedKey: key, encodedValue: UnsafeRawBufferPointer(rebasing: bytes[row.bytes]), flags: .append)
                        }
                    }
                }
            }
        }

        // The indexes' prefixes follow the operations' in `state`, in this order.
        for index in Projection.Index.allCases {
            let runs = shards.map { $0.indexRows[index] ?? [] }
            let order = mergedOrder(runLengths: runs.map(\.count)) { left, right in
                // The two rows come from different shards, so from different buffers.
                shards[left.run].indexKeyBytes.withUnsafeBytes { leftKeys in
                    shards[right.run].indexKeyBytes.withUnsafeBytes { rightKeys in
                        RebuildShard.keyOrder(
                            UnsafeRawBufferPointer(rebasing: leftKeys[runs[left.run][left.index].bytes]),
                            UnsafeRawBufferPointer(rebasing: rightKeys[runs[right.run][right.index].bytes])
                        )
                    }
                }
            }
            for first in stride(from: 0, to: order.count, by: chunk) {
                let slice = order[first..<min(first + chunk, order.count)]
                steps.append { txn in
                    for position in slice {
                        let row = runs[position.run][position.index]
                        try shards[position.run].indexKeyBytes.withUnsafeBytes { keys in
                            let key = UnsafeRawBufferPointer(rebasing: keys[row.bytes])
                            if let value = row.value {
                                try shards[position.run].indexValueBytes.withUnsafeBytes { values in
                                    try index.put(key, UnsafeRawBufferPointer(rebasing: values[value]), schema: schema, in: txn, flags: .append)
                                }
                            } else {
                                try JournalCodec.ID.withEncoded(row.id) { try index.put(key, $0, schema: schema, in: txn, flags: .append) }
                            }
                        }
                    }
                }
            }
        }

        steps.append { txn in
            for database in retired { try txn.removeAll(database) }
            try txn.delete(schema.meta, JournalSchema.MetaKey.retiredEngineState)
            try txn.put(schema.meta, JournalSchema.MetaKey.projectionVersion, JournalCodec.Version.bytes(JournalSchema.projectionVersion))
        }
    }
}
