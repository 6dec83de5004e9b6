import Foundation
import OutboxCore
import OutboxStorage

/// Every projection, folded in memory from the events alone.
///
/// What `verify` compares the stored projections with, and what a reader uses when a journal's
/// stored projections were written by another layout. It computes each entry with the same pure
/// functions (``Projection``) the append path uses.
struct ProjectionImage: Equatable {
    var states: [OperationID: OperationState] = [:]
    var engine = EngineState()
    /// The event counters (events, bytes, attempts, outcomes, conflicts).
    var eventCounters: [String: Int64] = [:]
    /// The history index: operation id and seq of every operation event.
    var historyKeys: Set<[UInt8]> = []

    /// Folds one more event.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` for an illegal transition.
    mutating func apply(_ event: JournalEvent, recordSize: Int) throws(OutboxError) {
        var after: OperationState?
        if let id = event.operationID {
            do {
                after = try Fold.apply(event, to: states[id])
            } catch {
                throw .journalCorrupt(seq: event.seq, reason: "illegal transition: \(error)")
            }
            states[id] = after
            historyKeys.insert(JournalSchema.operationEventKey(id, seq: event.seq))
        } else {
            if case .compacted(let compacted) = event.body {
                let stubs: [(before: OperationState?, after: OperationState)]
                do {
                    stubs = try Fold.applyCompaction(compacted, seq: event.seq, recordedAt: event.recordedAt) { states[$0] }
                } catch {
                    throw .journalCorrupt(seq: event.seq, reason: "illegal transition: \(error)")
                }
                for (_, stub) in stubs { states[stub.id] = stub }
            }
            engine = engine.applying(event)
        }
        for (name, delta) in Projection.eventCounters(recordSize: recordSize) {
            eventCounters[name, default: 0] += delta
        }
    }

    /// Folds every event of a journal in one read transaction.
    static func build(schema: JournalSchema, in txn: borrowing LMDBTransaction) throws -> ProjectionImage {
        var image = ProjectionImage()
        try txn.scan(schema.events) { key, value in
            let seq = JournalSequence(key: key) ?? .zero
            try image.apply(try RecordCodec.decode(Array(value), seq: seq), recordSize: value.count)
            return .next
        }
        return image
    }

    /// Every counter: the events' own and those of each state's footprint.
    var counters: [String: Int64] {
        var counters = eventCounters
        for state in states.values {
            for (name, count) in Projection.footprint(of: state).counters { counters[name, default: 0] += count }
        }
        return counters.filter { $0.value != 0 }
    }

    /// The content each projection database should hold.
    func expectedTables(schema: JournalSchema) -> [LMDBDatabase: [[UInt8]: [UInt8]]] {
        var tables: [LMDBDatabase: [[UInt8]: [UInt8]]] = [:]
        var operations: [[UInt8]: [UInt8]] = [:]
        var indexes: [Projection.Index: [[UInt8]: [UInt8]]] = [:]
        for state in states.values {
            operations[state.id.bytes] = StateCodec.encode(state)
            for (index, key) in Projection.footprint(of: state).entries {
                indexes[index, default: [:]][key] = state.id.bytes
            }
        }
        tables[schema.operations] = operations
        for index in Projection.Index.allCases {
            tables[index.database(in: schema)] = indexes[index] ?? [:]
        }
        tables[schema.operationEvents] = Dictionary(uniqueKeysWithValues: historyKeys.map { ($0, []) })
        tables[schema.counters] = Dictionary(uniqueKeysWithValues: counters.map {
            (Array($0.key.utf8), UInt64(bitPattern: $0.value).bigEndianBytes)
        })
        return tables
    }
}

/// A difference between a stored projection and the same projection folded from the events.
struct ProjectionMismatch: Equatable, CustomStringConvertible {
    var database: String
    var key: String
    var problem: String

    var description: String { "\(database) [\(key)]: \(problem)" }
}

extension JournalStore {
    /// Folds the whole journal in memory and compares every stored projection with the result.
    /// - Returns: each difference; empty when the projections equal a rebuild.
    func compareProjectionsWithRebuild() throws(OutboxError) -> [ProjectionMismatch] {
        let schema = self.schema
        return try read { txn in
            try ProjectionImage.build(schema: schema, in: txn).mismatches(withStoredIn: schema, txn: txn)
        }
    }
}

extension ProjectionImage {
    /// Compares every stored projection with this image.
    /// - Returns: each difference; empty when the stored projections equal the image.
    func mismatches(withStoredIn schema: JournalSchema, txn: borrowing LMDBTransaction) throws -> [ProjectionMismatch] {
        var mismatches: [ProjectionMismatch] = []
        for (database, expected) in expectedTables(schema: schema).sorted(by: { $0.key.name < $1.key.name }) {
            let name = database.name
            var stored: [[UInt8]: [UInt8]] = [:]
            try txn.scan(database) { key, value in
                stored[Array(key)] = Array(value)
                return .next
            }
            for (key, value) in expected where stored[key] != value {
                let problem = stored[key] == nil ? "missing" : "differs from the rebuild"
                mismatches.append(ProjectionMismatch(database: name, key: Self.describe(key), problem: problem))
            }
            for key in stored.keys where expected[key] == nil {
                mismatches.append(ProjectionMismatch(database: name, key: Self.describe(key), problem: "not in the rebuild"))
            }
        }
        let storedEngine = try schema.engineState(in: txn)
        if storedEngine != engine {
            mismatches.append(ProjectionMismatch(database: "meta", key: "engine-state", problem: "differs from the rebuild"))
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
