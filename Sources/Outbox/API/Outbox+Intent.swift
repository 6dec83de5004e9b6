public import Foundation
public import OutboxCore
import OutboxCrypto

extension Outbox {
    /// Corrects a failed, blocked or conflicted row: a new operation (a new id and key, since the
    /// body changed) sends `payload` in the old row's place in its lane, ahead of later writes
    /// to the same entity; the old row becomes `superseded`, its payload kept in the history.
    /// Each names the other (``OperationSnapshot/supersedes``, ``OperationSnapshot/supersededBy``),
    /// and writes that depended on the old row wait for the new one.
    ///
    /// ```swift
    /// // 422 "Price must be positive": the member fixes the price and taps Retry.
    /// let corrected = try await outbox.revise(id, payload: fixedJSON)
    /// ```
    ///
    /// A conflicted row's correction is sent against the server's revision.
    /// - Returns: the new operation's id.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` for another
    ///   status; ``OutboxError/invalidRequest(field:problem:)`` for a payload that is not valid;
    ///   ``OutboxError/operationNotFound(_:)``.
    /// - Parameter changing: the records the correction changes; `nil` (the default) keeps the
    ///   old row's changes, which move to the new operation.
    @discardableResult
    public func revise(_ id: OperationID, payload: Data, changing: [RecordChange]? = nil) async throws -> OperationID {
        let old = try await standingRequest(id)
        var request = old.request
        request.payload = payload
        request.operationID = nil
        // A conflicted row's correction goes against the server's revision: its base revision, or,
        // for a write whose If-Match comes from its record, that record's base (the 412 put the
        // server's revision there), so it names no base revision of its own.
        if old.state.status == .conflicted, request.revisionFrom == nil { request.baseRevision = old.state.serverRevision ?? request.baseRevision }
        return try await supersede(old.state, with: request, reason: .revised, changing: changing)
    }

    /// Resolves a conflicted row: keeping the server's version discards it (with that reason);
    /// keeping the member's sends `payload` against the server's `baseRevision` as a new
    /// operation in its place, as ``revise(_:payload:)`` does.
    ///
    /// ```swift
    /// try await outbox.resolveConflict(id, keeping: .theirs)
    /// let resent = try await outbox.resolveConflict(id, keeping: .mine(payload: merged, baseRevision: "r8"))
    /// ```
    /// - Returns: the new operation's id when the member's version is kept; `nil` for the server's.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` unless the row is
    ///   conflicted; ``OutboxError/operationNotFound(_:)``.
    /// - Parameter changing: for the member's version, the records it changes; `nil` (the
    ///   default) keeps the conflicted row's changes, which move to the new operation.
    @discardableResult
    public func resolveConflict(_ id: OperationID, keeping choice: OperationSnapshot.ConflictChoice, changing: [RecordChange]? = nil) async throws -> OperationID? {
        switch choice {
        case .theirs:
            guard let state = try operationState(id) else { throw OutboxError.operationNotFound(id) }
            guard state.status == .conflicted else {
                throw OutboxError.illegalTransition(operation: id, status: state.status, event: .discarded,
                                                    reason: "only a conflicted row is resolved; discard(_:) drops another")
            }
            try await appendDecision(id, .discarded(Discarded(requestedBy: .member, reason: .serverWon)))
            return nil
        case .mine(let payload, let baseRevision):
            let old = try await standingRequest(id)
            guard old.state.status == .conflicted else {
                throw OutboxError.illegalTransition(operation: id, status: old.state.status, event: .superseded,
                                                    reason: "only a conflicted row is resolved; revise(_:payload:) corrects a failed or blocked one")
            }
            var request = old.request
            request.payload = payload
            request.operationID = nil
            request.baseRevision = request.revisionFrom == nil ? baseRevision : nil
            return try await supersede(old.state, with: request, reason: .resolvedMine, changing: changing)
        }
    }

    /// Waits until the operation leaves `queued` and `syncing` (synced, waiting for approval,
    /// failed, blocked, conflicted, or ended otherwise), and answers where it stands.
    ///
    /// ```swift
    /// let outcome = try await outbox.settled(id)   // after save() answered .queued
    /// ```
    /// - Throws: ``OutboxError/operationNotFound(_:)``; ``OutboxError/closed`` when the outbox
    ///   closes first; `CancellationError` when the task is cancelled.
    public func settled(_ id: OperationID) async throws -> OperationSnapshot {
        // Subscribed before the first look: no change can fall between the two.
        let changes = self.changes()
        guard let first = try operation(id) else { throw OutboxError.operationNotFound(id) }
        if first.status != .queued && first.status != .syncing { return first }
        for await change in changes where change.operations.contains(id) {
            try Task.checkCancellation()
            guard let now = try operation(id) else { throw OutboxError.operationNotFound(id) }
            if now.status != .queued && now.status != .syncing { return now }
        }
        try Task.checkCancellation()
        throw OutboxError.closed
    }

