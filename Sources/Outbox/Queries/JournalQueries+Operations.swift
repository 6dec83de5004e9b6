package import Foundation
package import OutboxCore
package import OutboxStorage

/// The reads both the engine and a read-only ``JournalReader`` answer, each in one snapshot.
extension JournalQueries {
    /// One operation as it stands, as ``snapshot(of:now:in:)`` reads it.
    package func operationSnapshot(_ id: OperationID, now: Date) throws(OutboxError) -> OperationSnapshot? {
        let projections = self.projections
        return try read { txn in
            guard let state = try projections.state(id, in: txn) else { return nil }
            return try snapshot(of: state, now: now, in: txn)
        }
    }

    /// One operation's snapshot from its stored state: its request, and what a queued row waits
    /// on, read from the stored lane and dependency indexes (a reader of projections of another
    /// layout answers without it); `now` says whether its scheduled moment is still ahead.
    package func snapshot(of state: OperationState, now: Date, in txn: borrowing LMDBTransaction) throws -> OperationSnapshot {
        // A compacted operation's request left the journal with its events.
        let request = state.compactedAt == nil ? try schema.request(of: state, in: txn) : state.request(payload: Data())
        let waiting = projectionsAreCurrent
            ? try schema.waitingOn(state, engine: try projections.engineState(in: txn), now: now, in: txn) : nil
        // The server's record of a conflict, opened when the journal is sealed and the key known.
        let conflict = state.status == .conflicted
            ? OperationSnapshot.Conflict(serverRevision: state.serverRevision, serverCurrent: schema.opened(state).serverCurrent) : nil
        return OperationSnapshot(state: state, request: request, waitingOn: waiting, conflict: conflict)
    }

    package func operationState(_ id: OperationID) throws(OutboxError) -> OperationState? {
        let projections = self.projections
        return try read { txn in try projections.state(id, in: txn) }
    }

    /// Every event of one operation, in order; for a compacted operation, the `compacted` event
    /// that removed them.
    /// - Throws: ``OutboxError/operationNotFound(_:)`` for an unknown id;
    ///   ``OutboxError/journalCorrupt(seq:reason:)`` at a damaged record of it.
    package func history(_ id: OperationID) throws(OutboxError) -> [JournalEvent] {
        let schema = self.schema
        let projections = self.projections
        let events = try read { txn -> [JournalEvent] in
            let state = try projections.state(id, in: txn)
            if let state, state.compactedAt != nil {
                return try schema.event(state.latestSeq, in: txn).map { [$0] } ?? []
            }
            let (seqs, damaged) = try projections.recordedSeqs(of: id, state: state, in: txn)
            if let first = damaged.first { throw OutboxError.journalCorrupt(seq: first.seq, reason: first.reason) }
            return try seqs.map { seq in
                guard let event = try schema.event(seq, in: txn) else {
                    throw OutboxError.projectionCorrupt(reason: "operation \(id) lists seq \(seq), which is not in the journal")
                }
                return event
            }
        }
        guard !events.isEmpty else { throw .operationNotFound(id) }
        return events
    }

    package func lastSeq() throws(OutboxError) -> JournalSequence {
        let schema = self.schema
        return try read { txn in try schema.lastSeq(in: txn) }
    }

    package func engineState() throws(OutboxError) -> EngineState {
        let projections = self.projections
        return try read { txn in try projections.engineState(in: txn) }
    }

    /// Up to `limit` events from `start` on, in journal order, checksums checked.
    package func events(from start: JournalSequence, limit: Int) throws(OutboxError) -> [JournalEvent] {
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
}
