import OutboxWire

/// The stored form of an operation's attachments in its state (the `operations` projection):
/// each file's manifest (written as the `enqueued` record writes it), then what its upload has
/// come to: the segment size granted, the grants and refusals counted, the segments landed,
/// the object completed or the refusal's code.
extension StateCodec {
    static func writeUpload(_ writer: inout ByteWriter, _ upload: AttachmentUpload) {
        upload.manifest.write(to: &writer)
        writer.writeOptional(upload.segmentSize) { $0.write(UInt64($1)) }
        writer.write(UInt32(upload.grants))
        writer.write(UInt32(upload.refusals))
        writer.write(UInt32(upload.landed.count))
        for segment in upload.landed { segment.write(to: &writer) }
        writer.write(upload.completedObject)
        writer.write(upload.refusedCode)
    }

    static func readUpload(_ reader: inout ByteReader) throws(DecodingProblem) -> AttachmentUpload {
        var upload = AttachmentUpload(manifest: try AttachmentManifest(reading: &reader))
        upload.segmentSize = try reader.readOptional("segment size") { (reader) throws(DecodingProblem) in Int64(try reader.readUInt64("segment size")) }
        upload.grants = Int(try reader.readUInt32("grants"))
        upload.refusals = Int(try reader.readUInt32("refusals"))
        let count = Int(try reader.readUInt32("landed segments"))
        guard count <= reader.remaining / 12 else { throw DecodingProblem("\(count) segments cannot fit") }
        for _ in 0..<count { upload.landed.append(try LandedSegment(reading: &reader)) }
        upload.completedObject = try reader.readOptionalString("completed object")
        upload.refusedCode = try reader.readOptionalString("refused code")
        return upload
    }
}
