package import Foundation
package import OutboxCore
package import OutboxStorage
package import OutboxWire

/// How each of the journal's keys and values is laid out: the one place for each.
///
/// A table of ``JournalSchema`` names its key and value codec; code that reads or writes the
/// journal goes through the table, never through bytes of its own. The layouts are described in
/// `Docs/journal-format.md`.
package enum JournalCodec {
    /// A seq: 8 bytes, big-endian, so keys sort in journal order.
    package enum Seq: LMDBCodec {
        package static func encode(_ item: JournalSequence, into bytes: inout [UInt8]) {
            withUnsafeBytes(of: item.rawValue.bigEndian) { bytes.append(contentsOf: $0) }
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> JournalSequence {
            JournalSequence(rawValue: try BigEndianUInt64.decode(bytes))
        }
    }

    /// An operation id: its 16 bytes.
    package enum ID: LMDBCodec {
        package static func encode(_ item: OperationID, into bytes: inout [UInt8]) {
            withUnsafeBytes(of: item.uuid.uuid) { bytes += $0 }
        }

        /// The borrowing form, for the hot path: the id's bytes lent from the stack.
        static func withEncoded<R>(_ item: OperationID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try withUnsafeBytes(of: item.uuid.uuid, body)
        }

        /// Loads the 16 bytes at once: `OperationID(bytes:)`, generic over its collection, looks
        /// up that type's metadata at run time on every id an index scan reads.
        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> OperationID {
            guard bytes.count == 16 else {
                throw LMDBCodecError(reason: "\(bytes.count) bytes where an operation id takes 16")
            }
            return OperationID(uuid: UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
        }
    }

    /// An operation's folded state (``StateCodec``).
    package enum State: LMDBCodec {
        package static func encode(_ item: OperationState, into bytes: inout [UInt8]) {
            var writer = ByteWriter(capacity: 256)
            StateCodec.encode(item, into: &writer)
            bytes += writer.bytes
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> OperationState {
            try StateCodec.decode(Array(bytes))
        }
    }

    /// An operation's folded state without its event seqs, the one field that grows with its
    /// history (``StateCodec/decode(_:eventSeqs:)``): for reads that show a row and never write
    /// it back. Never stored through.
    package enum StateToShow: LMDBCodec {
        package static func encode(_ item: OperationState, into bytes: inout [UInt8]) { State.encode(item, into: &bytes) }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> OperationState {
            try StateCodec.decode(Array(bytes), eventSeqs: false)
        }
    }

    /// A Sync tab row: the fields of its operation's state the tab shows and judges it by
    /// (``StateCodec/encodeTabRow(_:into:)``), read back as a state holding them.
    package enum TabRow: LMDBCodec {
        package static func encode(_ item: OperationState, into bytes: inout [UInt8]) { bytes += StateCodec.tabRowBytes(item) }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> OperationState {
            try StateCodec.decodeTabRow(Array(bytes))
        }
    }

    /// The engine's state (``StateCodec``).
    package enum Engine: LMDBCodec {
        package static func encode(_ item: EngineState, into bytes: inout [UInt8]) { bytes += StateCodec.encode(item) }
        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> EngineState { try StateCodec.decodeEngine(Array(bytes)) }
    }

    /// A status, then the first seq: rows of one status in journal order.
    package enum StatusKey: LMDBCodec {
        package static func encode(_ item: (status: OutboxStatus, firstSeq: JournalSequence), into bytes: inout [UInt8]) {
            bytes.append(item.status.code)
            Seq.encode(item.firstSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (status: OutboxStatus, firstSeq: JournalSequence) {
            guard bytes.count == 9, let status = OutboxStatus(code: bytes[0]) else { throw LMDBCodecError(reason: "a damaged status key") }
            return (status, try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes[1...])))
        }

        /// The leading part of every key of `status`.
        static func leading(_ status: OutboxStatus) -> [UInt8] { [status.code] }
    }

    /// A due moment (8 bytes that sort as the moment does; all zero for "due now"), then the
    /// first seq: queued rows in the order they come due.
    package enum ScheduleKey: LMDBCodec {
        package static func encode(_ item: (dueAt: Date?, firstSeq: JournalSequence), into bytes: inout [UInt8]) {
            let due = item.dueAt.map { sortableBits($0.timeIntervalSinceReferenceDate) } ?? 0
            withUnsafeBytes(of: due.bigEndian) { bytes.append(contentsOf: $0) }
            Seq.encode(item.firstSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (dueAt: Date?, firstSeq: JournalSequence) {
            guard bytes.count == 16 else { throw LMDBCodecError(reason: "a damaged schedule key") }
            return (try dueAt(bytes), try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes[8...])))
        }

        /// The moment a key names, read from its first 8 bytes alone; `nil` for "due now".
        static func dueAt(_ bytes: UnsafeRawBufferPointer) throws -> Date? {
            let bits = try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes.prefix(8)))
            guard bits != 0 else { return nil }
            return Date(timeIntervalSinceReferenceDate: unsortableBits(bits))
        }

        /// A double's bits, reordered so that unsigned comparison follows numeric order.
        private static func sortableBits(_ value: Double) -> UInt64 {
            let bits = value.bitPattern
            return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        }

        private static func unsortableBits(_ bits: UInt64) -> Double {
            Double(bitPattern: bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits)
        }
    }

    /// A lane (``Lane/bytes``: its parts length-prefixed), then the first seq: a lane's rows in
    /// journal order. No lane's bytes begin with another's, so a scan of one lane's leading bytes
    /// finds its rows alone.
    package enum LaneKey: LMDBCodec {
        package static func encode(_ item: (lane: Lane, firstSeq: JournalSequence), into bytes: inout [UInt8]) {
            bytes.append(contentsOf: item.lane.bytes)
            Seq.encode(item.firstSeq, into: &bytes)
        }

        /// The key of `state`'s lane entry, its lane's bytes written straight into `bytes`
        /// (those of ``OperationState/lane``, without building the lane).
        package static func encode(laneOf state: OperationState, into bytes: inout [UInt8]) {
            Lane.encode(businessID: state.businessID, entityID: state.entityID, operation: state.id, into: &bytes)
            Seq.encode(state.laneSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (lane: Lane, firstSeq: JournalSequence) {
            guard bytes.count > 8, let lane = Lane(bytes: bytes.prefix(bytes.count - 8)) else {
                throw LMDBCodecError(reason: "a damaged lane key")
            }
            return (lane, try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes.suffix(8))))
        }

        /// The leading part of every key of `lane`.
        static func leading(_ lane: Lane) -> [UInt8] { lane.bytes }
    }

    /// A Sync tab group, a category, a zero byte, then the latest seq: a card's rows, oldest
    /// change first.
    package enum TabKey: LMDBCodec {
        package static func encode(_ item: (group: JournalSchema.TabGroup, category: String, latestSeq: JournalSequence), into bytes: inout [UInt8]) {
            bytes.append(item.group.rawValue)
            bytes.append(contentsOf: item.category.utf8)
            bytes.append(0)
            Seq.encode(item.latestSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (group: JournalSchema.TabGroup, category: String, latestSeq: JournalSequence) {
            guard bytes.count > 10, bytes[bytes.count - 9] == 0, let group = JournalSchema.TabGroup(rawValue: bytes[0]) else {
                throw LMDBCodecError(reason: "a damaged Sync tab key")
            }
            return (group, String(decoding: bytes[1..<bytes.count - 9], as: UTF8.self),
                    try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes.suffix(8))))
        }

        /// The leading part of every key of one card.
        static func leading(_ group: JournalSchema.TabGroup, category: String) -> [UInt8] {
            [group.rawValue] + Array(category.utf8) + [0]
        }
    }

    /// A 32-bit version, big-endian.
    package enum Version: LMDBCodec {
        package static func encode(_ item: UInt32, into bytes: inout [UInt8]) { bytes += item.bigEndianBytes }
        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> UInt32 {
            guard bytes.count == 4 else { throw LMDBCodecError(reason: "\(bytes.count) bytes where a version takes 4") }
            return bytes.reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}

/// A table seen as what it stores: its database and key prefix, keys and values as bytes. How a
/// rebuild writes rows in key order and how `verify` compares what is stored with a rebuild.
package struct StoredTable: Hashable, Sendable {
    package let database: LMDBDatabase
    package let prefix: [UInt8]
    /// What `verify` calls it: the table's name (the database it had to itself before layout 5).
    package let name: String

    package init<K, V>(_ table: LMDBTable<K, V>) {
        database = table.database
        prefix = table.prefix
        name = table.name
    }

    /// Every entry, its key without the prefix.
    package func entries(in txn: borrowing LMDBTransaction) throws -> [[UInt8]: [UInt8]] {
        var entries: [[UInt8]: [UInt8]] = [:]
        let table = LMDBTable<RawBytes, RawBytes>(database, prefix: prefix)
        try txn.scan(table) { entry in
            entries[Array(entry.keyBytes)] = Array(entry.valueBytes)
            return .next
        }
        return entries
    }
}
