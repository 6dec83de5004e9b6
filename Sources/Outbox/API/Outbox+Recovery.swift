public import Foundation
import OutboxCore
import OutboxStorage

extension Outbox {
    /// Moves a journal that cannot be opened aside, and reports what it still holds.
    ///
    /// A phone has no `journal-inspect`: when `Outbox(directory:...)` throws
    /// ``OutboxError/journalDamaged(path:reason:)`` (or a journal is otherwise unreadable), the
    /// app calls this, tells the member how many changes were waiting, and opens a new, empty
    /// journal in the same directory:
    ///
    /// ```swift
    /// do {
    ///     outbox = try Outbox(directory: url, transport: transport, configuration: configuration)
    /// } catch OutboxError.journalDamaged {
    ///     let report = try Outbox.moveAsideDamagedJournal(at: url)
    ///     outbox = try Outbox(directory: url, transport: transport, configuration: configuration)
    ///     // report.pendingOperations: what was waiting; report.movedTo: keep for support
    /// }
    /// ```
    ///
    /// The old directory is renamed beside the original (`<name>.damaged-<moment>`), whole and
    /// untouched; nothing is deleted. Its records are read page by page with bounds-checked reads,
    /// never through LMDB, so no damage makes the read crash. Each recovered operation keeps its
    /// id, which is its idempotency key: a write resent under it that the server had already
    /// applied is answered from its claim, not applied twice.
    /// - Parameter encryptionKey: the journal's key, to open sealed payloads and labels.
    /// - Throws: ``OutboxError/alreadyOpen(path:)`` or ``OutboxError/openInAnotherProcess(path:processID:)``
    ///   while it is open; ``OutboxError/notAJournal(path:reason:)`` when the directory holds no
    ///   data file; ``OutboxError/permissionDenied(path:)`` when it cannot be moved.
    public static func moveAsideDamagedJournal(at directory: URL, encryptionKey: SealingKey? = nil) throws -> Outbox.DamagedJournalReport {
        let path = directory.path
        let canonical = directory.standardizedFileURL.resolvingSymlinksInPath().path
        if LMDBEnvironment.isOpen(path: canonical) { throw OutboxError.alreadyOpen(path: canonical) }
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent(JournalStore.FileName.data).path) else {
            throw OutboxError.notAJournal(path: path, reason: "the directory holds no data.mdb")
        }
        // No writer may be in it while it moves.
        let lock: ProcessLock
        do {
            lock = try ProcessLock.acquire(path: URL(fileURLWithPath: canonical).appendingPathComponent(JournalStore.FileName.writerLock).path)
        } catch .held(let holder) {
            throw OutboxError.openInAnotherProcess(path: path, processID: holder)
        } catch .unavailable {
            throw OutboxError.permissionDenied(path: path)
        }
        defer { lock.release() }

        let salvage = try JournalSalvage(directory: directory, sealing: encryptionKey.map(JournalSealing.init(key:)))
        let operations = salvage.operations()
        let destination = asideURL(for: directory)
        do {
            try FileSystem.rename(path, to: destination.path)
            try FileSystem.syncDirectory(directory.deletingLastPathComponent().path)
        } catch {
            throw OutboxError(storage: error, limitBytes: 0, path: directory.deletingLastPathComponent().path)
        }
        let pending = operations.values
            .filter { !$0.status.isTerminal }
            .sorted { $0.firstSeq < $1.firstSeq }
            .map { state in
                Outbox.RecoveredOperation(id: state.id, status: state.status, request: recoveredRequest(state, salvage.events[state.firstSeq]))
            }
        return Outbox.DamagedJournalReport(
            movedTo: destination,
            eventsRead: salvage.events.count,
            lastSeqRead: salvage.events.keys.max(),
            damagedRecords: salvage.damagedRecords,
            operationCount: operations.count,
            pendingOperations: pending
        )
    }

    /// A sibling name no file has yet: `<name>.damaged-<UTC moment>`, numbered if need be.
    private static func asideURL(for directory: URL) -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let base = "\(directory.lastPathComponent).damaged-\(formatter.string(from: Date()))"
        let parent = directory.deletingLastPathComponent()
        var candidate = parent.appendingPathComponent(base)
        var number = 2
        while FileManager.default.fileExists(atPath: candidate.path) {
            candidate = parent.appendingPathComponent("\(base)-\(number)")
            number += 1
        }
        return candidate
    }

    /// The request of a recovered operation, when its `enqueued` record was read and opened.
    private static func recoveredRequest(_ state: OperationState, _ event: JournalEvent?) -> OutboxRequest? {
        guard case .enqueued(let enqueued)? = event?.body else { return nil }
        if enqueued.sealed != nil, enqueued.request.payload.isEmpty { return nil }
        return enqueued.request
    }
}

extension Outbox {
    /// What ``Outbox/moveAsideDamagedJournal(at:encryptionKey:)`` found in a journal it set aside.
    public struct DamagedJournalReport: Sendable {
        /// Where the damaged journal now is, kept for support (never deleted by the engine).
        public var movedTo: URL
        /// Records still read whole (each carries its own checksum).
        public var eventsRead: Int
        /// The highest seq among them.
        public var lastSeqRead: JournalSequence?
        /// Records that were found damaged.
        public var damagedRecords: Int
        /// Operations the records show.
        public var operationCount: Int
        /// Operations that had not settled: queued, syncing, failed, blocked or waiting for approval,
        /// each with its request when its `enqueued` record was read (and opened, when sealed).
        public var pendingOperations: [Outbox.RecoveredOperation]
    }
}

extension Outbox {
    /// An operation recovered from a damaged journal.
    public struct RecoveredOperation: Sendable, Equatable {
        public var id: OperationID
        /// Its status as far as the records read show; later events may have been lost with the damage.
        public var status: OutboxStatus
        /// The request as enqueued; `nil` when its payload is sealed and the key was not given.
        public var request: OutboxRequest?
    }
}
