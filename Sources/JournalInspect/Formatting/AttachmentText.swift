import Foundation
package import Outbox
package import OutboxAudit

/// Where an attachment stands, in one word: the verdict's first, the JSON's `state`, the
/// report's STATE column.
package enum AttachmentStanding: String, Sendable, Encodable {
    /// The server completed the object: its write may be (or was) sent.
    case completed
    /// Its write is queued and the upload goes on at the next pass.
    case uploading
    /// Refused (by the server, the store, or on the device): its write is held until a person
    /// retries or discards it.
    case refused
    /// Its write still needs the file, and it is not on the device.
    case fileMissing = "file_missing"
    /// Its write still needs the file, and it is not the manifest's bytes.
    case fileDamaged = "file_damaged"
    /// Its write left the queue (discarded, failed by another file, ...) before the upload completed.
    case notUploaded = "not_uploaded"

    package init(_ proof: AttachmentProof) {
        if proof.isCompleted {
            self = .completed
        } else if proof.refusedCode != nil {
            self = .refused
        } else if proof.needsFile, proof.file == .missing {
            self = .fileMissing
        } else if proof.needsFile, case .damaged = proof.file {
            self = .fileDamaged
        } else if proof.operationStatus == .queued {
            self = .uploading
        } else {
            self = .notUploaded
        }
    }
}

