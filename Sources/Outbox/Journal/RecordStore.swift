package import Foundation
package import OutboxCore
package import OutboxCrypto
package import OutboxStorage
package import OutboxWire

/// The member's record values the journal's events do not hold: each record's server base (what
/// the server last confirmed) and the local-only records. Kept in their own database,
/// `records`, beside `state`: a rebuild of the projections never clears them.
///
/// | table (prefix) | key | value |
/// |---|---|---|
/// | base (1) | ``RecordKey/bytes`` | ``RecordStoreEntry``: the revision, when it was learnt, the event that brought it, the value |
/// | local (2) | ``RecordKey/bytes`` | ``RecordStoreEntry``: revision 0, the `recordsWritten` event, the value |
///
/// Each is a cache checked against the journal's trail: every value the store holds came with
/// an event that names its revision and SHA-256 (`attemptFinished`'s confirmations, or
/// `recordsWritten`), and `verify` checks the store against that trail.
package struct RecordStoreEntry: Sendable, Equatable {
    /// The server's revision; 0 for a local record.
    package var revision: UInt64
    /// When the event that brought it was recorded.
    package var learntAt: Date
    /// The event that brought it.
    package var seq: JournalSequence
    package var schemaVersion: Int
    /// The value's SHA-256; `nil`: deleted (a tombstone, so that an older revision never brings
    /// it back).
    package var valueHash: SHA256Digest?
    /// The value; `nil` when deleted or still sealed.
    package var value: Data?
    /// The value sealed at rest, when the journal is encrypted.
    package var sealedValue: [UInt8]?

    package var isDeleted: Bool { valueHash == nil }
}

extension JournalCodec {
    /// A ``RecordStoreEntry``: a form byte (1), the revision, the moment, the seq, the schema
    /// version, the value's hash (optional), then the value (a tag: none, plaintext, sealed).
    package enum Record: LMDBCodec {
        package static func encode(_ item: RecordStoreEntry, into bytes: inout [UInt8]) {
            var writer = ByteWriter(capacity: 64 + (item.value?.count ?? item.sealedValue?.count ?? 0))
            writer.write(UInt8(1))
            writer.write(item.revision)
            writer.write(item.learntAt)
            writer.write(item.seq.rawValue)
            writer.write(UInt32(item.schemaVersion))
            writer.writeOptional(item.valueHash) { writer, hash in hash.withUnsafeBytes { writer.write(raw: $0) } }
            if let sealed = item.sealedValue {
                writer.write(UInt8(2))
                writer.write(bytes: sealed)
            } else if let value = item.value {
                writer.write(UInt8(1))
                writer.write(bytes: value)
            } else {
                writer.write(UInt8(0))
            }
            bytes += writer.bytes
        }

        /// The revision alone, read without copying the value: what a write compares against.
        static func revision(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 {
            var reader = ByteReader(Array(bytes.prefix(9)))
            guard try reader.readUInt8("record form") == 1 else { throw LMDBCodecError(reason: "an unknown stored record form") }
            return try reader.readUInt64("revision")
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> RecordStoreEntry {
            var reader = ByteReader(Array(bytes))
            guard try reader.readUInt8("record form") == 1 else { throw LMDBCodecError(reason: "an unknown stored record form") }
            let revision = try reader.readUInt64("revision")
            let learntAt = try reader.readDate("learnt at")
            let seq = JournalSequence(rawValue: try reader.readUInt64("seq"))
            let schemaVersion = Int(try reader.readUInt32("schema version"))
            let hash = try reader.readOptional("value hash") { (reader) throws(DecodingProblem) in try reader.readDigest("value hash") }
            var record = RecordStoreEntry(revision: revision, learntAt: learntAt, seq: seq, schemaVersion: schemaVersion, valueHash: hash)
            switch try reader.readUInt8("value tag") {
            case 0: break
            case 1: record.value = try reader.readData("value")
            case 2: record.sealedValue = try reader.readBytes("sealed value")
            case let tag: throw LMDBCodecError(reason: "an unknown stored value tag \(tag)")
            }
            try reader.expectEnd("the stored record")
            if hash == nil, record.value != nil || record.sealedValue != nil { throw LMDBCodecError(reason: "a deleted record with a value") }
            return record
        }
    }

    /// A record key (``RecordKey/bytes``).
    package enum RecordKeyCodec: LMDBCodec {
        package static func encode(_ item: RecordKey, into bytes: inout [UInt8]) { bytes += item.bytes }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> RecordKey {
            guard let (key, count) = RecordKey.read(bytes), count == bytes.count else { throw LMDBCodecError(reason: "a damaged record key") }
            return key
        }
    }

    /// A record, then a write's place in its lane and its own first seq: the writes of one
    /// record in the order the member made them (`record-writes`).
    package enum RecordWriteKey: LMDBCodec {
        package static func encode(_ item: (key: RecordKey, laneSeq: JournalSequence, firstSeq: JournalSequence), into bytes: inout [UInt8]) {
            bytes += item.key.bytes
            Seq.encode(item.laneSeq, into: &bytes)
            Seq.encode(item.firstSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (key: RecordKey, laneSeq: JournalSequence, firstSeq: JournalSequence) {
            guard let (key, count) = RecordKey.read(bytes), bytes.count == count + 16 else { throw LMDBCodecError(reason: "a damaged record write key") }
            return (key, try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes[count..<(count + 8)])),
                    try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes[(count + 8)...])))
        }
    }

    /// A record, then the first seq of a write that changed it (`record-ops`): its history.
    package enum RecordOpKey: LMDBCodec {
        package static func encode(_ item: (key: RecordKey, firstSeq: JournalSequence), into bytes: inout [UInt8]) {
            bytes += item.key.bytes
            Seq.encode(item.firstSeq, into: &bytes)
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (key: RecordKey, firstSeq: JournalSequence) {
            guard let (key, count) = RecordKey.read(bytes), bytes.count == count + 8 else { throw LMDBCodecError(reason: "a damaged record history key") }
            return (key, try Seq.decode(UnsafeRawBufferPointer(rebasing: bytes[count...])))
        }
    }
}
