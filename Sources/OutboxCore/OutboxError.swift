public import Foundation

/// Every error the engine throws.
///
/// Each message says what happened and what to do; none carries a payload or a header.
public enum OutboxError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    /// A request field is invalid; nothing was written.
    case invalidRequest(field: String, problem: String)
    /// The operation type is registered as online-only: it must be sent while connected, never
    /// queued.
    case onlineOnly(operationType: String)
    /// There is no room: the journal reached its size limit (`errno` is `nil`), or the file
    /// system refused to grow the file (`errno` says why: `ENOSPC` the disk is full, `EDQUOT`
    /// the quota is used up, `EFBIG` the process's file-size limit, `EIO` on a disk that then
    /// shows no space left). Nothing of the write was stored.
    case storageFull(limitBytes: Int, errno: Int32? = nil)
    /// The record at `seq` failed its checksum or could not be decoded.
    case journalCorrupt(seq: JournalSequence, reason: String)
    /// The journal's file is damaged in a way that makes it unsafe to read: cut short, or its
    /// structure inconsistent. Nothing was read or changed; see
    /// `Outbox.moveAsideDamagedJournal(at:encryptionKey:)`.
    case journalDamaged(path: String, reason: String)
    /// The journal was written by a newer format than this engine reads.
    case newerFormat(found: Int, supported: Int)
    /// The journal at `path` is already open in this process.
    case alreadyOpen(path: String)
    /// Another process has the journal open for writing; one writer per journal.
    case openInAnotherProcess(path: String, processID: Int32?)
    /// The journal's directory or a file in it cannot be read or written by this process.
    case permissionDenied(path: String)
    /// A configuration value is out of its range; nothing was opened.
    case invalidConfiguration(field: String, problem: String)
    /// The path holds no journal, or something that is not one.
    case notAJournal(path: String, reason: String)
    /// The journal is encrypted at rest and no key was given.
    case encryptionKeyRequired
    /// The key given does not open this journal.
    case wrongEncryptionKey
    /// The journal belongs to another account than the one configured.
    case wrongAccount(journal: String, configured: String)
    /// A stored projection could not be read; the events are intact.
    case projectionCorrupt(reason: String)
    /// No operation has this id.
    case operationNotFound(OperationID)
    /// The app's stable id names an operation saved with other bytes: an id stands for one
    /// intent; make a new one for a new write (after a rejection, after a correction).
    case operationIDReused(OperationID)
    /// The event is not allowed for the operation's status.
    case illegalTransition(operation: OperationID, status: OutboxStatus?, event: JournalEventKind, reason: String)
    /// Sign-out was refused: `count` rows are still waiting to sync (the badge's rows). `writes`
    /// names them, oldest first, at most ``pendingWorkListLimit`` of them: what the member decides
    /// about (sync them, export them with `exportPending(to:key:)`, or discard them).
    case pendingWork(count: Int, writes: [PendingWrite])
    /// The export at `path` is damaged, cut short or not an export of pending work: nothing of it
    /// was imported.
    case exportDamaged(path: String, reason: String)
    /// The key given does not open the export at `path`: nothing of it was imported.
    case exportWrongKey(path: String)
    /// The export at `path` was written in a newer export format than this engine reads.
    case exportNewerFormat(path: String, found: Int, supported: Int)
    /// The export at `path` holds another account's writes than this journal's.
    case exportOtherAccount(path: String, exported: String, configured: String)
    /// A page of a change feed started from another cursor than the one the journal holds now
    /// (another pull moved the feed since it was asked): nothing of it was written.
    case feedMoved(business: String, pageFrom: String?, stored: String?)
    /// The outbox was closed.
    case closed
    /// The storage layer failed (an I/O error, the reader table full, ...).
    case storage(code: Int32, message: String)

    public var description: String {
        switch self {
        case .invalidRequest(let field, let problem):
            "invalid request: `\(field)` \(problem)"
        case .onlineOnly(let operationType):
            "\"\(operationType)\" is online-only: it cannot be queued; send it while connected (check canQueue first)"
        case .storageFull(let limitBytes, nil):
            "the journal is full (its limit is \(limitBytes) bytes): nothing was saved; settled changes are compacted as they age, or raise maxJournalBytes"
        case .storageFull(_, let code?):
            "the device has no room for the journal (\(StorageFullCause(code).text)): nothing was saved; free space on the device and try again"
        case .journalCorrupt(let seq, let reason):
            "the journal is damaged at seq \(seq): \(reason)"
        case .journalDamaged(let path, let reason):
            "the journal at \(path) is damaged: \(reason). Nothing was read or changed; move it aside (Outbox.moveAsideDamagedJournal) to start an empty one, and keep it for support"
        case .openInAnotherProcess(let path, let processID):
            "the journal at \(path) is open for writing in another process\(processID.map { " (\($0))" } ?? ""): one process writes a journal at a time; close it there first"
        case .permissionDenied(let path):
            "permission denied for \(path): give this process read access (and write access, to write the journal), or work on a copy"
        case .invalidConfiguration(let field, let problem):
            "invalid configuration: `\(field)` \(problem)"
        case .newerFormat(let found, let supported):
            "the journal was written in format version \(found); this engine reads up to version \(supported): update the app"
        case .alreadyOpen(let path):
            "the journal at \(path) is already open in this process; share the open Outbox"
        case .notAJournal(let path, let reason):
            "\(path) is not an outbox journal: \(reason)"
        case .encryptionKeyRequired:
            "this journal is encrypted at rest: give its key (OutboxConfiguration.encryptionKey)"
        case .wrongEncryptionKey:
            "the key given does not open this journal: use the key it was sealed with"
        case .wrongAccount(let journal, let configured):
            "this journal belongs to account \"\(journal)\", not \"\(configured)\": open one directory per account"
        case .projectionCorrupt(let reason):
            "a projection of the journal is damaged (\(reason)); the events are intact: run `journal-inspect verify`"
        case .operationNotFound(let id):
            "no operation \(id) in this journal"
        case .operationIDReused(let id):
            "operation id \(id) was already saved with another request: one id stands for one intent; make a new id (OperationID()) for a new write"
        case .illegalTransition(let operation, let status, let event, let reason):
            "operation \(operation) is \(status.map(\.rawValue) ?? "unknown"): \(event) is not allowed (\(reason))"
        case .feedMoved(let business, let pageFrom, let stored):
            "the feed of business '\(business)' is at \(stored ?? "its start (never pulled)"), not at \(pageFrom ?? "its start") where the page started: another pull moved it; the page was not applied"
        case .pendingWork(let count, let writes):
            Self.pendingWorkText(count: count, writes: writes)
        case .exportDamaged(let path, let reason):
            "the export at \(path) cannot be imported: \(reason). Nothing was imported; export the pending work again from the device that wrote it"
        case .exportWrongKey(let path):
            "the key given does not open the export at \(path): use the key it was exported with. Nothing was imported"
        case .exportNewerFormat(let path, let found, let supported):
            "the export at \(path) is in export format version \(found); this engine reads up to version \(supported): update the app, then import it. Nothing was imported"
        case .exportOtherAccount(let path, let exported, let configured):
            "the export at \(path) holds the writes of account \"\(exported)\", not \"\(configured)\": import it into that account's journal. Nothing was imported"
        case .closed:
            "the outbox is closed"
        case .storage(let code, let message):
            "storage error \(code): \(message)"
        }
    }

    public var errorDescription: String? { description }

    /// The most writes ``pendingWork(count:writes:)`` names: a refusal stays a message, not a dump
    /// of the journal; `count` says how many there are in all.
    public static let pendingWorkListLimit = 50
    /// The most writes the refusal's text spells out before saying how many more there are.
    static let pendingWorkTextLimit = 5

    /// "2 changes have not synced: Products · Antiseptic 500 ml (price 4.20), …"
    private static func pendingWorkText(count: Int, writes: [PendingWrite]) -> String {
        let named = writes.prefix(pendingWorkTextLimit).map(\.description)
        let more = count - named.count
        let list = named.isEmpty ? "" : ": " + named.joined(separator: ", ") + (more > 0 ? ", and \(more) more" : "")
        let them = count == 1 ? "it" : "them"
        return "\(count) change\(count == 1 ? " has" : "s have") not synced\(list). Sync \(them) first, export \(them) (exportPending), or sign out with discardPending: true to drop \(them)"
    }
}

/// The words for an `errno` that means "no room".
struct StorageFullCause {
    let text: String

    init(_ code: Int32) {
        // The numbers of Linux and Darwin: this module reads no C headers.
        switch code {
        case 28: text = "the disk is full, ENOSPC"
        case 27: text = "the file may not grow past the process's file-size limit, EFBIG"
        case 5: text = "an I/O error on a disk with no space left, EIO"
        case 122, 69: text = "the disk quota is used up, EDQUOT"
        default: text = "errno \(code)"
        }
    }
}
