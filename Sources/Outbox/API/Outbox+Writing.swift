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
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the field and the fix (an
    ///   operation type the configuration lists nowhere among them),
    ///   ``OutboxError/onlineOnly(operationType:)``, ``OutboxError/storageFull(limitBytes:)``
    ///   (nothing was saved), ``OutboxError/closed``.
    public func enqueue(_ request: OutboxRequest) async throws -> OperationID {
        try await enqueue(request, changing: [])
    }

    /// Queues a write and, in the same commit, the member's record changes it sends: both are
    /// durable when it returns, or neither is.
    ///
    /// ```swift
    /// let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
    /// try await outbox.enqueue(request, changing: [.put(key, Data(#"{"name":"Antiseptic 500 ml","price":13.5}"#.utf8))])
    /// try outbox.record(key)?.value   // the member's price, "waiting for internet"
    /// ```
    ///
    /// The write is sent after every earlier unsettled write of each record it changes.
    /// - Throws: as ``enqueue(_:)``, and ``OutboxError/invalidRequest(field:problem:)`` for a
    ///   change that cannot be kept (see `Docs/records.md`): neither the write nor a change lands.
    public func enqueue(_ request: OutboxRequest, changing changes: [RecordChange]) async throws -> OperationID {
        switch try await appendIntent(request, changing: changes) {
        case .new(let id):
            await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
            await compactIfDue()
            return id
        case .existing(let snapshot):
            return snapshot.id
        }
    }

    /// Refuses a type the configuration lists nowhere (fail-closed) and an online-only one.
    func checkPolicy(of operationType: String) throws(OutboxError) {
        guard let policy = configuration.policy(for: operationType) else {
            throw .invalidRequest(
                field: "operationType",
                problem: "\"\(operationType.prefix(OutboxRequest.maxOperationTypeBytes))\" has no policy: add it to OutboxConfiguration.operationPolicies"
                    + " (e.g. .idempotent, once a replay of it is proved to apply once) or set defaultPolicy"
            )
        }
        guard policy.replay != .onlineOnly else { throw .onlineOnly(operationType: operationType) }
    }

    /// What an enqueue did.
    enum EnqueueOutcome {
        /// A new operation, durable.
        case new(OperationID)
        /// The request's stable id was saved before with the same bytes: nothing was written.
        case existing(OperationSnapshot)
    }

    /// Validates and appends the `enqueued` event; returns once durable. A request whose
    /// ``OutboxRequest/operationID`` was saved before is that operation, and nothing is written;
    /// a coalescing type replaces the entity lane's last row of its type when it was never sent.
    /// - Parameter firstSentAt: for a write imported from an export, when it was first sent from
    ///   the journal it came from (the age of the server's claim on its key).
    /// - Parameter attachments: the manifests of the files it carries, each kept durably already.
    func appendIntent(_ request: OutboxRequest, changing changes: [RecordChange] = [], coalescing: Bool = true,
                      firstSentAt: Date? = nil, attachments: [AttachmentManifest] = []) async throws -> EnqueueOutcome {
        try ensureOpen()
        try checkPolicy(of: request.operationType)
        try request.validate(maxPayloadBytes: configuration.maxPayloadBytes)
        var writes = try recordWrites(changes, for: request)
        if let id = request.operationID, let existing = try existingIntent(id, request, changes: writes, attachments: attachments) {
            return .existing(existing)
        }
        for dependency in request.dependsOn where try operationState(dependency) == nil {
            throw OutboxError.invalidRequest(field: "dependsOn", problem: "names \(dependency), which is not in this journal: enqueue the write it depends on first")
        }
        let id = request.operationID ?? configuration.operationIDSource?() ?? OperationID()
        var unit: [JournalStore.Draft] = []
        var supersedes: Supersession?
        // A write with files is never folded into another: each file is its own upload.
        if coalescing, attachments.isEmpty, let replaced = try coalescedRow(for: request) {
            supersedes = Supersession(operation: replaced.id, reason: .coalesced, laneSeq: replaced.laneSeq)
            // The replaced row's changes move to the write that replaces it, unless it names its own.
            if writes.isEmpty { writes = try inheritedChanges(of: replaced) }
            unit.append(JournalStore.Draft(operationID: replaced.id, body: .superseded(Superseded(by: id, reason: .coalesced))))
        }
        unit.append(JournalStore.Draft(operationID: id, body: .enqueued(enqueuedBody(
            request, id: id, supersedes: supersedes, changes: writes, firstSentAt: firstSentAt, attachments: attachments))))
        let events: [JournalEvent]
        do {
            // A file found full (its free pages still held by readers) gets one compaction first.
            events = try await room.appendMakingRoom(unit, payloadBytes: request.payload.count + writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
        } catch OutboxError.illegalTransition(let operation, _, .superseded, _) where operation != id {
            // The row to coalesce was started meanwhile (the worker got there first): once
            // attempted it is never replaced, so the write is queued after it instead.
            return try await appendIntent(request, changing: changes, coalescing: false, attachments: attachments)
        } catch OutboxError.illegalTransition(let operation, _, .enqueued, _) where operation == id {
            // Saved meanwhile by another call with the same id (a double tap on two threads).
            if let existing = try existingIntent(id, request, changes: writes, attachments: attachments) { return .existing(existing) }
            throw OutboxError.operationIDReused(id)
        }
        log.log(.debug, "enqueued", [
            EngineLog.Key.operation: .string(id.description),
            EngineLog.Key.operationType: .string(request.operationType),
            EngineLog.Key.seq: .string(events.last.map { "\($0.seq)" } ?? ""),
        ])
        return .new(id)
    }

    /// Appends a request's `enqueued` (or finds it saved already); answers its id.
    func appendEnqueued(_ request: OutboxRequest) async throws -> OperationID {
        switch try await appendIntent(request) {
        case .new(let id): id
        case .existing(let snapshot): snapshot.id
        }
    }

    /// The operation saved under the app's id `id`, when there is one: the same operation if
    /// saved from the same bytes.
    /// - Throws: ``OutboxError/operationIDReused(_:)`` when it was saved from other bytes.
    private func existingIntent(_ id: OperationID, _ request: OutboxRequest, changes: [RecordWrite],
                                attachments: [AttachmentManifest]) throws -> OperationSnapshot? {
        guard let existing = try operation(id) else { return nil }
        // The same records and files too: a stable id saved again with others is another intent.
        let compacted = existing.state.compactedAt != nil
        let sameRecords = try compacted || sameChanges(existing.state, changes)
        let sameFiles = compacted || existing.state.attachments.map(\.manifest) == attachments
        guard Self.isSameIntent(existing.state, as: request), sameRecords, sameFiles else {
            throw OutboxError.operationIDReused(id)
        }
        return existing
    }

    /// Whether `state`'s `enqueued` made exactly `changes` (keys, values' hashes, deletes).
    private func sameChanges(_ state: OperationState, _ changes: [RecordWrite]) throws -> Bool {
        guard state.records == changes.map(\.key) else { return false }
        guard !changes.isEmpty else { return true }
        let schema = store.schema
        let stored = try store.read { txn in try schema.enqueued(of: state, in: txn).changes }
        return stored.map(\.valueHash) == changes.map(\.valueHash)
    }

    /// The row a write of a coalescing type replaces: its entity lane's last row, when that is of
    /// the same type and was never attempted.
    private func coalescedRow(for request: OutboxRequest) throws -> OperationState? {
        guard configuration.policy(for: request.operationType)?.coalesces == true, let entityID = request.entityID else { return nil }
        let lane = Lane(businessID: request.businessID, entityID: entityID, operation: OperationID())
        let schema = store.schema
        return try store.read { txn -> OperationState? in
            guard let tail = try schema.laneTail(lane, in: txn), let state = try schema.state(tail, in: txn),
                state.operationType == request.operationType, state.status == .queued, state.neverSent
            else { return nil }
            return state
        }
    }

    /// Puts a failed or blocked row back in the queue, due at once, and lets the worker know.
    /// - Throws: ``OutboxError/illegalTransition(operation:status:event:reason:)`` for any other
    ///   status; ``OutboxError/operationNotFound(_:)``.
    public func retry(_ id: OperationID) async throws {
        if let state = try operationState(id), state.status == .conflicted {
            throw OutboxError.illegalTransition(
                operation: id, status: .conflicted, event: .requeued,
                reason: "a retry would resend the edit against a revision the server no longer has; resolveConflict(_:keeping:) decides"
            )
        }
        try await appendDecision(id, .requeued(Requeued(requestedBy: .member)))
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

    /// Appends a person's decision about one operation; the fold refuses it when illegal. Then
    /// lets the worker know: the row may be due again (a retry), or it held its lane or a
    /// dependent back (a discard, an approval, the server's version kept), whose rows are due now.
    @discardableResult
    func appendDecision(_ id: OperationID, _ body: JournalEventBody) async throws -> [JournalEvent] {
        try ensureOpen()
        guard try operationState(id) != nil else { throw OutboxError.operationNotFound(id) }
        let events = try await room.append([JournalStore.Draft(operationID: id, body: body)])
        await worker.becameDue(at: configuration.clock.now(), because: .retryRequested)
        return events
    }
}
