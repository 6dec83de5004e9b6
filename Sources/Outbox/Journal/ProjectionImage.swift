package import Foundation
package import OutboxCore
package import OutboxStorage
import Synchronization

/// Every projection, folded in memory from the events alone.
///
/// What `verify` compares the stored projections with, and what a reader uses when a journal's
/// stored projections were written by another layout. It computes each entry with the same pure
/// functions (``Projection``) the append path uses.
package struct ProjectionImage: Equatable, Sendable {
    /// Which operations an image folds: all of them, or one shard of a fold run in parallel.
    package struct Shard: Equatable, Sendable {
        var index = 0
        var count = 1

        static let whole = Shard()

        /// The shard an operation falls in, by the first byte of its (random) id.
        static func index(of id: OperationID, among count: Int) -> Int { Int(id.uuid.uuid.0) % count }

        func owns(_ id: OperationID) -> Bool { count == 1 || Self.index(of: id, among: count) == index }

        /// The engine's events, and the journal's size they add to, fall in the first shard.
        var ownsEngineEvents: Bool { index == 0 }
    }

    package var shard = Shard.whole
    package var states = OperationStates()
    package var engine = EngineState()
    /// How many events the image folded, and their bytes: the counters events add to by
    /// themselves (the rest come from the states).
    package var eventCount: Int64 = 0
    package var eventBytes: Int64 = 0

    /// Folds one more event: an event of an operation in the image's shard, or an engine event.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for an illegal transition.
    package mutating func apply(_ event: JournalEvent, recordSize: Int) throws(OutboxError) {
        if let id = event.operationID {
            do {
                try states.modify(id) { (state) throws(OutboxError) in
                    try Fold.apply(event, toExisting: &state)
                } creating: { () throws(OutboxError) in
                    try Fold.apply(event, to: nil)
                }
            } catch {
                throw .journalCorrupt(seq: event.seq, reason: "illegal transition: \(error)")
            }
        } else {
            if case .compacted(var compacted) = event.body {
                compacted.operations.removeAll { !shard.owns($0.id) }
                let stubs: [(before: OperationState?, after: OperationState)]
                do {
                    stubs = try Fold.applyCompaction(compacted, seq: event.seq, recordedAt: event.recordedAt) { states[$0] }
                } catch {
                    throw .journalCorrupt(seq: event.seq, reason: "illegal transition: \(error)")
                }
                for (_, stub) in stubs { states.update(stub) }
            }
            guard shard.ownsEngineEvents else { return }
            engine = engine.applying(event)
        }
        eventCount += 1
        eventBytes += Int64(recordSize)
    }

    /// Folds every event of a journal (of `shard`) in one read transaction.
    package static func build(schema: JournalSchema, in txn: borrowing LMDBTransaction, shard: Shard = .whole) throws -> ProjectionImage {
        var image = ProjectionImage(shard: shard)
        try txn.scan(schema.events) { entry in
            let value = entry.valueBytes
            // Routed by the header's unchecked claims; the record is checked in full by
            // whichever shard decodes it, so a damaged one is still found.
            if let id = RecordCodec.uncheckedOperationID(of: value) {
                guard shard.owns(id) else { return .next }
            } else if !shard.ownsEngineEvents && RecordCodec.uncheckedKind(of: value) != .compacted {
                return .next
            }
            try image.apply(try RecordCodec.decode(Array(value), seq: try entry.key()), recordSize: value.count)
            return .next
        }
        return image
    }

    /// Folds every event of a journal in `count` shards at once, one thread and one read
    /// transaction each, and hands each shard's image to `finish` on its own thread. The caller
    /// holds the write lock, so every shard reads the same events.
    /// - Throws: the error of the earliest damaged record any shard met.
    package static func buildSharded<Finished: Sendable>(
        schema: JournalSchema,
        environment: LMDBEnvironment,
        count: Int,
        finish: @Sendable (consuming ProjectionImage) -> Finished
    ) throws -> [Finished] {
        let results = Mutex<[Int: Result<Finished, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let result = Result<Finished, any Error> {
                let image = try environment.read { txn in try build(schema: schema, in: txn, shard: Shard(index: index, count: count)) }
                return finish(image)
            }
            results.withLock { $0[index] = result }
        }
        let all = results.withLock { results in (0..<count).compactMap { results[$0] } }
        var finished: [Finished] = []
        var failures: [any Error] = []
        for result in all {
            switch result {
            case .success(let value): finished.append(value)
            case .failure(let error): failures.append(error)
            }
        }
        if let first = failures.min(by: { Self.corruptSeq($0) < Self.corruptSeq($1) }) { throw first }
        return finished
    }

    private static func corruptSeq(_ error: any Error) -> UInt64 {
        if case .journalCorrupt(let seq, _)? = error as? OutboxError { return seq.rawValue }
        return .max
    }

    /// Every counter: the events' own and those of each state.
    package var counters: JournalCounters {
        var counters = JournalCounters()
        counters.events = eventCount
        counters.eventBytes = eventBytes
        for state in states.values { counters.add(state, sign: 1) }
        return counters
    }

    /// The content each table of operations and indexes should hold, keys and values as their
    /// codecs encode them. (The engine state and the counters are compared as values.)
    package func expectedTables(schema: JournalSchema) -> [StoredTable: [[UInt8]: [UInt8]]] {
        var tables: [StoredTable: [[UInt8]: [UInt8]]] = [:]
        var operations: [[UInt8]: [UInt8]] = [:]
        var indexes: [Projection.Index: [[UInt8]: [UInt8]]] = [:]
        for state in states.values {
            operations[JournalCodec.ID.bytes(state.id)] = JournalCodec.State.bytes(state)
            let footprint = Projection.footprint(of: state)
            for index in Projection.Index.allCases {
                for key in footprint.keys(in: index) {
                    indexes[index, default: [:]][key] = index.holdsRow ? StateCodec.tabRowBytes(state) : state.id.bytes
                }
            }
        }
        tables[schema.storedOperations] = operations
        for index in Projection.Index.allCases {
            tables[index.storage(in: schema)] = indexes[index] ?? [:]
        }
        return tables
    }
}

