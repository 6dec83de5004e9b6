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
    /// The journal reached its size limit (or the disk is full); nothing of the write was stored.
    case storageFull(limitBytes: Int)
    /// The record at `seq` failed its checksum or could not be decoded.
    case journalCorrupt(seq: JournalSequence, reason: String)
    /// The journal was written by a newer format than this engine reads.
    case newerFormat(found: Int, supported: Int)
    /// The journal at `path` is already open in this process.
    case alreadyOpen(path: String)
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
    /// The event is not allowed for the operation's status.
    case illegalTransition(operation: OperationID, status: OutboxStatus?, event: JournalEventKind, reason: String)
    /// Sign-out was refused: rows are still waiting to sync.
    case pendingWork(count: Int)
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
        case .storageFull(let limitBytes):
            "the journal is full (limit \(limitBytes) bytes, or the disk is full): nothing was saved; free space or raise maxJournalBytes"
        case .journalCorrupt(let seq, let reason):
            "the journal is damaged at seq \(seq): \(reason)"
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
        case .illegalTransition(let operation, let status, let event, let reason):
            "operation \(operation) is \(status.map(\.rawValue) ?? "unknown"): \(event) is not allowed (\(reason))"
        case .pendingWork(let count):
            "\(count) change\(count == 1 ? " is" : "s are") still waiting to sync; sign out with discardPending: true to drop \(count == 1 ? "it" : "them")"
        case .closed:
            "the outbox is closed"
        case .storage(let code, let message):
            "storage error \(code): \(message)"
        }
    }

    public var errorDescription: String? { description }
}
