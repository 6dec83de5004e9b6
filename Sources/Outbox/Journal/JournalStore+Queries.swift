import Foundation
import OutboxCore
import OutboxStorage

/// The reads both the engine and a read-only ``JournalReader`` answer, each in one snapshot.
extension JournalStore {
    /// One operation as it stands; `now` says whether its scheduled moment is still ahead.
    func operationSnapshot(_ id: OperationID, now: Date = Date()) throws(OutboxError) -> OperationSnapshot? {
        let schema = self.schema
        return try read { txn in
            guard let state = try schema.state(id, in: txn) else { return nil }
            // A compacted operation's request left the journal with its events.
            let request = state.compactedAt == nil ? try schema.request(of: state, in: txn) : state.request(payload: Data())
            let waiting = try schema.waitingOn(state, engine: try schema.engineState(in: txn), now: now, in: txn)
            // The server's record of a conflict, opened when the journal is sealed and the key known.
            let conflict = state.status == .conflicted
                ? Conflict(serverRevision: state.serverRevision, serverCurrent: schema.opened(state).serverCurrent) : nil
            return OperationSnapshot(state: state, request: request, waitingOn: waiting, conflict: conflict)
        }
    }

    func operationState(_ id: OperationID) throws(OutboxError) -> OperationState? {
        let schema = self.schema
        return try read { txn in try schema.state(id, in: txn) }
    }

    /// Every event of one operation, in order; for a compacted operation, the `compacted` event
    /// that removed them.
    /// - Throws: ``OutboxError/operationNotFound(_:)`` for an unknown id.
    func history(_ id: OperationID) throws(OutboxError) -> [JournalEvent] {
        let schema = self.schema
        let events = try read { txn -> [JournalEvent] in
            if let state = try schema.state(id, in: txn), state.compactedAt != nil {
                return try schema.event(state.latestSeq, in: txn).map { [$0] } ?? []
            }
            return try schema.history(id, in: txn)
        }
        guard !events.isEmpty else { throw .operationNotFound(id) }
        return events
    }

    func lastSeq() throws(OutboxError) -> JournalSequence {
        let schema = self.schema
        return try read { txn in try schema.lastSeq(in: txn) }
    }

    func engineState() throws(OutboxError) -> EngineState {
        let schema = self.schema
        return try read { txn in try schema.engineState(in: txn) }
    }

    /// Up to `limit` events from `start` on, in journal order, checksums checked.
    func events(from start: JournalSequence, limit: Int) throws(OutboxError) -> [JournalEvent] {
        let schema = self.schema
        return try read { txn in
            var events: [JournalEvent] = []
            try txn.scan(schema.events, from: JournalCodec.Seq.bytes(start)) { entry in
                guard events.count < limit else { return .stop }
                events.append(try schema.decode(Array(entry.valueBytes), seq: try entry.key()))
                return .next
            }
            return events
        }
    }

    /// `attemptAbandoned` drafts for every syncing row: at open, attempts the last process started
    /// and never saw end.
    func interruptedAttempts() throws(OutboxError) -> [JournalStore.Draft] {
        let schema = self.schema
        return try read { txn in
            try schema.operationIDs(withStatus: .syncing, in: txn).compactMap { id in
                guard let state = try schema.state(id, in: txn) else { return nil }
                return JournalStore.Draft(operationID: id, body: .attemptAbandoned(AttemptAbandoned(
                    attempt: AttemptNumber(rawValue: state.attemptCount)
                )))
            }
        }
    }
}
