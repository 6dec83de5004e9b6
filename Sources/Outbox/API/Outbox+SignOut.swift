public import Foundation
import OutboxCore
import OutboxStorage

extension Outbox {
    /// Signs the journal's account out of the engine.
    ///
    /// With rows still waiting (queued, syncing, failed, blocked), it refuses, unless told to
    /// discard them: then the worker is stopped (an attempt in flight finishes and is recorded
    /// first), each waiting row gets a `discarded` event (reason: sign-out) with its payload kept
    /// in the history, and the worker sends nothing more. Rows waiting for approval stay: the
    /// server holds them.
    /// - Throws: ``OutboxError/pendingWork(count:)`` when rows wait and `discardPending` is false.
    public func signOut(discardPending: Bool) async throws {
        try ensureOpen()
        let waiting = try badgeCount()
        if waiting > 0 && !discardPending { throw OutboxError.pendingWork(count: waiting) }
        await worker.stop()
        log.log(.info, "signed out: the worker is stopped", [EngineLog.Key.count: "\(waiting)"])
        guard waiting > 0 else { return }
        let schema = store.schema
        let ids = try store.read { txn in
            try [OutboxStatus.queued, .failed, .blocked].flatMap { try schema.operationIDs(withStatus: $0, in: txn) }
        }
        let discarded = JournalEventBody.discarded(Discarded(requestedBy: .member, reason: .signOut))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask { _ = try await self.room.append([JournalStore.Draft(operationID: id, body: discarded)], whenFull: .reserve) }
            }
            try await group.waitForAll()
        }
    }

    /// Removes a journal directory, for a shared device after sign-out. Everything in it is
    /// lost: its writes, their history, the ledger.
    /// - Throws: ``OutboxError/alreadyOpen(path:)`` while this process has it open.
    public static func wipeJournal(at directory: URL) throws {
        let path = directory.standardizedFileURL.resolvingSymlinksInPath().path
        guard !LMDBEnvironment.isOpen(path: path) else { throw OutboxError.alreadyOpen(path: path) }
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }
}
