package import Foundation
package import OutboxCore
package import OutboxStorage

/// What the reads ask of the projections: operations, their counts and the engine state.
///
/// Two answer it alike: ``StoredProjections``, the indexes an engine keeps in the journal, and
/// ``FoldedJournal``, the same folded in memory from the events when the stored ones are of
/// another layout. A read is written once, against this, and gives the same answer from both.
package protocol ProjectionReads: Sendable {
    /// One operation's folded state.
    func state(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState?
    /// Every operation's id.
    func operationIDs(in txn: borrowing LMDBTransaction) throws -> [OperationID]
    /// Up to `limit` accepted operations of `statuses`, the newest enqueued first, each enqueued
    /// before `beforeSeq` when given.
    func newestFirst(statuses: [OutboxStatus], before beforeSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState]
    /// Up to `limit` accepted operations of `statuses`, the oldest enqueued first, each enqueued
    /// after `afterSeq` when given.
    func oldestFirst(statuses: [OutboxStatus], after afterSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState]
    /// Operations by status, every status present.
    func statusCounts(in txn: borrowing LMDBTransaction) throws -> [OutboxStatus: Int]
    /// The queued or syncing operation enqueued first: what has waited longest.
    func oldestPending(in txn: borrowing LMDBTransaction) throws -> OperationState?
    /// The oldest queued or syncing operations, oldest first, at most `limit`.
    func oldestPending(limit: Int, in txn: borrowing LMDBTransaction) throws -> [OperationState]
    /// The engine-level state folded from engine events.
    func engineState(in txn: borrowing LMDBTransaction) throws -> EngineState
    /// The bytes of the journal's events, as counted when they were written.
    func eventBytes(in txn: borrowing LMDBTransaction) throws -> Int
    /// The seqs of one operation's events and the damaged records that name it.
    func recordedSeqs(of id: OperationID, state: OperationState?, in txn: borrowing LMDBTransaction) throws
        -> (seqs: [JournalSequence], damaged: [Outbox.DamagedRecord])
}

/// The projections an engine keeps in the journal: indexes and counters, never a scan.
package struct StoredProjections: ProjectionReads {
    let schema: JournalSchema

    package func state(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        try schema.state(id, in: txn)
    }

    package func operationIDs(in txn: borrowing LMDBTransaction) throws -> [OperationID] {
        var ids: [OperationID] = []
        try txn.scan(schema.operations) { entry in
            ids.append(try entry.key())
            return .next
        }
        return ids
    }

    package func newestFirst(statuses: [OutboxStatus], before beforeSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        // Each status's index runs in journal order: read each backwards, then merge.
        var picked: [OperationState] = []
        for status in statuses {
            // The scan includes the key it starts at.
            let start = beforeSeq.map { JournalCodec.StatusKey.bytes((status, $0.previous)) }
            try take(status, from: start, reverse: true, limit: limit, accepts, into: &picked, in: txn)
        }
        return Array(picked.sorted { $0.firstSeq > $1.firstSeq }.prefix(limit))
    }

    package func oldestFirst(statuses: [OutboxStatus], after afterSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        var picked: [OperationState] = []
        for status in statuses {
            let start = afterSeq.map { JournalCodec.StatusKey.bytes((status, $0.next)) }
            try take(status, from: start, reverse: false, limit: limit, accepts, into: &picked, in: txn)
        }
        return Array(picked.sorted { $0.firstSeq < $1.firstSeq }.prefix(limit))
    }

    /// Up to `limit` accepted rows of one status's index, from `start` in the direction given.
    private func take(_ status: OutboxStatus, from start: [UInt8]?, reverse: Bool, limit: Int,
                      _ accepts: (OperationState) -> Bool, into picked: inout [OperationState],
                      in txn: borrowing LMDBTransaction) throws {
        var taken = 0
        try txn.scan(schema.byStatus, leading: JournalCodec.StatusKey.leading(status), from: start, reverse: reverse) { entry in
            guard taken < limit else { return .stop }
            guard let state = try schema.state(try entry.value(), in: txn), accepts(state) else { return .next }
            picked.append(state)
            taken += 1
            return .next
        }
    }

    package func statusCounts(in txn: borrowing LMDBTransaction) throws -> [OutboxStatus: Int] {
        try schema.queueDepth(in: txn)
    }

    package func oldestPending(in txn: borrowing LMDBTransaction) throws -> OperationState? {
        var oldest: OperationState?
        for status in [OutboxStatus.queued, .syncing] {
            guard let id = try schema.operationIDs(withStatus: status, limit: 1, in: txn).first,
                let state = try schema.state(id, in: txn)
            else { continue }
            if oldest.map({ state.firstSeq < $0.firstSeq }) ?? true { oldest = state }
        }
        return oldest
    }

    package func oldestPending(limit: Int, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        var states: [OperationState] = []
        for status in [OutboxStatus.queued, .syncing] {
            for id in try schema.operationIDs(withStatus: status, limit: limit, in: txn) {
                if let state = try schema.state(id, in: txn) { states.append(state) }
            }
        }
        return Array(states.sorted { $0.firstSeq < $1.firstSeq }.prefix(limit))
    }

    package func engineState(in txn: borrowing LMDBTransaction) throws -> EngineState {
        try schema.engineStateAsJudged(in: txn)
    }

    package func eventBytes(in txn: borrowing LMDBTransaction) throws -> Int {
        Int(try schema.counters(in: txn).eventBytes)
    }

    package func recordedSeqs(of id: OperationID, state: OperationState?, in txn: borrowing LMDBTransaction) throws
        -> (seqs: [JournalSequence], damaged: [Outbox.DamagedRecord]) {
        (state?.eventSeqs ?? [], [])
    }
}
