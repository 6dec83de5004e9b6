package import Foundation
package import OutboxCore
package import OutboxStorage

/// Typed reads of the journal, inside a transaction.
extension JournalSchema {
    /// The seq of the last event; ``JournalSequence/zero`` for an empty journal.
    package func lastSeq(in txn: borrowing LMDBTransaction) throws -> JournalSequence {
        // The key alone: the last record's value is not read, so its damage cannot fault this.
        try txn.lastKey(events) ?? .zero
    }

    /// The seq of the first event still in the journal.
    package func firstSeq(in txn: borrowing LMDBTransaction) throws -> JournalSequence? {
        var first: JournalSequence?
        try txn.scan(events) { entry in
            first = try entry.key()
            return .stop
        }
        return first
    }

    /// The folded state of one operation.
    package func state(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        try state(id, from: operations, in: txn)
    }

    /// The folded state of one operation without its event seqs: for a read that shows the
    /// operation, never for one whose state is written back.
    package func stateToShow(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        try state(id, from: operationsToShow, in: txn)
    }

    private func state<Codec: LMDBCodec>(_ id: OperationID, from table: LMDBTable<JournalCodec.ID, Codec>,
                                         in txn: borrowing LMDBTransaction) throws -> OperationState? where Codec.Item == OperationState {
        do {
            return try txn.get(table, id)
        } catch let error as LMDBCodecError {
            throw OutboxError.projectionCorrupt(reason: "the state of operation \(id): \(error)")
        }
    }

    /// `attemptAbandoned` drafts for every syncing row (``JournalStore/interruptedAttempts()``).
    package func interruptedAttempts(in txn: borrowing LMDBTransaction) throws -> [JournalStore.Draft] {
        try operationIDs(withStatus: .syncing, in: txn).compactMap { id in
            guard let state = try state(id, in: txn) else { return nil }
            return JournalStore.Draft(operationID: id, body: .attemptAbandoned(AttemptAbandoned(
                attempt: AttemptNumber(rawValue: state.attemptCount)
            )))
        }
    }

    /// The engine state as the engine that opened the journal judges rows and shows them: the
    /// stored one, with the installation its own opening records (``EngineState/open(on:)``)
    /// whether that has landed yet or not. The opening is committed on the writer's queue while
    /// the app reads, so a journal copied to another installation holds its writes from the
    /// open's return, never judged by the last opening on the device it came from. (The route
    /// change an opening may carry is not laid over: until it lands, the connected clock still
    /// counts from the last process's route.) A reader judges by the stored one.
    package func engineStateAsJudged(in txn: borrowing LMDBTransaction) throws -> EngineState {
        var engine = try engineState(in: txn)
        if let runningOn { engine.open(on: runningOn) }
        return engine
    }

    /// The engine-level state folded from engine events, as stored: what the fold and `verify`
    /// read, and what a reader of the journal sees.
    package func engineState(in txn: borrowing LMDBTransaction) throws -> EngineState {
        guard let bytes = try txn.get(singletons, SingletonKey.engine) else { return EngineState() }
        do {
            return try StateCodec.decodeEngine(bytes)
        } catch {
            throw OutboxError.projectionCorrupt(reason: "the engine state: \(error)")
        }
    }

    /// The event at `seq`, checksum checked, its sealed fields opened when the key is known.
    package func event(_ seq: JournalSequence, in txn: borrowing LMDBTransaction) throws -> JournalEvent? {
        guard let record = try txn.get(events, seq) else { return nil }
        return try decode(record, seq: seq)
    }

    /// Decodes a record, opening its sealed fields when the key is known.
    package func decode(_ record: [UInt8], seq: JournalSequence) throws(OutboxError) -> JournalEvent {
        try RecordCodec.decode(record, seq: seq, unseal: sealing.sealing?.unsealer)
    }

    /// A state's entity label and summary, opened when sealed; `nil` for sealed text without
    /// the key.
    package func presentation(of state: OperationState) -> (label: String, summary: String)? {
        guard let sealed = state.sealedPresentation else { return (state.entityLabel, state.summary) }
        guard let text = try? sealing.sealing?.unsealPresentation(sealed, id: state.id) else { return nil }
        return (text.label, text.summary)
    }

    /// `state` with its entity label and summary opened for display: the plaintext when the key is
    /// known, "(sealed)" when not. A caller holding the state in a `var` opens it in place with
    /// ``open(_:)``: passing it through here and back copies it.
    package func opened(_ state: consuming OperationState) -> OperationState {
        open(&state)
        return state
    }

    /// ``opened(_:)`` in place: a state with nothing sealed is not touched, where passing it
    /// through and back copied its fields (a tenth of a Sync tab row's time).
    package func open(_ state: inout OperationState) {
        if let sealed = state.sealedServerCurrent, let sealing = sealing.sealing {
            state.serverCurrent = try? sealing.unsealServerCurrent(sealed, id: state.id)
        }
        guard state.sealedPresentation != nil else { return }
        let text = presentation(of: state)
        state.entityLabel = text?.label ?? "(sealed)"
        state.summary = text?.summary ?? "(sealed)"
    }

