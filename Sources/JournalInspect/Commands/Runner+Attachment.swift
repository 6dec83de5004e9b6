import Foundation
import Outbox
import OutboxAudit

/// `attachment <id>`: the proof of one attached file.
extension Runner {
    func attachment(_ options: AttachmentOptions) throws -> ExitCode {
        let id = try resolveAttachment(options.id)
        guard let proof = try reader.attachment(id) else { throw noAttachment(options.id) }
        let last = try reader.events(matching: EventQuery(order: .newestFirst, limit: 1)).events.first
        if json {
            write(try encodeJSON(AttachmentDocument(proof, journalLastEvent: last, moments: moments)))
        } else {
            write(AttachmentText.render(proof, journalLastEvent: last, moments: moments, style: style))
        }
        return finish(damaged: proof.damaged)
    }

    /// The one attachment `prefix` names.
    /// - Throws: a ``UsageError`` when it names none (the tool's not-found exit, 64), or several
    ///   (listing the candidates).
    private func resolveAttachment(_ prefix: String) throws -> AttachmentID {
        let matches = try reader.attachmentIDs(matchingPrefix: prefix)
        if matches.count == 1, let only = matches.first { return only }
        guard !matches.isEmpty else { throw noAttachment(prefix) }
        let shown = 20
        let wanted = Set(matches.prefix(shown))
        let proofs = try reader.attachments().filter { wanted.contains($0.manifest.id) }
        var table = TextTable(headers: ["ID", "NAME", "SIZE", "WRITE", "STATUS"])
        for id in matches.prefix(shown) {
            guard let proof = proofs.first(where: { $0.manifest.id == id }) else {
                table.add([TextTable.Cell("\(id)")])
                continue
            }
            table.add([TextTable.Cell("\(id)"), TextTable.Cell(proof.manifest.name), TextTable.Cell(AttachmentText.size(proof.manifest.size)),
                       TextTable.Cell(EventText.shortID(proof.operationID)), TextTable.Cell(proof.operationStatus.rawValue)])
        }
        var message = "'\(prefix)' starts \(matches.count) attachments' ids; give more characters. The candidates:\n"
        message += table.render(.plain).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        if matches.count > shown { message += "\n  ... and \(matches.count - shown) more" }
        throw UsageError(message, command: .attachment)
    }

    private func noAttachment(_ prefix: String) -> UsageError {
        UsageError("no attachment's id starts with '\(prefix)' in this journal; the enqueued event of the write that carries a file "
            + "names its id ('journal-inspect \(journalArgument) events --kind enqueued'), and a write compacted since keeps no manifest",
            command: .attachment)
    }
}

/// `attachment --json`: field names are part of the tool's interface (Docs/journal-inspect.md).
struct AttachmentDocument: Encodable {
    struct Write: Encodable {
        var operationID: OperationID
        var status: OutboxStatus
        var attempts: Int
        var operationType: String
        var entityLabel: String
        var savedAt: Date
        var savedSeq: JournalSequence
    }

    struct File: Encodable {
        /// `attachments/<sha256 hex>`, in the journal's directory.
        var path: String
        /// `intact`, `present_not_hashed`, `missing` (its write still needs it), `gone` (its
        /// write settled), `damaged`.
        var state: String
        var problem: String?
        /// Whether its write still needs it (not settled).
        var needed: Bool
        /// For a settled write: until when the engine keeps its file, by the default keep period.
        var keptUntil: Date?
    }

    struct Grant: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        var segmentSize: Int64
        var segmentCount: Int
        var lifetimeSeconds: Double
    }

    struct Segment: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        var number: Int
        var bytes: Int64
        var etag: String
    }

    struct Completion: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        var object: String
        var bytes: Int64
        var sha256: String
        /// The size and SHA-256 the server answered are the manifest's: the object is the file.
        var matchesFile: Bool
    }

    struct Refusal: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        var httpStatus: Int?
        var errorCode: String
        var errorMessage: String
    }

    var attachmentID: AttachmentID
    var name: String
    var contentType: String
    var size: Int64
    var sha256: String
    var write: Write
    var file: File
    var grants: [Grant]
    var segments: [Segment]
    /// The last grant's segment size and count, and the segments landed under it.
    var segmentSize: Int64?
    var segmentCount: Int?
    var landedSegments: Int
    var landedBytes: Int64
    var completion: Completion?
    var refusals: [Refusal]
    var state: AttachmentStanding
    var damaged: [Outbox.DamagedRecord]
    var verdict: String

    init(_ proof: AttachmentProof, journalLastEvent: JournalEvent? = nil, moments: MomentFormat) {
        let manifest = proof.manifest
        attachmentID = manifest.id
        name = manifest.name
        contentType = manifest.contentType
        size = manifest.size
        sha256 = manifest.sha256.hex
        let state = proof.operation
        write = Write(operationID: proof.operationID, status: state.status, attempts: state.attemptCount,
                      operationType: state.operationType, entityLabel: state.entityLabel, savedAt: proof.savedAt, savedSeq: proof.savedSeq)
        let fileState: String
        var problem: String?
        switch proof.file {
        case .intact: fileState = "intact"
        case .presentNotHashed: fileState = "present_not_hashed"
        case .intactSealed: fileState = "intact_sealed"
        case .sealedNotOpened: fileState = "sealed_not_opened"
        case .missing: fileState = proof.needsFile ? "missing" : "gone"
        case .damaged(let why):
            fileState = "damaged"
            problem = why
        }
        file = File(path: "attachments/\(manifest.sha256.hex)\(proof.fileIsSealed ? ".sealed" : "")", state: fileState, problem: problem, needed: proof.needsFile,
                    keptUntil: proof.fileKeptUntil)
        grants = proof.grants.map {
            Grant(seq: $0.seq, recordedAt: $0.recordedAt, segmentSize: $0.segmentSize, segmentCount: $0.segmentCount,
                  lifetimeSeconds: $0.lifetimeSeconds)
        }
        segments = proof.segments.map { Segment(seq: $0.seq, recordedAt: $0.recordedAt, number: $0.number, bytes: $0.size, etag: $0.etag) }
        segmentSize = proof.segmentSize
        segmentCount = proof.segmentCount
        landedSegments = proof.landedSegments.count
        landedBytes = proof.landedBytes
        completion = proof.completion.map {
            Completion(seq: $0.seq, recordedAt: $0.recordedAt, object: $0.object, bytes: $0.size, sha256: $0.sha256.hex,
                       matchesFile: $0.size == manifest.size && $0.sha256 == manifest.sha256)
        }
        refusals = proof.refusals.map {
            Refusal(seq: $0.seq, recordedAt: $0.recordedAt, httpStatus: $0.statusCode, errorCode: $0.errorCode, errorMessage: $0.message)
        }
        self.state = AttachmentStanding(proof)
        damaged = proof.damaged
        verdict = AttachmentText.verdict(proof, journalLastEvent: journalLastEvent, moments: moments)
    }
}
