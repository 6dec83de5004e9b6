import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage

/// Test-only writers: they change a closed journal's bytes behind the engine's back, the way a
/// bad disk, a bug or a hand edit would, so `verify` has something real to find.
enum Tamper {
    /// Runs `body` in a write transaction on the journal's `events` database (and the rest).
    static func write(_ directory: URL, _ body: (borrowing LMDBTransaction, Databases) throws -> Void) throws {
        let environment = try LMDBEnvironment.open(directory: directory)
        defer { environment.close() }
        let databases = Databases(
            meta: try environment.openDatabase("meta"),
            events: try environment.openDatabase("events"),
            state: try environment.openDatabase(JournalSchema.stateDatabase)
        )
        try environment.write { txn in try body(txn, databases) }
    }

    struct Databases {
        var meta: LMDBDatabase
        var events: LMDBDatabase
        /// Every projection, each table under its prefix (``JournalSchema/Prefix``).
        var state: LMDBDatabase
    }

    /// Flips one bit in the body of the record at `seq`, leaving its checksum as it was.
    static func flipByte(_ directory: URL, seq: JournalSequence) throws {
        try write(directory) { txn, db in
            guard var record = try txn.get(db.events, key: seq.key) else { throw FixtureError.unexpected("no record at \(seq)") }
            record[record.count - 8] ^= 0x01
            try txn.put(db.events, key: seq.key, value: record)
        }
    }

    /// Moves the record at `seq` under its key with byte `index` XORed by `mask`: the record is
    /// intact, the key that finds it is bent, as one flipped byte in a leaf page would leave it.
    /// - Returns: the seq the bent key reads as.
    @discardableResult
    static func bendKey(_ directory: URL, seq: JournalSequence, byte index: Int, mask: UInt8) throws -> JournalSequence {
        var bent = seq.key
        bent[index] ^= mask
        try write(directory) { txn, db in
            guard let record = try txn.get(db.events, key: seq.key) else { throw FixtureError.unexpected("no record at \(seq)") }
            _ = try txn.delete(db.events, key: seq.key)
            try txn.put(db.events, key: bent, value: record)
        }
        return JournalSequence(key: bent) ?? .zero
    }

    /// Flips a bit in the operation id stored inside `operation`'s projected state, as a bad
    /// disk might: the projections then list an operation of which the journal holds nothing.
    /// - Returns: the id the state now names.
    @discardableResult
    static func bendStoredID(_ directory: URL, operation: OperationID) throws -> OperationID {
        var bent = operation
        try write(directory) { txn, db in
            let key = [JournalSchema.Prefix.operations] + operation.bytes
            guard var state = try txn.get(db.state, key: key) else {
                throw FixtureError.unexpected("no state of \(operation)")
            }
            let id = operation.bytes
            guard let start = state.indices.first(where: { state[$0...].starts(with: id) }) else {
                throw FixtureError.unexpected("the state of \(operation) does not hold its id")
            }
            state[start + 15] ^= 0x01
            bent = OperationID(bytes: state[start..<start + 16]) ?? operation
            try txn.put(db.state, key: key, value: state)
        }
        return bent
    }

    /// Changes one byte of the payload of the `enqueued` record at `seq` and writes a checksum
    /// that matches: a sound record whose payload no longer hashes to its request hash.
    static func alterPayload(_ directory: URL, seq: JournalSequence) throws {
        try write(directory) { txn, db in
            guard var record = try txn.get(db.events, key: seq.key) else { throw FixtureError.unexpected("no record at \(seq)") }
            let marker = Array("Antiseptic".utf8)
            guard let start = record.indices.first(where: { record[$0...].starts(with: marker) }) else {
                throw FixtureError.unexpected("no payload marker at \(seq)")
            }
            record[start] = UInt8(ascii: "X")
            record.removeLast(4)
            record += CRC32C.checksum(record).bigEndianBytes
            try txn.put(db.events, key: seq.key, value: record)
        }
    }

    /// Appends `body` for `operation` after the last event, encoded by the engine's codec but
    /// never folded: the projections do not see it.
    @discardableResult
    static func appendRaw(_ directory: URL, operation: OperationID?, body: JournalEventBody,
                          at moment: Date = Date(timeIntervalSince1970: 1_800_010_000)) throws -> JournalSequence {
        var appended = JournalSequence.zero
        try write(directory) { txn, db in
            let last = try txn.last(db.events).flatMap { JournalSequence(key: $0.key) } ?? .zero
            appended = last.next
            let event = JournalEvent(seq: appended, operationID: operation, recordedAt: moment, body: body)
            try txn.put(db.events, key: appended.key, value: RecordCodec.encode(event), flags: .append)
        }
        return appended
    }

    /// Stores a `meta` number (format or projection version) as the engine does: a big-endian u32.
    static func setMeta(_ directory: URL, key: String, to value: UInt32) throws {
        try write(directory) { txn, db in
            try txn.put(db.meta, key: Array(key.utf8), value: value.bigEndianBytes)
        }
    }

    /// Sets the stored count of one status to a value the events do not support.
    static func setStatusCounter(_ directory: URL, status: OutboxStatus, to value: Int64) throws {
        try write(directory) { txn, db in
            let key = [JournalSchema.Prefix.singletons] + Array(JournalSchema.SingletonKey.counters.utf8)
            var counters = try JournalCounters(decoding: try txn.get(db.state, key: key) ?? [])
            counters.add(value - counters.count(of: status), to: status)
            try txn.put(db.state, key: key, value: counters.encoded())
        }
    }
}

/// The SHA-256 of the journal's data file: equal before and after means not one byte changed.
func dataFileDigest(_ directory: URL) throws -> SHA256Digest {
    SHA256Digest(of: try Data(contentsOf: directory.appendingPathComponent("data.mdb")))
}