    /// The request stored in an operation's `enqueued` event, its sealed fields opened when the
    /// key is known.
    package func request(of state: OperationState, in txn: borrowing LMDBTransaction) throws -> OutboxRequest {
        try enqueued(of: state, in: txn).request
    }

    /// The `enqueued` event of `state`: its request and the record changes it made.
    package func enqueued(of state: OperationState, in txn: borrowing LMDBTransaction) throws -> Enqueued {
        guard let event = try event(state.firstSeq, in: txn), case .enqueued(let enqueued) = event.body,
            event.operationID == state.id
        else {
            throw OutboxError.projectionCorrupt(reason: "operation \(state.id) has no enqueued event at seq \(state.firstSeq)")
        }
        return enqueued
    }

    /// Every counter, as stored; all zero for a journal with none yet.
    package func counters(in txn: borrowing LMDBTransaction) throws -> JournalCounters {
        guard let bytes = try txn.get(singletons, SingletonKey.counters) else { return JournalCounters() }
        do {
            return try JournalCounters(decoding: bytes)
        } catch {
            throw OutboxError.projectionCorrupt(reason: "the counters: \(error)")
        }
    }

    /// The operations of the statuses `include` accepts, from the stored counters alone.
    package func count(ofStatuses include: (OutboxStatus) -> Bool, in txn: borrowing LMDBTransaction) throws -> Int {
        let count = try Self.countersName.withUnsafeBytes { name in
            try txn.withValue(singletons, encodedKey: name) { bytes -> Int64 in
                guard let bytes else { return 0 }
                do {
                    return try JournalCounters.count(ofStatuses: include, in: bytes)
                } catch {
                    throw OutboxError.projectionCorrupt(reason: "the counters: \(error)")
                }
            }
        }
        return Int(count)
    }

    /// The counters' name, as the singletons' codec encodes it.
    private static let countersName = NameCodec.bytes(SingletonKey.counters)

    /// Ids of the rows of one status, in journal order.
    package func operationIDs(
        withStatus status: OutboxStatus,
        limit: Int = .max,
        in txn: borrowing LMDBTransaction
    ) throws -> [OperationID] {
        var ids: [OperationID] = []
        try txn.scan(byStatus, leading: JournalCodec.StatusKey.leading(status)) { entry in
            guard ids.count < limit else { return .stop }
            ids.append(try entry.value())
            return .next
        }
        return ids
    }

    /// The last row of `lane` not yet terminal: the one a new coalescing write may replace.
    package func laneTail(_ lane: Lane, in txn: borrowing LMDBTransaction) throws -> OperationID? {
        var tail: OperationID?
        try txn.scan(lanes, leading: JournalCodec.LaneKey.leading(lane), reverse: true) { entry in
            tail = try entry.value()
            return .stop
        }
        return tail
    }

    /// The first row of `lane` not yet terminal: the only one of the lane that may be sent.
    package func laneHead(_ lane: Lane, in txn: borrowing LMDBTransaction) throws -> OperationID? {
        var head: OperationID?
        try txn.scan(lanes, leading: JournalCodec.LaneKey.leading(lane)) { entry in
            head = try entry.value()
            return .stop
        }
        return head
    }

    /// Folds one engine event into the stored projections: the engine state, and for a
    /// `compacted` event the states it leaves and their indexes. Its counter changes go to
    /// `counters`, for the transaction to write once (``Projection/writeCounters(_:schema:in:)``).
    /// An operation's events are folded by the append itself, which has checked them already.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` when a compaction names a row that
    ///   is not settled.
    func projectEngineEvent(
        _ event: JournalEvent,
        recordSize: Int,
        counters: inout JournalCounters,
        in txn: borrowing LMDBTransaction
    ) throws {
        precondition(event.operationID == nil, "operation event \(event.kind) at seq \(event.seq) projected as an engine event")
        do {
            var changes: [(before: OperationState?, after: OperationState)] = []
            if case .compacted(let compacted) = event.body {
                var known: [OperationID: OperationState] = [:]
                for operation in compacted.operations { known[operation.id] = try state(operation.id, in: txn) }
                changes = try Fold.applyCompaction(compacted, seq: event.seq, recordedAt: event.recordedAt) { known[$0] }
            }
            let engine = try engineState(in: txn).applying(event)
            try Projection.apply(event, recordSize: recordSize, changes: changes, engine: engine,
                                 counters: &counters, schema: self, in: txn)
        } catch let error as OutboxError {
            if case .illegalTransition = error { throw OutboxError.journalCorrupt(seq: event.seq, reason: "illegal transition: \(error)") }
            throw error
        }
    }
}
