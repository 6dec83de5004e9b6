import Foundation
import OutboxCore
import OutboxStorage

/// A pulled type whose schema changed: its base fetched again whole, never a mix of versions.
extension FeedPuller {
    /// Drops the base of each pulled type of `business` whose records were fetched under an older
    /// schema version than the configured one (``OutboxConfiguration.RecordTypePolicy/schemaVersion``), when the app
    /// gives no adapter for the stored values (``OutboxConfiguration.RecordTypePolicy/upgrade``): as
    /// ``Outbox/dropRecordBase(business:type:)`` does, recorded as `recordBaseDropped`, so the
    /// next page of the business's feed fetches the type again whole. A type with an adapter is
    /// read through it and kept. Answers the types dropped.
    func dropBasesOfChangedSchemas(business: String) async -> [String] {
        guard let pull = configuration.pull else { return [] }
        var dropped: [String] = []
        for (type, policy) in configuration.exactRecordTypes.sorted(by: { $0.key < $1.key })
        where policy.upgrade == nil && !policy.isLocalOnly && pull.pulls(type: type.string) {
            do {
                let stored = try store.read { txn in try store.schema.baseSchemaVersion(business: business, type: type.string, in: txn) }
                guard let stored, stored < policy.schemaVersion else { continue }
                var draft = JournalStore.Draft(operationID: nil, body: .recordBaseDropped(
                    RecordBaseDropped(business: business, type: type.string, schemaVersion: policy.schemaVersion)))
                draft.dropsBase = (business, type.string)
                _ = try await room.append([draft])
                log.log(.info, "a pulled type's schema changed with no adapter for its stored values: its base is fetched again", [
                    EngineLog.Key.business: .string(business), EngineLog.Key.recordType: .string(type.string),
                    EngineLog.Key.schemaVersion: .string("\(stored) -> \(policy.schemaVersion)"),
                ])
                dropped.append(type.string)
            } catch {
                log.problem(.journalRead, "could not check a pulled type's schema version; its base stays until the next pass", error: error)
            }
        }
        return dropped
    }
}

extension JournalSchema {
    /// The schema version of the first record of one business's type in the base the member
    /// sees: what the type's records were fetched under (a pull writes a type's records under
    /// one version); `nil` when the base holds none of the type.
    func baseSchemaVersion(business: String, type: String, in txn: borrowing LMDBTransaction) throws -> Int? {
        var version: Int?
        try txn.scan(activeBase(business: business, in: txn), leading: RecordKey.scopeBytes(business: business, type: type)) { entry in
            version = try entry.value().schemaVersion
            return .stop
        }
        return version
    }
}
