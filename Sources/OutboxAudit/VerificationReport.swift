public import Outbox
public import OutboxCore

/// What `verify` found: every record's checksum, every invariant of every operation, and the
/// stored projections compared with a rebuild from the events.
public struct VerificationReport: Sendable, Equatable {
    /// Records read, damaged ones included.
    public var recordsChecked: Int
    /// Operations whose histories were checked.
    public var operationsChecked: Int
    /// Whether the stored projections were compared with a rebuild; see ``projectionsNote``.
    public var projectionsCompared: Bool
    /// Why the projections were not compared, when they were not.
    public var projectionsNote: String?
    /// Each problem, in journal order (projection mismatches, then the attachments' files, last).
    public var findings: [VerificationFinding]
    /// Payloads of an encrypted journal whose hashes were not checked: the key was not given.
    public var sealedPayloadsUnchecked: Int
    /// The attachments' files read and hashed: every one a write not settled still needs.
    public var attachmentFilesChecked: Int

    public init(recordsChecked: Int, operationsChecked: Int, projectionsCompared: Bool, projectionsNote: String?,
                findings: [VerificationFinding], sealedPayloadsUnchecked: Int = 0, attachmentFilesChecked: Int = 0) {
        self.recordsChecked = recordsChecked
        self.operationsChecked = operationsChecked
        self.projectionsCompared = projectionsCompared
        self.projectionsNote = projectionsNote
        self.findings = findings
        self.sealedPayloadsUnchecked = sealedPayloadsUnchecked
        self.attachmentFilesChecked = attachmentFilesChecked
    }

    /// Nothing found.
    public var isClean: Bool { findings.isEmpty }
}

/// One problem `verify` found, with where it is.
public struct VerificationFinding: Sendable, Equatable, Codable {
    /// The kinds of problem, named as in the JSON output.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// A record failed its checksum or did not decode.
        case damagedRecord = "damaged_record"
        /// Seqs are missing between two records (and no compaction names them).
        case sequenceGap = "sequence_gap"
        /// An `enqueued` payload no longer hashes to the SHA-256 recorded with it.
        case payloadHashMismatch = "payload_hash_mismatch"
        /// An operation's event with no `enqueued` before it.
        case missingEnqueue = "missing_enqueue"
        /// A second `enqueued` for one operation.
        case duplicateEnqueue = "duplicate_enqueue"
        /// Attempts not numbered 1..n, or one without exactly one outcome or abandonment.
        case attemptNumbering = "attempt_numbering"
        /// An event after the operation reached a terminal status.
        case eventAfterTerminal = "event_after_terminal"
        /// A status change the fold does not allow.
        case illegalTransition = "illegal_transition"
        /// A stored projection differs from the same projection rebuilt from the events.
        case projectionMismatch = "projection_mismatch"
        /// A record's server base (or local value) differs from the trail the journal keeps of
        /// it: its revision, value hash or the event that brought it.
        case recordTrailMismatch = "record_trail_mismatch"
        /// The file of an attachment a write still needs (not settled) is not in the journal's
        /// directory: it cannot be uploaded.
        case attachmentFileMissing = "attachment_file_missing"
        /// The file of an attachment a write still needs is there, but not its manifest's size
        /// or bytes (it no longer hashes to the manifest's SHA-256), or cannot be read.
        case attachmentFileDamaged = "attachment_file_damaged"
    }

    public var kind: Kind
    /// The record it concerns, when one.
    public var seq: JournalSequence?
    /// The operation it concerns, when known.
    public var operationID: OperationID?
    /// What is wrong, in a sentence.
    public var message: String

    public init(kind: Kind, seq: JournalSequence?, operationID: OperationID?, message: String) {
        self.kind = kind
        self.seq = seq
        self.operationID = operationID
        self.message = message
    }
}
