import Foundation
import OutboxWire
import OutboxCrypto

/// The record format's bodies of the pull (format 4): a record the server deleted, a page of a
/// change feed applied or refused, and a resnapshot's steps.

extension DeletedOnServer: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(key)
        writer.write(revision)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(key: try reader.readRecordKey(), revision: try reader.readUInt64("tombstone revision"))
    }
}

extension PageApplied: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(position: from)
        writer.write(position: to)
        writer.write(reachedEnd)
        writer.write(digest)
        writer.write(confirmations: confirmations)
        writer.write(skipped: skipped)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let business = try reader.readString("business")
        let from = try reader.readPosition("page start")
        let to = try reader.readPosition("page cursor")
        let reachedEnd = try reader.readBool("reached end")
        let digest = try reader.readDigest("page digest")
        let confirmations = try reader.readConfirmations(version: version)
        self.init(business: business, from: from, to: to, reachedEnd: reachedEnd, digest: digest,
                  confirmations: confirmations, skipped: try reader.readSkipped())
    }
}

extension PageRefused: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.writeOptional(from) { $0.write(position: $1) }
        writer.write(code)
        writer.write(detail)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"),
                  from: try reader.readOptional("refused page start") { (reader) throws(DecodingProblem) in try reader.readPosition("refused page start") },
                  code: try reader.readString("refusal code"), detail: try reader.readString("refusal detail"))
    }
}

extension ResnapshotStarted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(type)
        writer.write(reason)
        writer.writeOptional(from) { $0.write(position: $1) }
        writer.write(position: position)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"), type: try reader.readOptionalString("resnapshot type"),
                  reason: try reader.readString("resnapshot reason"),
                  from: try reader.readOptional("old cursor") { (reader) throws(DecodingProblem) in try reader.readPosition("old cursor") },
                  position: try reader.readPosition("snapshot position"))
    }
}

extension SnapshotPageStaged: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(UInt32(page))
        writer.write(position: position)
        writer.write(digest)
        writer.write(confirmations: confirmations)
        writer.write(skipped: skipped)
        writer.write(reachedEnd)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"), page: Int(try reader.readUInt32("snapshot page")),
                  position: try reader.readPosition("snapshot page position"), digest: try reader.readDigest("snapshot page digest"),
                  confirmations: try reader.readConfirmations(version: version), skipped: try reader.readSkipped(),
                  reachedEnd: try reader.readBool("reached end"))
    }
}

extension ResnapshotFinished: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(type)
        writer.write(position: cursor)
        writer.write(UInt32(staged))
        writer.write(confirmations: vanished)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"), type: try reader.readOptionalString("resnapshot type"),
                  cursor: try reader.readPosition("resnapshot cursor"),
                  staged: Int(try reader.readUInt32("staged records")), vanished: try reader.readConfirmations(version: version))
    }
}

extension ResnapshotAbandoned: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(code)
        writer.write(detail)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(business: try reader.readString("business"), code: try reader.readString("abandon code"),
                  detail: try reader.readString("abandon detail"))
    }
}

extension SummaryChecked: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(business)
        writer.write(type)
        writer.write(position: position)
        writer.write(UInt32(clamping: serverCount))
        writer.write(serverDigest)
        writer.writeOptional(localCount) { $0.write(UInt32(clamping: $1)) }
        writer.writeOptional(localDigest) { $0.write($1) }
        writer.write(verdict.rawValue)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let business = try reader.readString("business")
        let type = try reader.readString("summary type")
        let position = try reader.readPosition("summary position")
        let serverCount = Int(try reader.readUInt32("server count"))
        let serverDigest = try reader.readDigest("server digest")
        let localCount = try reader.readOptional("local count") { (reader) throws(DecodingProblem) in Int(try reader.readUInt32("local count")) }
        let localDigest = try reader.readOptional("local digest") { (reader) throws(DecodingProblem) in try reader.readDigest("local digest") }
        let code = try reader.readUInt8("summary verdict")
        guard let verdict = SummaryChecked.Verdict(rawValue: code) else { throw DecodingProblem("unknown summary verdict \(code)") }
        self.init(business: business, type: type, position: position, serverCount: serverCount, serverDigest: serverDigest,
                  localCount: localCount, localDigest: localDigest, verdict: verdict)
    }
}

extension ByteWriter {
    mutating func write(confirmations: [RecordConfirmation]) {
        write(UInt32(confirmations.count))
        for confirmation in confirmations { confirmation.write(to: &self) }
    }

    /// Each change passed over: type and id strings, revision u64, reason u8.
    mutating func write(skipped: [SkippedChange]) {
        write(UInt32(skipped.count))
        for change in skipped {
            write(change.type)
            write(change.id)
            write(change.revision)
            write(change.reason.rawValue)
        }
    }
}

extension ByteReader {
    mutating func readSkipped() throws(DecodingProblem) -> [SkippedChange] {
        let count = Int(try readUInt32("skipped change count"))
        guard count <= remaining else { throw DecodingProblem("\(count) skipped changes cannot fit") }
        var skipped: [SkippedChange] = []
        for _ in 0..<count {
            let type = try readString("skipped type")
            let id = try readString("skipped id")
            let revision = try readUInt64("skipped revision")
            let code = try readUInt8("skipped reason")
            guard let reason = SkippedChange.Reason(rawValue: code) else { throw DecodingProblem("unknown skip reason \(code)") }
            skipped.append(SkippedChange(type: type, id: id, revision: revision, reason: reason))
        }
        return skipped
    }

    mutating func readConfirmations(version: Int) throws(DecodingProblem) -> [RecordConfirmation] {
        let count = Int(try readUInt32("record confirmation count"))
        guard count <= remaining else { throw DecodingProblem("\(count) record confirmations cannot fit") }
        var confirmations: [RecordConfirmation] = []
        confirmations.reserveCapacity(count)
        for _ in 0..<count { confirmations.append(try RecordConfirmation(reading: &self, version: version)) }
        return confirmations
    }
}

