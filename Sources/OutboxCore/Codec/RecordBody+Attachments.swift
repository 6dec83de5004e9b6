import Foundation
import OutboxWire

/// The record format of attachments (format 7): the manifest in `enqueued`, and the bodies of
/// the upload's events.

extension AttachmentManifest {
    func write(to writer: inout ByteWriter) {
        writer.write(OperationID(uuid: id.uuid))
        writer.write(name)
        writer.write(contentType)
        writer.write(UInt64(size))
        writer.write(sha256)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(
            id: AttachmentID(uuid: try reader.readOperationID("attachment id").uuid), name: try reader.readString("attachment name"),
            contentType: try reader.readString("content type"), size: Int64(try reader.readUInt64("attachment size")),
            sha256: try reader.readDigest("attachment sha256")
        )
    }
}

extension LandedSegment {
    func write(to writer: inout ByteWriter) {
        writer.write(UInt32(number))
        writer.write(UInt64(size))
        writer.write(etag)
    }

    init(reading reader: inout ByteReader) throws(DecodingProblem) {
        self.init(number: Int(try reader.readUInt32("segment number")), size: Int64(try reader.readUInt64("segment size")),
                  etag: try reader.readString("segment etag"))
    }
}

extension AttachmentGranted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(OperationID(uuid: attachment.uuid))
        writer.write(UInt64(segmentSize))
        writer.write(UInt32(segmentCount))
        writer.write(seconds: lifetimeSeconds)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attachment: AttachmentID(uuid: try reader.readOperationID("attachment id").uuid),
                  segmentSize: Int64(try reader.readUInt64("segment size")), segmentCount: Int(try reader.readUInt32("segment count")),
                  lifetimeSeconds: try reader.readSeconds("grant lifetime"))
    }
}

extension SegmentLanded: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(OperationID(uuid: attachment.uuid))
        segment.write(to: &writer)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attachment: AttachmentID(uuid: try reader.readOperationID("attachment id").uuid), segment: try LandedSegment(reading: &reader))
    }
}

extension AttachmentCompleted: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(OperationID(uuid: attachment.uuid))
        writer.write(object)
        writer.write(UInt64(size))
        writer.write(sha256)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attachment: AttachmentID(uuid: try reader.readOperationID("attachment id").uuid), object: try reader.readString("object"),
                  size: Int64(try reader.readUInt64("object size")), sha256: try reader.readDigest("object sha256"))
    }
}

extension AttachmentRefused: RecordBody {
    func write(to writer: inout ByteWriter) {
        writer.write(OperationID(uuid: attachment.uuid))
        writer.writeOptional(statusCode) { $0.write(UInt16(clamping: $1)) }
        writer.write(errorCode)
        writer.write(message)
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        self.init(attachment: AttachmentID(uuid: try reader.readOperationID("attachment id").uuid),
                  statusCode: try reader.readOptional("status") { (reader) throws(DecodingProblem) in Int(try reader.readUInt16("status")) },
                  errorCode: try reader.readString("error code"), message: try reader.readString("message"))
    }
}
