public import Foundation
public import Outbox
import OutboxCore

extension Outbox {
    /// A page of the reconciliation ledger: one row per operation, in journal order, without
    /// payloads or field values (``LedgerQuery`` shows how to read on).
    public func ledger(_ query: LedgerQuery = LedgerQuery()) throws -> LedgerPage {
        try ensureOpen()
        return try store.queries.ledger(query)
    }
}

extension JournalQueries {
    /// Ledger rows in journal order, filtered and paged.
    func ledger(_ query: LedgerQuery) throws(OutboxError) -> LedgerPage {
        try Self.checkLimit(query.limit)
        let projections = self.projections
        let statuses = query.status.map { [$0] } ?? OutboxStatus.allCases
        let rows = try read { txn in
            try projections.oldestFirst(statuses: statuses, after: query.after, limit: Self.rowsToRead(query.limit), where: { state in
                if let from = query.createdFrom, state.createdAt < from { return false }
                if let before = query.createdBefore, state.createdAt >= before { return false }
                return true
            }, in: txn)
        }
        let page = Self.cut(rows, limit: query.limit, cursor: \.firstSeq)
        return LedgerPage(entries: page.rows.map(LedgerEntry.init), nextAfter: page.nextAfter)
    }
}
