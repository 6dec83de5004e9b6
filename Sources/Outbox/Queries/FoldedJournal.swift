import Foundation
import OutboxCore
import OutboxStorage

/// A journal folded in memory, for a reader of a journal whose stored projections are of
/// another layout: it answers what the projections would.
struct FoldedJournal: Sendable {
    var image: ProjectionImage
    /// The records the fold could not read: reported by every read that meets them.
    var damaged: [DamagedRecord]
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
