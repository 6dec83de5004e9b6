import Foundation
import OutboxCore
import OutboxStorage

/// The query and audit side of a journal: every read the engine, a ``JournalReader`` and
/// `journal-inspect` answer, each in one snapshot. It never writes; ``JournalStore`` appends.
///
/// Its reads of operations go through ``projections``: the stored ones, or for a reader of a
/// journal whose projections are of another layout, the same answers folded from the events.
struct JournalQueries: Sendable {
    let environment: LMDBEnvironment
    let schema: JournalSchema
    let options: JournalStore.Options
    /// Where operations, their counts and the engine state are read from.
    let projections: any ProjectionReads
    /// Whether the stored projections match this engine's layout.
    let projectionsAreCurrent: Bool

    /// Runs `body` in a read transaction: one consistent snapshot.
    func read<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws(OutboxError) -> R {
        try JournalStore.run(options) { try environment.read(body) }
    }
}

extension JournalStore {
    /// The journal's reads, from its stored projections.
    var queries: JournalQueries {
        JournalQueries(environment: environment, schema: schema, options: options,
                       projections: StoredProjections(schema: schema), projectionsAreCurrent: projectionsAreCurrent)
    }

    /// The journal's reads, from its events folded in memory (for projections of another layout).
    func foldedQueries() throws(OutboxError) -> (JournalQueries, FoldedJournal) {
        let schema = self.schema
        let folded = try read { txn in try FoldedJournal.fold(schema: schema, in: txn) }
        let queries = JournalQueries(environment: environment, schema: schema, options: options,
                                     projections: folded, projectionsAreCurrent: projectionsAreCurrent)
        return (queries, folded)
    }
}