/// One attachment's proof for people: its manifest and write, its file, its upload's events,
/// the verdict.
package enum AttachmentText {
    /// - Parameter journalLastEvent: the journal's last event: an upload nothing was journaled
    ///   of since, long before now, is said to wait for the app.
    package static func render(_ proof: AttachmentProof, journalLastEvent: JournalEvent? = nil, moments: MomentFormat,
                               style: Style) -> String {
        let manifest = proof.manifest
        var fields = FieldList()
        fields.add("Attachment", "\(manifest.id)")
        fields.add("Name", manifest.name)
        fields.add("Type", manifest.contentType)
        fields.add("Size", size(manifest.size))
        fields.add("SHA-256", manifest.sha256.hex)
        fields.add("Write", write(proof, moments: moments, style: style))
        fields.add("File", file(proof, moments: moments, style: style))
        fields.add("Upload", upload(proof, style: style))
        if !moments.isUTC { fields.add("Shown in", moments.zoneName(at: proof.savedAt)) }
        var text = fields.render(style) + "\n"
        var table = TextTable(headers: ["SEQ", "MOMENT", "KIND", "DETAIL"], rightAligned: [0])
        var rows: [(JournalSequence, [TextTable.Cell])] = proof.events.map { event in
            (event.seq, [TextTable.Cell("\(event.seq)"), TextTable.Cell(moments.absolute(event.recordedAt)),
                         TextTable.Cell(event.kind.rawValue), detail(event, proof: proof, moments: moments, style: style)])
        }
        rows += proof.damaged.map { record in
            (record.seq, [TextTable.Cell("\(record.seq)"), "-", TextTable.Cell("DAMAGED", .boldRed), TextTable.Cell(record.reason, .red)])
        }
        for (_, cells) in rows.sorted(by: { $0.0 < $1.0 }) { table.add(cells) }
        text += table.render(style)
        text += "\n" + style.paint("Verdict:", .bold) + " " + verdict(proof, journalLastEvent: journalLastEvent, moments: moments) + "\n"
        if !proof.damaged.isEmpty {
            text += style.paint("Incomplete:", .boldRed) + " \(proof.damaged.count) of its write's records could not be read; "
                + "the verdict follows the state the journal holds for it.\n"
        }
        return text
    }

    // MARK: Fields

    /// `6C4EF3CA "Antiseptic 1" (product.create), synced, 1 attempt; saved <moment>, seq 1`.
    static func write(_ proof: AttachmentProof, moments: MomentFormat, style: Style) -> String {
        let state = proof.operation
        let attempts = "\(state.attemptCount) attempt\(state.attemptCount == 1 ? "" : "s")"
        return "\(EventText.shortID(proof.operationID)) \"\(OperationsText.label(state))\" (\(state.operationType)), "
            + style.paint(state.status.rawValue, Style.color(of: state.status)) + ", \(attempts); saved "
            + "\(moments.absolute(proof.savedAt)), seq \(proof.savedSeq)"
    }

    /// What was found of the local file, and what it means for the write.
    static func file(_ proof: AttachmentProof, moments: MomentFormat, style: Style) -> String {
        let path = "attachments/\(proof.manifest.sha256.hex)\(proof.fileIsSealed ? ".sealed" : ""): "
        switch proof.file {
        case .intact:
            return path + style.paint("present", .green) + ", \(proof.manifest.size) bytes, hashing to its manifest's SHA-256"
        case .intactSealed:
            return path + style.paint("present", .green) + ", sealed at rest; opened, its \(proof.manifest.size) bytes hash to its manifest's SHA-256"
        case .sealedNotOpened:
            return path + style.paint("present", .green) + ", sealed at rest, of the size its manifest's bytes seal to (not opened: no key, or not hashed)"
        case .presentNotHashed:
            return path + style.paint("present", .green) + ", of its manifest's size (its bytes not hashed)"
        case .damaged(let why):
            return path + style.paint("DAMAGED", .boldRed) + ": \(why)" + consequence(proof)
        case .missing where proof.needsFile:
            return path + style.paint("MISSING", .boldRed) + ": its write (\(proof.operationStatus.rawValue)) still needs it"
                + consequence(proof) + folderNote(proof)
        case .missing:
            return path + gone(proof, moments: moments)
        }
    }

    /// What a missing or damaged file means: nothing more once the write settled.
    private static func consequence(_ proof: AttachmentProof) -> String {
        guard proof.needsFile else { return "; its write settled, so nothing needs it any more" }
        return proof.isCompleted
            ? "; its upload was completed, so its write is not held by it, but a retry could not upload it again"
            : "; it cannot be uploaded, so its write cannot be sent"
    }

    /// A file absent while its write is settled: gone by the keep rule, or before it.
    private static func gone(_ proof: AttachmentProof, moments: MomentFormat) -> String {
        let settled = proof.operation.changedAt
        if proof.operationStatus == .discarded {
            return "gone: its write was discarded on \(moments.absolute(settled)), and a discarded write's files go at the engine's "
                + "next open"
        }
        if let until = proof.fileKeptUntil, until <= moments.now {
            return "gone: its write settled (\(proof.operationStatus.rawValue)) on \(moments.absolute(settled)); the engine removes "
                + "a settled write's files once its keep period has passed (7 d by default), when it next opens"
        }
        return "gone, though its write settled (\(proof.operationStatus.rawValue)) only on \(moments.absolute(settled)) and the "
            + "keep period (7 d by default) runs until \(proof.fileKeptUntil.map(moments.absolute) ?? "later"): removed outside "
            + "the engine, or this copy of the journal left it out" + folderNote(proof)
    }

    /// A hint when the whole folder of attachments is absent.
    private static func folderNote(_ proof: AttachmentProof) -> String {
        let folder = proof.fileURL.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard !(FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) && isDirectory.boolValue) else { return "" }
        return " (the journal's directory holds no attachments folder: a copy of the journal that left it out?)"
    }

    /// How far the upload got.
    static func upload(_ proof: AttachmentProof, style: Style) -> String {
        if let completion = proof.completion, proof.isCompleted {
            return style.paint("completed", .green) + ": object \(completion.object), \(completion.size) bytes, SHA-256 "
                + "\(completion.sha256.hex): " + matchText(size: completion.size, sha256: completion.sha256, proof: proof, style: style)
        }
        var text: String
        if let count = proof.segmentCount, let segmentSize = proof.segmentSize {
            text = "\(proof.landedSegments.count) of \(count) segment\(count == 1 ? "" : "s") of \(segmentSize) bytes landed "
                + "(\(sizes(proof.landedBytes, of: proof.manifest.size)))"
        } else {
            text = "not granted yet: nothing landed"
        }
        text += ", \(proof.grants.count) grant\(proof.grants.count == 1 ? "" : "s")"
        if let refusal = proof.refusals.last, proof.refusedCode != nil {
            text += "; " + style.paint("refused", .red) + " at seq \(refusal.seq): " + refusalText(refusal)
        }
        return text
    }

    /// Whether the completed object is the file: the size and SHA-256 the server answered against
    /// the manifest's (the file's when it was kept).
    private static func matchText(size: Int64, sha256: SHA256Digest, proof: AttachmentProof, style: Style) -> String {
        guard size == proof.manifest.size, sha256 == proof.manifest.sha256 else {
            return style.paint("DOES NOT MATCH", .boldRed) + " the file's manifest"
        }
        return style.paint("matches the file", .green)
    }

    /// `413 attachment_refused: "Photos may be at most 5 MB."`, or `on the device attachment_damaged: ...`.
    static func refusalText(_ refusal: AttachmentProof.Refusal) -> String {
        refusalText(statusCode: refusal.statusCode, code: refusal.errorCode, message: refusal.message)
    }

    static func refusalText(statusCode: Int?, code: String, message: String) -> String {
        (statusCode.map { "\($0) " } ?? "on the device: ") + code + (message.isEmpty ? "" : ": \"\(message)\"")
    }

    // MARK: Rows

    /// One event of the attachment's story, in its own words.
    private static func detail(_ event: JournalEvent, proof: AttachmentProof, moments: MomentFormat, style: Style) -> TextTable.Cell {
        switch event.body {
        case .enqueued:
            return TextTable.Cell("its write saved, with the manifest: the file was kept whole before this commit")
        case .attachmentGranted(let granted):
            return TextTable.Cell("\(granted.segmentCount) segment\(granted.segmentCount == 1 ? "" : "s") of \(granted.segmentSize) bytes, "
                + "URLs good for \(Moments.duration(granted.lifetimeSeconds)) by the server (URLs and signatures are never journaled)")
        case .segmentLanded(let landed):
            return TextTable.Cell("segment \(landed.segment.number): \(landed.segment.size) bytes, ETag \(landed.segment.etag)")
        case .attachmentCompleted(let completed):
            return TextTable.Cell("object \(completed.object): \(completed.size) bytes, SHA-256 \(completed.sha256.hex), "
                + matchText(size: completed.size, sha256: completed.sha256, proof: proof, style: .plain))
        case .attachmentRefused(let refused):
            return TextTable.Cell(refusalText(statusCode: refused.statusCode, code: refused.errorCode, message: refused.message)
                + "; its write is held, the file kept", .red)
        case .requeued(let requeued):
            return TextTable.Cell("its write retried by the \(requeued.requestedBy): a refused file is uploaded again under new keys")
        default:
            return TextTable.Cell("its write: " + EventText.detail(event, moments: moments))
        }
    }

    // MARK: Verdict

    /// For example `completed as obj-7 on 2027-01-15T08:00:03Z; its write synced on attempt 1`,
    /// `uploading: 3 of 5 segments landed (2.4 of 4.0 MB)`, `refused: 413 attachment_refused: ...`.
    package static func verdict(_ proof: AttachmentProof, journalLastEvent: JournalEvent? = nil, moments: MomentFormat) -> String {
        switch AttachmentStanding(proof) {
        case .completed:
            let when = proof.completion.map { " on \(moments.absolute($0.recordedAt))" } ?? ""
            return "completed as \(proof.completion?.object ?? "an object")\(when); \(writeClause(proof))"
        case .refused:
            let refusal = proof.refusals.last.map(refusalText) ?? (proof.refusedCode ?? "refused")
            return "refused: \(refusal); \(writeClause(proof)), its file kept: a retry uploads it again, a discard drops the write"
        case .fileMissing:
            return "cannot be uploaded: its file is missing on the device" + progress(proof) + "; \(writeClause(proof)), and the "
                + "next upload refuses it (attachment_damaged): the member attaches it again in a new write"
        case .fileDamaged:
            let why = if case .damaged(let why) = proof.file { why } else { "" }
            return "cannot be uploaded: its file is damaged on the device (\(why))" + progress(proof) + "; \(writeClause(proof))"
        case .uploading:
            let quiet = quietSince(journalLastEvent, now: moments.now, next: proof.upload, moments: moments).map { "; " + $0 } ?? ""
            guard let count = proof.segmentCount else {
                return "uploading: not granted yet, nothing landed (\(sizes(0, of: proof.manifest.size))); its write waits for it" + quiet
            }
            return "uploading: \(proof.landedSegments.count) of \(count) segment\(count == 1 ? "" : "s") landed "
                + "(\(sizes(proof.landedBytes, of: proof.manifest.size))); its write waits for it" + quiet
        case .notUploaded:
            return "not uploaded: \(writeClause(proof)) before the upload completed" + progress(proof)
        }
    }

    /// For an upload under way: when nothing was journaled for a while before now, that the app
    /// has not run since or had no connection (a grant asked offline journals nothing, so which
    /// of the two cannot be told), and where the upload goes on.
    static func quietSince(_ last: JournalEvent?, now: Date?, next upload: AttachmentUpload?, moments: MomentFormat) -> String? {
        guard let last, let now, now.timeIntervalSince(last.recordedAt) >= ClockChange.tolerance else { return nil }
        var text = "nothing was journaled since \(moments.absolute(last.recordedAt)) (\(moments.relative(last.recordedAt))): the app "
            + "has not run since, or had no connection"
        if let upload, let size = upload.segmentSize {
            let landed = Set(upload.landed.map(\.number))
            let count = AttachmentUpload.segmentCount(size: upload.manifest.size, segmentSize: size)
            if let next = (1...count).first(where: { !landed.contains($0) }), !landed.isEmpty {
                text += "; the upload goes on from segment \(next) when it runs online (the landed ones are not sent again)"
            }
        }
        return text
    }

    /// ` (2 of 5 segments had landed)`, or nothing before a grant.
    private static func progress(_ proof: AttachmentProof) -> String {
        guard let count = proof.segmentCount else { return "" }
        return " (\(proof.landedSegments.count) of \(count) segment\(count == 1 ? "" : "s") had landed)"
    }

    /// The write in a clause: `its write synced on attempt 1`.
    static func writeClause(_ proof: AttachmentProof) -> String {
        let state = proof.operation
        let number = state.attemptCount
        switch state.status {
        case .synced: return "its write synced on attempt \(number)"
        case .queued:
            return number == 0 ? "its write is queued, not sent yet" : "its write is queued after \(number) attempt\(number == 1 ? "" : "s")"
        case .syncing: return "its write is being sent (attempt \(number))"
        case .pendingApproval: return "its write is held for approval on the server"
        case .failed, .blocked:
            return "its write is \(state.status.rawValue)" + (state.lastErrorCode.map { " (\($0))" } ?? "")
        case .discarded, .withdrawn, .superseded: return "its write was \(state.status.rawValue)"
        case .conflicted: return "its write is conflicted"
        }
    }

    // MARK: Sizes

    /// `450 bytes`, `4,000,000 bytes (4.0 MB)`.
    package static func size(_ bytes: Int64) -> String {
        bytes < 1000 ? "\(bytes) bytes" : "\(bytes) bytes (\(decimal(bytes)))"
    }

    /// `2.4 of 4.0 MB`, `200 of 450 bytes`: both in the unit of the whole (decimal, as the
    /// member's words count).
    package static func sizes(_ part: Int64, of whole: Int64) -> String {
        guard whole >= 1000 else { return "\(part) of \(whole) bytes" }
        let (divisor, unit) = Self.unit(of: whole)
        return String(format: "%.1f of %.1f %@", Double(part) / divisor, Double(whole) / divisor, unit)
    }

    /// `4.0 MB`.
    private static func decimal(_ bytes: Int64) -> String {
        let (divisor, unit) = unit(of: bytes)
        return String(format: "%.1f %@", Double(bytes) / divisor, unit)
    }

    private static func unit(of bytes: Int64) -> (Double, String) {
        switch bytes {
        case ..<1_000_000: (1e3, "KB")
        case ..<1_000_000_000: (1e6, "MB")
        default: (1e9, "GB")
        }
    }
}
