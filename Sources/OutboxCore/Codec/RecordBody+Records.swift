import Foundation
import OutboxWire
import OutboxCrypto

/// The record format's bodies of the member's records (format 3): how each is written and read,
/// beside the older kinds in `RecordBody.swift`.

extension RecordWrite: RecordBody {
    /// The key, the value's hash (absent: a delete), the schema version, and the value itself:
    /// plaintext, sealed, the enqueued request's payload (the same bytes, not repeated), or left
    /// out (a local write keeps its value in the record store).
    func write(to writer: inout ByteWriter) { write(to: &writer, payload: nil) }

    /// - Parameter payload: the plaintext payload of the `enqueued` record the change is in.
    func write(to writer: inout ByteWriter, payload: Data?) {
        writer.write(key)
        writer.writeOptional(valueHash) { $0.write($1) }
        writer.write(UInt32(schemaVersion))
        if sealedValue == nil, let value, let payload, value == payload {
            writer.write(RecordValueTag.payload.rawValue)
        } else if let sealedValue {
            writer.write(RecordValueTag.sealed.rawValue)
            writer.write(bytes: sealedValue)
        } else if let value {
            writer.write(RecordValueTag.plaintext.rawValue)
            writer.write(bytes: value)
        } else {
            writer.write(RecordValueTag.none.rawValue)
        }
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        try self.init(reading: &reader, payload: nil)
    }

    /// - Parameter payload: where the plaintext payload of the `enqueued` record it is in lies
    ///   (`nil`: none it may refer to).
    init(reading reader: inout ByteReader, payload: Range<Int>?) throws(DecodingProblem) {
        try self.init(key: try reader.readRecordKey(), readingRest: &reader, payload: payload)
    }

    /// A change's fields after its key, which the caller read (or matched).
    init(key: RecordKey, readingRest reader: inout ByteReader, payload: Range<Int>?) throws(DecodingProblem) {
        let hash = try reader.readOptional("record value hash") { (reader) throws(DecodingProblem) in try reader.readDigest("record value hash") }
        let schemaVersion = Int(try reader.readUInt32("record schema version"))
        let tag = try reader.readUInt8("record value")
        var value: Data?
        var sealed: [UInt8]?
        switch RecordValueTag(rawValue: tag) {
        case .none?: break
        case .plaintext?: value = try reader.readData("record value")
        case .sealed?: sealed = try reader.readBytes("sealed record value")
        case .payload?:
            guard let payload else { throw DecodingProblem("a record value that refers to a payload where there is none") }
            value = reader.data(in: payload)
        case nil: throw DecodingProblem("unknown record value tag \(tag)")
        }
        if value != nil || sealed != nil, hash == nil { throw DecodingProblem("a deleted record with a value") }
        self.init(key: key, value: value, valueHash: hash, schemaVersion: schemaVersion, sealedValue: sealed)
    }

    /// Moves past a change's fields after its key, unread.
    static func skipRest(_ reader: inout ByteReader) throws(DecodingProblem) {
        if try reader.readBool("record value hash") { try reader.skip(SHA256Digest.byteCount, "record value hash") }
        try reader.skip(4, "record schema version")
        let tag = try reader.readUInt8("record value")
        switch RecordValueTag(rawValue: tag) {
        case .none?, .payload?: break
        case .plaintext?, .sealed?: try reader.skipBytes("record value")
        case nil: throw DecodingProblem("unknown record value tag \(tag)")
        }
    }
}

extension RecordConfirmation: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(key)
        writer.write(revision)
        writer.writeOptional(valueHash) { $0.write($1) }
        writer.write(source.code)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(
            key: try reader.readRecordKey(),
            revision: try reader.readUInt64("record revision"),
            valueHash: try reader.readOptional("record value hash") { (reader) throws(DecodingProblem) in try reader.readDigest("record value hash") },
            source: try reader.readCode(RecordConfirmation.Source.self, "confirmation source")
        )
    }
}

