package import Foundation
package import OutboxCore
package import OutboxStorage

/// The query and audit side of a journal: every read the engine, a ``JournalReader`` and
/// `journal-inspect` answer, each in one snapshot. It never writes; ``JournalStore`` appends.
///
/// Its reads of operations go through ``projections``: the stored ones, or for a reader of a
/// journal whose projections are of another layout, the same answers folded from the events.
package struct JournalQueries: Sendable {
    package let environment: LMDBEnvironment
    package let schema: JournalSchema
    package let options: JournalStore.Options
    /// Where operations, their counts and the engine state are read from.
    package let projections: any ProjectionReads
    /// Whether the stored projections match this engine's layout.
    package let projectionsAreCurrent: Bool

    package init(environment: LMDBEnvironment, schema: JournalSchema, options: JournalStore.Options,
                 projections: any ProjectionReads, projectionsAreCurrent: Bool) {
        self.environment = environment
        self.schema = schema
        self.options = options
        self.projections = projections
        self.projectionsAreCurrent = projectionsAreCurrent
    }

    /// Runs `body` in a read transaction: one consistent snapshot.
    package func read<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws(OutboxError) -> R {
        try JournalStore.run(options) { try environment.read(body) }
    }
}

extension JournalStore {
    /// The journal's reads, from its stored projections.
    package var queries: JournalQueries {
        JournalQueries(environment: environment, schema: schema, options: options,
                       projections: StoredProjections(schema: schema), projectionsAreCurrent: projectionsAreCurrent)
    }

}

/// Paging, spelled one way by every listing: rows `after:` a cursor in the listing's own order,
/// at most `limit` of them, and the page's `nextAfter`.
extension JournalQueries {
    /// Refuses a limit outside `allowed`: a page of no rows would say it is the last.
    package static func checkLimit(_ limit: Int, within allowed: ClosedRange<Int> = 1...Int.max) throws(OutboxError) {
        guard !allowed.contains(limit) else { return }
        let bounds = allowed.upperBound == .max ? "1 or more" : "within \(allowed)"
        throw .invalidRequest(field: "limit", problem: "must be \(bounds), not \(limit)")
    }

    /// How many rows to read for a page of `limit`: one more, which only says another page follows.
    package static func rowsToRead(_ limit: Int) -> Int {
        limit == .max ? limit : limit + 1
    }

    /// The page of `limit` among `rows` (read with ``rowsToRead(_:)``), and the cursor of its
    /// last row when more follow.
    package static func cut<Row, Cursor>(_ rows: [Row], limit: Int, cursor: (Row) -> Cursor) -> (rows: [Row], nextAfter: Cursor?) {
        guard rows.count > limit else { return (rows, nil) }
        let page = Array(rows.prefix(limit))
        return (page, page.last.map(cursor))
    }
}

extension JournalSequence {
    /// The position before this one, for a scan down that excludes it (from zero, none is found:
    /// the first event is seq 1).
    package var previous: JournalSequence {
        JournalSequence(rawValue: max(rawValue, 1) - 1)
    }
}
