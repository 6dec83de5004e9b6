import Foundation
import Outbox
import OutboxCore
import OutboxStorage

/// The listings of operations a support tool pages through.
extension JournalQueries {
    /// A page of the operations `query` lists, newest first, each as ``operationSnapshot(_:now:)``
    /// answers it, all in one snapshot.
    func operations(matching query: OperationQuery, now: Date) throws(OutboxError) -> OperationPage {
        try Self.checkLimit(query.limit)
        return try read { txn in
            let page = try statePage(query, in: txn)
            return OperationPage(operations: try page.rows.map { try snapshot(of: $0, now: now, in: txn) }, nextAfter: page.nextAfter)
        }
    }

    /// The same page as folded states, their sealed text opened: no event is read.
    func operationStates(matching query: OperationQuery) throws(OutboxError) -> OperationStatePage {
        try Self.checkLimit(query.limit)
        let schema = self.schema
        let page = try read { txn in try statePage(query, in: txn) }
        return OperationStatePage(states: page.rows.map(schema.opened), nextAfter: page.nextAfter)
    }

    /// The stored states of one page of `query`, and the cursor of the next.
    private func statePage(_ query: OperationQuery, in txn: borrowing LMDBTransaction) throws
        -> (rows: [OperationState], nextAfter: JournalSequence?) {
        let statuses = query.statuses.map { OutboxStatus.allCases.filter($0.contains) } ?? OutboxStatus.allCases
        let rows = try projections.newestFirst(statuses: statuses, before: query.after, limit: Self.rowsToRead(query.limit),
                                               where: query.accepts, in: txn)
        return Self.cut(rows, limit: query.limit, cursor: \.firstSeq)
    }
}

extension JournalStore {
    /// The journal's reads, from its events folded in memory (for projections of another layout).
    func foldedQueries() throws(OutboxError) -> (JournalQueries, FoldedJournal) {
        let schema = self.schema
        let folded = try read { txn in try FoldedJournal.fold(schema: schema, in: txn) }
        let queries = JournalQueries(environment: environment, schema: schema, options: options,
                                     projections: folded, projectionsAreCurrent: projectionsAreCurrent)
        return (queries, folded)
    }
}
