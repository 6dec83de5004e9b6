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
        try await ensureRoom(forPayloadBytes: request.payload.count)
        let id = configuration.operationIDSource?() ?? OperationID()
        let enqueued = Enqueued(
            request: request, requestHash: SHA256Digest(of: request.payload), account: configuration.account,
            sealed: store.schema.sealing.sealing?.seal(request, id: id)
        )
        let unit = [JournalStore.Draft(operationID: id, body: .enqueued(enqueued))]
        do {
            _ = try await writer.append(unit)
        } catch OutboxError.storageFull {
            // The file itself is full (its free pages still held by readers): settled rows make
            // room, once; after that the refusal stands.
            _ = try? await compact(before: .distantFuture)
            _ = try await writer.append(unit)
        }
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

    /// Makes sure the journal's budget can take one more write, before anything is written.
    ///
    /// Past 80 % of ``OutboxConfiguration/maxJournalBytes`` the engine compacts every settled
    /// operation. A reserve is kept for the worker's own events, so that everything already
    /// waiting can still drain when the journal is otherwise full: 64 KiB, and 2 KiB for each row
    /// not yet settled (room for several attempts each).
    /// - Throws: ``OutboxError/storageFull(limitBytes:)`` when nothing more can be freed.
    func ensureRoom(forPayloadBytes payloadBytes: Int) async throws {
        let budget = configuration.maxJournalBytes
        // The pages written so far bound the live data from above: with half the budget unused,
        // there is room without reading anything more.
        if let used = try? store.environment.info().usedBytes, used + payloadBytes + 2048 <= budget / 2 { return }
        let unsettled = try store.unsettledCount()
        let reserve = (64 << 10) + unsettled * (2 << 10)
        var live = try liveJournalBytes()
        if live >= budget / 10 * 8 {
            _ = try? await compact(before: .distantFuture)
            live = try liveJournalBytes()
        }
        // A record and the projections it changes take a few hundred bytes beside the payload.
        if live + payloadBytes + 2048 > budget - reserve {
            throw OutboxError.storageFull(limitBytes: budget)
        }
    }

    /// The bytes of the journal holding live data (pages in use, less those free for reuse).
    func liveJournalBytes() throws(OutboxError) -> Int {
        do {
            return try store.environment.liveBytes()
        } catch {
            throw OutboxError(storage: error, limitBytes: configuration.maxJournalBytes)
        }
    }
}
