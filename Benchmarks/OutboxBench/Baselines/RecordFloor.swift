import Foundation
import Outbox
import OutboxAudit
import OutboxStorage

/// The least a record's read must touch, read straight through `OutboxStorage` from a journal the
/// engine wrote (projection layout 7): the record's server base in `records` (prefix 1), the
/// `record-writes` entries in `state` (prefix 5: the record's key, the write's lane seq and first
/// seq; the value its operation id), each of those writes' states in `state` (prefix 1) and its
/// `enqueued` event in `events` (its first seq). Every value is touched in place, nothing
/// decoded: what is left of the engine's read is the decoding, the checks and the view.
final class RecordFloor {
    private let environment: LMDBEnvironment
    private let events: LMDBDatabase
    private let state: LMDBDatabase
    private let records: LMDBDatabase

    private static let basePrefix: UInt8 = 1
    private static let statePrefix: UInt8 = 1
    private static let recordWritesPrefix: UInt8 = 5

    /// What one read touched.
    struct Touched: Equatable {
        var bases = 0
        var writes = 0
        var bytes = 0
    }

    /// Opens the journal in `directory`; the engine must have closed it.
    init(directory: URL) throws {
        environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        events = try environment.openDatabase("events")
        state = try environment.openDatabase("state")
        records = try environment.openDatabase("records")
    }

    deinit {
        environment.close()
    }

    /// One record's entries, in one read transaction.
    func record(_ key: RecordKey) throws -> Touched {
        try environment.read { txn in
            var touched = Touched()
            let bytes = key.bytes
            try txn.withValue(records, key: [Self.basePrefix] + bytes) { value in
                if let value {
                    touched.bases += 1
                    touched.bytes += value.count
                }
            }
            try touchWrites(leading: [Self.recordWritesPrefix] + bytes, into: &touched, in: txn)
            return touched
        }
    }

    /// Every entry of one business's records of one type, in one read transaction: a cursor scan
    /// of their bases and one of their `record-writes` entries, then each write's state and event.
    func page(business: String, type: String) throws -> Touched {
        try environment.read { txn in
            var touched = Touched()
            let leading = [Self.basePrefix] + RecordKey.scopeBytes(business: business, type: type)
            try txn.scan(records, from: leading) { key, value in
                guard key.starts(with: leading) else { return .stop }
                touched.bases += 1
                touched.bytes += value.count
                return .next
            }
            try touchWrites(leading: [Self.recordWritesPrefix] + RecordKey.scopeBytes(business: business, type: type),
                            into: &touched, in: txn)
            return touched
        }
    }

    /// The `record-writes` entries under `leading`, then each one's state and `enqueued` event.
    private func touchWrites(leading: [UInt8], into touched: inout Touched, in txn: borrowing LMDBTransaction) throws {
        var writes: [(state: [UInt8], event: [UInt8])] = []
        try txn.scan(state, from: leading) { key, value in
            guard key.starts(with: leading) else { return .stop }
            precondition(value.count == 16 && key.count >= leading.count + 16, "a damaged record-writes entry")
            writes.append(([Self.statePrefix] + Array(value), Array(key.suffix(8))))
            return .next
        }
        for write in writes {
            let stateBytes = try txn.withValue(state, key: write.state) { $0?.count }
            let eventBytes = try txn.withValue(events, key: write.event) { $0?.count }
            guard let stateBytes, let eventBytes else { throw BenchmarkFailure(description: "a pending write's state or event is missing") }
            touched.writes += 1
            touched.bytes += stateBytes + eventBytes
        }
    }
}
