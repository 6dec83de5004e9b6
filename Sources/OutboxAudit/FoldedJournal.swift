public import Outbox
import Foundation
import OutboxCore
import OutboxStorage

/// A journal folded in memory, for a reader of a journal whose stored projections are of
/// another layout: it answers what the projections would.
struct FoldedJournal: Sendable {
    var image: ProjectionImage
    /// The records the fold could not read: reported by every read that meets them.
    var damaged: [Outbox.DamagedRecord]
    /// The seqs of every readable event of each operation, in order, including events the fold
    /// refused (``verify`` names those).
    var eventSeqs: [OperationID: [JournalSequence]]

    /// Folds every readable, legal event of the journal, in one snapshot.
    static func fold(schema: JournalSchema, in txn: borrowing LMDBTransaction) throws -> FoldedJournal {
        var verifier = JournalVerifier()
        try txn.scan(schema.events) { entry in
            verifier.check(seq: (try? entry.key()) ?? .zero, record: Array(entry.valueBytes))
            return .next
        }
        return FoldedJournal(image: verifier.image, damaged: verifier.damaged, eventSeqs: verifier.eventSeqs)
    }
}

extension FoldedJournal: ProjectionReads {
    func state(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        image.states[id]
    }

    func operationIDs(in txn: borrowing LMDBTransaction) throws -> [OperationID] {
        Array(image.states.keys)
    }

    func newestFirst(statuses: [OutboxStatus], before beforeSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        let picked = image.states.values.filter { state in
            statuses.contains(state.status) && beforeSeq.map { state.firstSeq < $0 } ?? true && accepts(state)
        }
        return Array(picked.sorted { $0.firstSeq > $1.firstSeq }.prefix(limit))
    }

    func oldestFirst(statuses: [OutboxStatus], after afterSeq: JournalSequence?, limit: Int,
                     where accepts: (OperationState) -> Bool, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        let picked = image.states.values.filter { state in
            statuses.contains(state.status) && afterSeq.map { state.firstSeq > $0 } ?? true && accepts(state)
        }
        return Array(picked.sorted { $0.firstSeq < $1.firstSeq }.prefix(limit))
    }

    func statusCounts(in txn: borrowing LMDBTransaction) throws -> [OutboxStatus: Int] {
        var counts = Dictionary(uniqueKeysWithValues: OutboxStatus.allCases.map { ($0, 0) })
        for state in image.states.values { counts[state.status, default: 0] += 1 }
        return counts
    }

    func oldestPending(in txn: borrowing LMDBTransaction) throws -> OperationState? {
        image.states.values.filter { $0.status == .queued || $0.status == .syncing }.min { $0.firstSeq < $1.firstSeq }
    }

    func oldestPending(limit: Int, in txn: borrowing LMDBTransaction) throws -> [OperationState] {
        Array(image.states.values.filter { $0.status == .queued || $0.status == .syncing }.sorted { $0.firstSeq < $1.firstSeq }.prefix(limit))
    }

    func engineState(in txn: borrowing LMDBTransaction) throws -> EngineState {
        image.engine
    }

    func eventBytes(in txn: borrowing LMDBTransaction) throws -> Int {
        Int(image.eventBytes)
    }

    func recordedSeqs(of id: OperationID, state: OperationState?, in txn: borrowing LMDBTransaction) throws
        -> (seqs: [JournalSequence], damaged: [Outbox.DamagedRecord]) {
        (eventSeqs[id] ?? [], damaged.filter { $0.claimedOperationID == id })
    }
}
