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

/// Paging, spelled one way by every listing: rows `after:` a cursor in the listing's own order,
/// at most `limit` of them, and the page's `nextAfter`.
extension JournalQueries {
    /// Refuses a limit outside `allowed`: a page of no rows would say it is the last.
    static func checkLimit(_ limit: Int, within allowed: ClosedRange<Int> = 1...Int.max) throws(OutboxError) {
        guard !allowed.contains(limit) else { return }
        let bounds = allowed.upperBound == .max ? "1 or more" : "within \(allowed)"
        throw .invalidRequest(field: "limit", problem: "must be \(bounds), not \(limit)")
    }

    /// How many rows to read for a page of `limit`: one more, which only says another page follows.
    static func rowsToRead(_ limit: Int) -> Int {
        limit == .max ? limit : limit + 1
    }

    /// The page of `limit` among `rows` (read with ``rowsToRead(_:)``), and the cursor of its
    /// last row when more follow.
    static func cut<Row, Cursor>(_ rows: [Row], limit: Int, cursor: (Row) -> Cursor) -> (rows: [Row], nextAfter: Cursor?) {
        guard rows.count > limit else { return (rows, nil) }
        let page = Array(rows.prefix(limit))
        return (page, page.last.map(cursor))
    }
}

extension JournalSequence {
    /// The position before this one, for a scan down that excludes it (from zero, none is found:
    /// the first event is seq 1).
    var previous: JournalSequence {
        JournalSequence(rawValue: max(rawValue, 1) - 1)
    }
}