    // MARK: Internals

    /// A row as it stands, with its request as stored (payload included).
    private func standingRequest(_ id: OperationID) async throws -> OperationSnapshot {
        try ensureOpen()
        guard let snapshot = try operation(id) else { throw OutboxError.operationNotFound(id) }
        return snapshot
    }

    /// Appends, as one unit, `old`'s `superseded` and the `enqueued` of the operation that takes
    /// its place in its lane; the fold refuses it unless `old`'s status allows it.
    /// - Parameter changing: the new operation's record changes; `nil` moves `old`'s to it.
    func supersede(_ old: OperationState, with request: OutboxRequest, reason: SupersedeReason,
                   changing: [RecordChange]? = nil) async throws -> OperationID {
        try ensureOpen()
        try request.validate(maxPayloadBytes: configuration.maxPayloadBytes)
        let writes = try changing.map { try recordWrites($0, for: request) } ?? inheritedChanges(of: old)
        let id = configuration.operationIDSource?() ?? OperationID()
        let supersedes = Supersession(operation: old.id, reason: reason, laneSeq: old.laneSeq)
        _ = try await room.appendMakingRoom([
            JournalStore.Draft(operationID: old.id, body: .superseded(Superseded(by: id, reason: reason))),
            JournalStore.Draft(operationID: id, body: .enqueued(enqueuedBody(request, id: id, supersedes: supersedes, changes: writes))),
        ], payloadBytes: request.payload.count + writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
        log.log(.info, "row superseded", [
            EngineLog.Key.operation: .string(old.id.description),
            EngineLog.Key.reason: .string(reason.rawValue),
            EngineLog.Key.operationType: .string(request.operationType),
        ])
        await worker.becameDue(at: configuration.clock.now(), because: .retryRequested)
        return id
    }

    /// The `enqueued` body of `request` under `id`, sealed when the journal is encrypted.
    func enqueuedBody(_ request: OutboxRequest, id: OperationID, supersedes: Supersession? = nil, changes: [RecordWrite] = [],
                      firstSentAt: Date? = nil, attachments: [AttachmentManifest] = []) -> Enqueued {
        let sealing = store.schema.sealing.sealing
        // The revision the member's change is made on (a pull may move the base before it is sent).
        let basis = request.revisionFrom.flatMap { key in
            try? store.read { txn in try store.schema.serverBase(key, in: txn) }
        }.flatMap { $0.valueHash == nil ? nil : $0.revision }
        return Enqueued(
            request: request, requestHash: SHA256Digest(of: request.payload), account: configuration.account,
            sealed: sealing?.seal(request, id: id), supersedes: supersedes,
            changes: changes.map { write in
                guard let sealing, let value = write.value else { return write }
                var sealed = write
                sealed.sealedValue = sealing.sealRecordValue(value, id: id, key: write.key)
                return sealed
            },
            basisRevision: basis,
            connectedClock: attempts.routes.connectedClock(at: configuration.clock.now()),
            firstSentAt: firstSentAt,
            attachments: attachments
        )
    }

    /// Whether `state` was saved from `request`: the same id with the same bytes is the same
    /// operation. A compacted one is compared on what the compaction kept (its base revision and
    /// dependencies went with its history); one compacted before journal format 2 kept only its
    /// type, and the id then decides.
    static func isSameIntent(_ state: OperationState, as request: OutboxRequest) -> Bool {
        guard state.keptRequest else { return state.operationType == request.operationType }
        let sameRequest = state.requestHash == SHA256Digest(of: request.payload) && state.operationType == request.operationType
            && state.method == request.method && state.endpoint == request.endpoint
            && state.businessID == request.businessID && state.entityID == request.entityID
        guard state.compactedAt == nil else { return sameRequest }
        return sameRequest && (state.rebaseCount > 0 || state.baseRevision == request.baseRevision)
            && state.dependsOn == request.dependsOn
    }
}

extension OperationSnapshot {
    /// Which version a person keeps when a record changed elsewhere.
    public enum ConflictChoice: Sendable, Equatable {
        /// The server's: the row is discarded, with that reason.
        case theirs
        /// The member's (or a merge): a new operation sends `payload` against the server's revision
        /// `baseRevision`, replacing the conflicted row.
        case mine(payload: Data, baseRevision: String)
    }
}
