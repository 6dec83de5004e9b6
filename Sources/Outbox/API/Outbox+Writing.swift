import Foundation
import OutboxCore
import OutboxCrypto

extension Outbox {
    /// Queues a write and returns once it is durable in the journal.
    ///
    /// ```swift
    /// let id = try await outbox.enqueue(request)
    /// // Safe to say "Saved on this device".
    /// ```
    /// Every field is validated first: a bad request never reaches the journal.
    /// - Returns: the operation's id, whose UUID string is its `Idempotency-Key`.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the field and the fix,
    ///   ``OutboxError/onlineOnly(operationType:)``, ``OutboxError/storageFull(limitBytes:)``
    ///   (nothing was saved), ``OutboxError/closed``.
    public func enqueue(_ request: OutboxRequest) async throws -> OperationID {
        let id = try await appendEnqueued(request)
        await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
        await compactIfDue()
        return id
    }

    /// Validates and appends the `enqueued` event; returns once durable.
    func appendEnqueued(_ request: OutboxRequest) async throws -> OperationID {
        try ensureOpen()
        guard canQueue(request.operationType) else { throw OutboxError.onlineOnly(operationType: request.operationType) }
        try request.validate(maxPayloadBytes: configuration.maxPayloadBytes)
        try await room.ensureRoom(forPayloadBytes: request.payload.count)
        let id = configuration.operationIDSource?() ?? OperationID()
        let enqueued = Enqueued(
            request: request, requestHash: SHA256Digest(of: request.payload), account: configuration.account,
            sealed: store.schema.sealing.sealing?.seal(request, id: id)
        )
        // A file found full (its free pages still held by readers) gets one compaction first.
        let events = try await room.append([JournalStore.Draft(operationID: id, body: .enqueued(enqueued))])
        log.log(.debug, "enqueued", [
            EngineLog.Key.operation: .string(id.description),
            EngineLog.Key.operationType: .string(request.operationType),
            EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
        ])
        return id
    }

    /// Puts a failed or blocked row back in the queue, due at once, and lets the worker know.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` for any other
    ///   status; ``OutboxError/operationNotFound(_:)``.
    public func retry(_ id: OperationID) async throws {
        try await appendDecision(id, .requeued(Requeued(requestedBy: .member)))
        await worker.becameDue(at: configuration.clock.now(), because: .retryRequested)
    }

    /// Drops a queued, failed or blocked row. Its payload stays readable in ``history(_:)``.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` for any other
    ///   status; ``OutboxError/operationNotFound(_:)``.
    public func discard(_ id: OperationID) async throws {
        try await appendDecision(id, .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)))
    }

    /// Records the decision on a row waiting for approval: approved settles it as synced,
    /// rejected as failed.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` unless the row
    ///   is waiting for approval; ``OutboxError/operationNotFound(_:)``.
    public func recordApprovalDecision(_ id: OperationID, approved: Bool, reference: String? = nil) async throws {
        try await appendDecision(id, .approvalDecided(ApprovalDecided(approved: approved, reference: reference)))
    }

    /// Appends a person's decision about one operation; the fold refuses it when illegal.
    @discardableResult
    func appendDecision(_ id: OperationID, _ body: JournalEventBody) async throws -> [JournalEvent] {
        try ensureOpen()
        guard try operationState(id) != nil else { throw OutboxError.operationNotFound(id) }
        return try await writer.append([JournalStore.Draft(operationID: id, body: body)])
    }
}
