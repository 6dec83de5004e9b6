public import Outbox
import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import OutboxWire

extension JournalVerifier {
    /// An attachment whose file its write still needs.
    struct NeededFile {
        var operation: OperationID
        /// The write's `enqueued` event, which holds the manifest.
        var seq: JournalSequence
        var upload: AttachmentUpload
    }

    /// Every manifest of the writes that still need their files, by the rebuild: those not
    /// settled (a settled write's files may be gone once its keep period passed; a compacted
    /// write keeps no manifest). In journal order.
    var neededFiles: [NeededFile] {
        let needing: [OperationState] = image.states.values
            .filter { !$0.status.isTerminal && $0.compactedAt == nil && !$0.attachments.isEmpty }
            .sorted { $0.firstSeq < $1.firstSeq }
        return needing.flatMap { state in state.attachments.map { NeededFile(operation: state.id, seq: state.firstSeq, upload: $0) } }
    }
}

extension JournalQueries {
    /// Verifies the whole journal in one read snapshot; then, with `files`, that the file of
    /// every manifest a write still needs is there and hashes to its manifest. The files are
    /// read after the snapshot is closed, a chunk at a time: hashing gigabytes holds no read
    /// transaction and no more memory than a chunk.
    func verify(files: AttachmentFiles? = nil) throws(OutboxError) -> VerificationReport {
        let schema = self.schema
        let current = projectionsAreCurrent
        let (checked, needed) = try read { txn in
            var verifier = JournalVerifier(unseal: schema.sealing.sealing?.unsealer)
            try txn.scan(schema.events) { entry in
                verifier.check(seq: (try? entry.key()) ?? .zero, record: Array(entry.valueBytes))
                return .next
            }
            return (try verifier.finish(schema: schema, projectionsAreCurrent: current, txn: txn), verifier.neededFiles)
        }
        var report = checked
        guard let files else { return report }
        var findings: [VerificationFinding] = []
        for file in needed {
            let check = files.inspect(file.upload.manifest, hashing: true)
            report.attachmentFilesChecked += 1
            switch check {
            // A reader without the journal's key sees a sealed file's size, not its bytes.
            case .intact, .intactSealed, .sealedNotOpened: continue
            case .presentNotHashed, .missing, .damaged: break
            }
            // An engine working on the journal meanwhile may have settled the write (a discarded
            // write's files may go): judged by the write as it stands now.
            if let now = try? operationState(file.operation), now.status.isTerminal { continue }
            findings.append(Self.fileFinding(file, check, files: files))
        }
        report.findings += findings
        return report
    }

    /// The finding for a needed file that is missing or damaged.
    private static func fileFinding(_ file: JournalVerifier.NeededFile, _ check: AttachmentFileCheck, files: AttachmentFiles)
        -> VerificationFinding
    {
        let manifest = file.upload.manifest
        let named = "attachment \(manifest.id) (\(manifest.name), \(manifest.size) bytes): its file attachments/\(manifest.sha256.hex)"
        let consequence = file.upload.isCompleted
            ? "; its upload was completed, so its write is not held by it, but a retry could not upload it again"
            : "; it cannot be uploaded, so its write cannot be sent"
        switch check {
        case .damaged(let why):
            return VerificationFinding(kind: .attachmentFileDamaged, seq: file.seq, operationID: file.operation,
                                       message: "\(named) is damaged: \(why)" + consequence)
        default:
            let folder = files.directoryExists ? "" : " (the journal's directory holds no attachments folder: a copy that left it out?)"
            return VerificationFinding(kind: .attachmentFileMissing, seq: file.seq, operationID: file.operation,
                                       message: "\(named) is missing\(folder)" + consequence)
        }
    }
}
