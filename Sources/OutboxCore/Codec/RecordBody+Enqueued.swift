import Foundation
import OutboxWire
import OutboxCrypto

/// The record format's body of `enqueued`, the largest: the request as it will be sent, then
/// what each format added (intent in 2, the member's records in 3, the revision a change was made
/// on in 4).

extension Enqueued: RecordBody {
    func write(to writer: inout ByteWriter) {
        // Sealed, the payload field holds its ciphertext and the label and summary are empty.
        writer.write(request.businessID)
        writer.write(request.operationType)
        writer.write(request.method)
        writer.write(request.endpoint)
        if let sealed { writer.write(bytes: sealed.payload) } else { writer.write(bytes: request.payload) }
        writer.write(request.entityID)
        writer.write(request.category)
        writer.write(sealed == nil ? request.entityLabel : "")
        writer.write(sealed == nil ? request.summary : "")
        writer.write(UInt32(request.payloadVersion))
        writer.write(requestHash)
        writer.write(account)
        writer.writeOptional(sealed) { $0.write(bytes: $1.presentation) }
        // Format 2.
        writer.write(request.operationID != nil)
        writer.write(request.baseRevision)
        writer.write(UInt32(request.dependsOn.count))
        for dependency in request.dependsOn { writer.write(dependency) }
        writer.writeOptional(supersedes) { writer, supersedes in
            writer.write(supersedes.operation)
            writer.write(supersedes.reason.code)
            writer.write(supersedes.laneSeq.rawValue)
        }
        // Format 3: the records it changes, and where its If-Match comes from.
        writer.write(UInt32(changes.count))
        // A value byte for byte the (plaintext) payload refers to it instead of repeating it.
        for change in changes { change.write(to: &writer, payload: sealed == nil ? request.payload : nil) }
        writer.writeOptional(request.revisionFrom) { $0.write($1) }
        // Format 4: the revision the change was made on.
        writer.writeOptional(basisRevision) { $0.write($1) }
        // Format 5: the connected clock when it was made.
        writer.writeOptional(connectedClock) { $0.write(seconds: $1) }
        // Format 6: an imported write's first attempt where it was exported from.
        writer.write(firstSentAt)
        // Format 7: the attachments it carries.
        writer.write(UInt32(attachments.count))
        for manifest in attachments { manifest.write(to: &writer) }
    }

    init(reading reader: inout ByteReader, version: Int) throws(DecodingProblem) {
        let businessID = try reader.readString("business id")
        let operationType = try reader.readString("operation type")
        let method = try reader.readString("method")
        let endpoint = try reader.readString("endpoint")
        let payloadRange = try reader.skipBytesKeepingRange("payload")
        let payload = reader.data(in: payloadRange)
        let entityID = try reader.readOptionalString("entity id")
        let category = try reader.readString("category")
        let entityLabel = try reader.readString("entity label")
        let summary = try reader.readString("summary")
        let payloadVersion = Int(try reader.readUInt32("payload version"))
        let hash = try reader.readDigest("request hash")
        let account = try reader.readString("account")
        let presentation = try reader.readOptional("sealed presentation") { (reader) throws(DecodingProblem) in
            try reader.readBytes("sealed presentation")
        }
        let sealed = presentation.map { SealedRequest(payload: Array(payload), presentation: $0) }
        var request = OutboxRequest(
            businessID: businessID, operationType: operationType, method: method, endpoint: endpoint,
            payload: sealed == nil ? payload : Data(), entityID: entityID, category: category, entityLabel: entityLabel,
            summary: summary, payloadVersion: payloadVersion
        )
        var supersedes: Supersession?
        if version >= 2 {
            // The app's id itself is the record's: a stand-in marks that the app gave one.
            if try reader.readBool("app-given id") { request.operationID = OperationID(uuid: UUID(uuid: UUID.zero)) }
            request.baseRevision = try reader.readOptionalString("base revision")
            let count = Int(try reader.readUInt32("dependency count"))
            guard count <= reader.remaining / 16 else { throw DecodingProblem("\(count) dependencies cannot fit") }
            for _ in 0..<count { request.dependsOn.append(try reader.readOperationID("dependency")) }
            supersedes = try reader.readOptional("supersedes") { (reader) throws(DecodingProblem) in
                Supersession(
                    operation: try reader.readOperationID("superseded operation"),
                    reason: try reader.readCode(SupersedeReason.self, "supersede reason"),
                    laneSeq: JournalSequence(rawValue: try reader.readUInt64("lane seq"))
                )
            }
        }
        var changes: [RecordWrite] = []
        if version >= 3 {
            let count = Int(try reader.readUInt32("record change count"))
            guard count <= reader.remaining else { throw DecodingProblem("\(count) record changes cannot fit") }
            for _ in 0..<count { changes.append(try RecordWrite(reading: &reader, payload: sealed == nil ? payloadRange : nil)) }
            request.revisionFrom = try reader.readOptional("revision from") { (reader) throws(DecodingProblem) in
                try reader.readRecordKey()
            }
        }
        let basis = version >= 4 ? try reader.readOptional("basis revision") { (reader) throws(DecodingProblem) in try reader.readUInt64("basis revision") } : nil
        let connectedClock = version >= 5 ? try reader.readOptional("connected clock") { (reader) throws(DecodingProblem) in try reader.readSeconds("connected clock") } : nil
        let firstSentAt = version >= 6 ? try reader.readOptionalDate("first sent") : nil
        var attachments: [AttachmentManifest] = []
        if version >= 7 {
            let count = Int(try reader.readUInt32("attachment count"))
            guard count <= reader.remaining / 64 else { throw DecodingProblem("\(count) attachments cannot fit") }
            for _ in 0..<count { attachments.append(try AttachmentManifest(reading: &reader)) }
        }
        self.init(request: request, requestHash: hash, account: account, sealed: sealed, supersedes: supersedes, changes: changes,
                  basisRevision: basis, connectedClock: connectedClock, firstSentAt: firstSentAt, attachments: attachments)
    }
}
