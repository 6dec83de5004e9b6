import Foundation
import OutboxCore
import OutboxStorage

/// The member's records, each read in one snapshot.
extension JournalQueries {
    package func record(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy) throws(OutboxError) -> LocalRecord? {
        let key = try key.checked()
        let schema = self.schema
        return try read { txn in try schema.record(key, policy: policy, in: txn) }
    }

    package func records(_ query: RecordQuery, policy: OutboxConfiguration.RecordTypePolicy) throws(OutboxError) -> RecordQuery.Page {
        try RecordKey.checkScope(business: query.business, type: query.type)
        if let after = query.after { try RecordKey.checkID(after, field: "after") }
        try Self.checkLimit(query.limit, within: 1...RecordQuery.maxLimit)
        let schema = self.schema
        let (records, more) = try read { txn in
            try schema.records(business: query.business, type: query.type, after: query.after, limit: query.limit, policy: policy, in: txn)
        }
        return RecordQuery.Page(records: records, nextAfter: more ? records.last?.key.id : nil)
    }
}

extension JournalQueries {
    package func recordHistory(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy, showingValues: Bool) throws(OutboxError) -> LocalRecord.History {
        let key = try key.checked()
        let schema = self.schema
        return try read { txn in try schema.recordHistory(key, policy: policy, showingValues: showingValues, in: txn) }
    }
}