/// A difference between a stored projection and the same projection folded from the events.
package struct ProjectionMismatch: Equatable, CustomStringConvertible {
    package var database: String
    package var key: String
    package var problem: String

    package var description: String { "\(database) [\(key)]: \(problem)" }
}

extension JournalStore {
    /// Folds the whole journal in memory and compares every stored projection with the result.
    /// - Returns: each difference; empty when the projections equal a rebuild.
    package func compareProjectionsWithRebuild() throws(OutboxError) -> [ProjectionMismatch] {
        let schema = self.schema
        return try read { txn in
            try ProjectionImage.build(schema: schema, in: txn).mismatches(withStoredIn: schema, txn: txn)
        }
    }
}

extension ProjectionImage {
    /// Compares every stored projection with this image.
    /// - Returns: each difference; empty when the stored projections equal the image.
    package func mismatches(withStoredIn schema: JournalSchema, txn: borrowing LMDBTransaction) throws -> [ProjectionMismatch] {
        var mismatches: [ProjectionMismatch] = []
        for (table, expected) in expectedTables(schema: schema).sorted(by: { $0.key.name < $1.key.name }) {
            let name = table.name
            let stored = try table.entries(in: txn)
            for (key, value) in expected where stored[key] != value {
                let problem = stored[key] == nil ? "missing" : "differs from the rebuild"
                mismatches.append(ProjectionMismatch(database: name, key: Self.describe(key), problem: problem))
            }
            for key in stored.keys where expected[key] == nil {
                mismatches.append(ProjectionMismatch(database: name, key: Self.describe(key), problem: "not in the rebuild"))
            }
        }
        let storedEngine = try? schema.engineState(in: txn)
        if storedEngine != engine {
            mismatches.append(ProjectionMismatch(database: "state", key: JournalSchema.SingletonKey.engine,
                                                 problem: storedEngine == nil ? "does not decode" : "differs from the rebuild"))
        }
        if let stored = try? schema.counters(in: txn) {
            let (storedCounts, expectedCounts) = (stored.byName, counters.byName)
            for (name, count) in expectedCounts.sorted(by: { $0.key < $1.key }) where storedCounts[name] != count {
                let problem = storedCounts[name] == nil ? "missing" : "differs from the rebuild"
                mismatches.append(ProjectionMismatch(database: "counters", key: name.string, problem: problem))
            }
            for name in storedCounts.keys.sorted() where expectedCounts[name] == nil {
                mismatches.append(ProjectionMismatch(database: "counters", key: name.string, problem: "not in the rebuild"))
            }
        } else {
            mismatches.append(ProjectionMismatch(database: "state", key: JournalSchema.SingletonKey.counters, problem: "does not decode"))
        }
        // Anything else in `state` belongs to no table.
        let known = Set(schema.tables.map(\.prefix))
        let singletons = Set([JournalSchema.SingletonKey.engine, JournalSchema.SingletonKey.counters].map { Array($0.utf8) })
        try txn.scan(schema.state) { key, _ in
            let prefix = Array(key.prefix(1))
            let stray = !known.contains(prefix) || (prefix == [JournalSchema.Prefix.singletons] && !singletons.contains(Array(key.dropFirst())))
            if stray { mismatches.append(ProjectionMismatch(database: "state", key: Self.describe(Array(key)), problem: "not in the rebuild")) }
            return .next
        }
        return mismatches
    }

    private static func describe(_ key: [UInt8]) -> String {
        if let text = String(validating: key, as: UTF8.self), text.allSatisfy({ !$0.isASCII || $0.isLetter || $0.isNumber || "/-_.".contains($0) }) {
            return text
        }
        return key.map { String(format: "%02x", $0) }.joined()
    }
}

extension ProjectionImage {
    /// An image of nothing folded yet, of the whole journal.
    package static var empty: ProjectionImage { ProjectionImage(shard: .whole) }
}
