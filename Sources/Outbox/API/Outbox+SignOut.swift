public import Foundation
import OutboxCore
import OutboxStorage

extension Outbox {
    /// Signs the journal's account out of the engine.
    ///
    /// With rows still waiting (every row the badge counts: queued, syncing, failed, blocked,
    /// conflicted), it refuses, naming them and the files they carry, unless told to discard them: then the worker is
    /// stopped (an attempt in flight finishes and is recorded first), each waiting row gets a
    /// `discarded` event (reason: sign-out) with its payload kept in the history, and the worker
    /// sends nothing more. A row still `syncing` once the worker stopped is an attempt no process
    /// will finish (its outcome was never recorded): it is abandoned first, as opening the journal
    /// abandons one, then discarded. Afterwards the badge reads 0. Rows waiting for approval stay:
    /// the server holds them. To keep the waiting work across a wipe, ``exportPending(to:key:)``
    /// first.
    /// - Throws: ``OutboxError/pendingWork(count:writes:)`` when rows wait and `discardPending`
    ///   is false.
    public func signOut(discardPending: Bool) async throws {
        try ensureOpen()
        let waiting = try badgeCount()
        if waiting > 0 && !discardPending {
            throw OutboxError.pendingWork(count: waiting, writes: try pendingWrites(limit: OutboxError.pendingWorkListLimit))
        }
        await worker.stop()
        // An inline save's attempt runs outside the worker's passes: its outcome is recorded
        // before anything is discarded, so a write that landed is never called discarded.
        await attempts.inFlight.untilNoneHeld()
        log.log(.info, "signed out: the worker is stopped", [EngineLog.Key.count: "\(waiting)"])
        guard waiting > 0 else { return }
        try await discardWaitingRows()
    }

    /// The rows the badge counts, oldest first, at most `limit` of them, named for the member.
    func pendingWrites(limit: Int) throws -> [PendingWrite] {
        try ensureOpen()
        let queries = store.queries
        let schema = store.schema
        return try queries.read { txn in
            try queries.projections.oldestFirst(statuses: OutboxStatus.waitingToSync, after: nil, limit: limit, where: { _ in true }, in: txn)
        }.map { state in
            let text = schema.presentation(of: state)
            return PendingWrite(operationID: state.id, category: state.category, entityLabel: text?.label ?? "(sealed)",
                                summary: text?.summary ?? "(sealed)", status: state.status, attachments: state.attachments.map(\.manifest.name))
        }
    }

    /// Discards every row the badge counts, the worker stopped: an orphaned `syncing` row's
    /// abandonment and its discard land in one commit.
    private func discardWaitingRows() async throws {
        let schema = store.schema
        // The opening's abandonments first: read before they land, a row the last process left
        // `syncing` would be abandoned twice.
        await writer.landed()
        // A syncing row is found, with its attempt number, by the abandonment's own reading below.
        let ids = try store.read { txn in
            try OutboxStatus.waitingToSync.filter { $0 != .syncing }.flatMap { try schema.operationIDs(withStatus: $0, in: txn) }
        }
        let discarded = JournalEventBody.discarded(Discarded(requestedBy: .member, reason: .signOut))
        var units = ids.map { [JournalStore.Draft(operationID: $0, body: discarded)] }
        for abandoned in try store.interruptedAttempts() {
            units.append([abandoned, JournalStore.Draft(operationID: abandoned.operationID, body: discarded)])
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for unit in units {
                group.addTask { _ = try await self.room.append(unit) }
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

extension OutboxStatus {
    /// The statuses the badge counts (``countsOnBadge``): what sign-out discards and an export
    /// carries.
    static let waitingToSync = allCases.filter(\.countsOnBadge)
}
