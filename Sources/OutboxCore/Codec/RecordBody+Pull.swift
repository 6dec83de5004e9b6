import Foundation
import OutboxWire
import OutboxCrypto

/// The record format's bodies of the pull (format 4): a record the server deleted, and a page
/// of a change feed applied or refused.

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
        writer.write(UInt32(confirmations.count))
        for confirmation in confirmations { confirmation.write(to: &writer) }
        writer.write(UInt32(skipped))
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let business = try reader.readString("business")
        let from = try reader.readPosition("page start")
        let to = try reader.readPosition("page cursor")
        let reachedEnd = try reader.readBool("reached end")
        let digest = try reader.readDigest("page digest")
        let count = Int(try reader.readUInt32("pulled change count"))
        guard count <= reader.remaining else { throw DecodingProblem("\(count) pulled changes cannot fit") }
        var confirmations: [RecordConfirmation] = []
        for _ in 0..<count { confirmations.append(try RecordConfirmation(reading: &reader, version: version)) }
        self.init(business: business, from: from, to: to, reachedEnd: reachedEnd, digest: digest,
                  confirmations: confirmations, skipped: Int(try reader.readUInt32("skipped changes")))
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

extension ByteWriter {
    /// A feed position: its epoch, major and minor, each a u64.
    mutating func write(position: FeedPosition) {
        write(position.epoch)
        write(position.major)
        write(position.minor)
    }
}

extension ByteReader {
    mutating func readPosition(_ what: StaticString) throws(DecodingProblem) -> FeedPosition {
        FeedPosition(epoch: try readUInt64(what), major: try readUInt64(what), minor: try readUInt64(what))
    }
}