extension HeldOnRollback: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(builtOn) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(builtOn: try reader.readOperationID("rolled-back write"))
    }
}

extension RollbackAcknowledged: RecordBody {
    func write(to writer: inout ByteWriter) { writer.write(key) }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(key: try reader.readRecordKey())
    }
}

extension RecordsWritten: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(UInt32(writes.count))
        for write in writes { write.write(to: &writer) }
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let count = Int(try reader.readUInt32("record write count"))
        guard count <= reader.remaining else { throw DecodingProblem("\(count) record writes cannot fit") }
        var writes: [RecordWrite] = []
        for _ in 0..<count { writes.append(try RecordWrite(reading: &reader, version: version)) }
        self.init(writes: writes)
    }
}

extension RecordBaseDropped: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(type)
        writer.write(UInt32(schemaVersion))
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"), type: try reader.readString("record type"),
                  schemaVersion: Int(try reader.readUInt32("record schema version")))
    }
}

/// The tag before a record change's value (format 3).
enum RecordValueTag: UInt8 {
    case none = 0
    case plaintext = 1
    case sealed = 2
    /// The value is the `enqueued` record's plaintext payload, byte for byte: not repeated.
    case payload = 3
}

extension Enqueued {
    /// A format-3 body's record changes, its request's fields passed over unread.
    static func changes(reading reader: inout ByteReader) throws(DecodingProblem) -> [RecordWrite] {
        let (count, payload) = try skipToChanges(&reader)
        var changes: [RecordWrite] = []
        changes.reserveCapacity(count)
        for _ in 0..<count { changes.append(try RecordWrite(reading: &reader, payload: payload)) }
        return changes
    }

    /// A format-3 body's change to `key`, the other changes and the request passed over unread
    /// (the key compared byte for byte in place); `nil` when it does not change `key`.
    static func change(to key: RecordKey, reading reader: inout ByteReader) throws(DecodingProblem) -> RecordWrite? {
        let (count, payload) = try skipToChanges(&reader)
        for _ in 0..<count {
            let business = try reader.readString(matching: key.business, "record business")
            let type = try reader.readString(matching: key.type, "record type")
            let id = try reader.readString(matching: key.id, "record id")
            if business && type && id { return try RecordWrite(key: key, readingRest: &reader, payload: payload) }
            try RecordWrite.skipRest(&reader)
        }
        return nil
    }

    /// Moves past a format-3 body's request fields to its record changes.
    /// - Returns: how many changes follow, and where the payload lies when a change may refer to
    ///   it (not sealed).
    private static func skipToChanges(_ reader: inout ByteReader) throws(DecodingProblem) -> (count: Int, payload: Range<Int>?) {
        for _ in 0..<4 { try reader.skipBytes("request field") }        // business, type, method, endpoint
        let payload = try reader.skipBytesKeepingRange("payload")
        if try reader.readBool("entity id") { try reader.skipBytes("entity id") }
        for _ in 0..<3 { try reader.skipBytes("presentation field") }   // category, label, summary
        try reader.skip(4 + SHA256Digest.byteCount, "payload version and hash")
        try reader.skipBytes("account")
        let sealed = try reader.readBool("sealed presentation")
        if sealed { try reader.skipBytes("sealed presentation") }
        try reader.skip(1, "app-given id")
        if try reader.readBool("base revision") { try reader.skipBytes("base revision") }
        let dependencies = Int(try reader.readUInt32("dependency count"))
        try reader.skip(dependencies * 16, "dependencies")
        if try reader.readBool("supersedes") { try reader.skip(16 + 1 + 8, "supersedes") }
        let count = Int(try reader.readUInt32("record change count"))
        guard count <= reader.remaining else { throw DecodingProblem("\(count) record changes cannot fit") }
        return (count, sealed ? nil : payload)
    }
}
