package import Foundation
package import OutboxCrypto

/// What an append writes into the record store with its events, in the same transaction.
package struct RecordStoreWrite: Sendable, Equatable {
    package enum Table: UInt8, Sendable {
        case base = 1
        case local = 2
    }

    package var table: Table
    package var key: RecordKey
    package var revision: UInt64
    package var schemaVersion: Int
    /// `nil`: deleted.
    package var value: Data?
    /// The value's SHA-256 when the producer computed it already (a pulled page checks it):
    /// stored as is, not hashed again.
    package var valueHash: SHA256Digest?

    package init(table: Table, key: RecordKey, revision: UInt64, schemaVersion: Int, value: Data?, valueHash: SHA256Digest? = nil) {
        self.table = table
        self.key = key
        self.revision = revision
        self.schemaVersion = schemaVersion
        self.value = value
        self.valueHash = value == nil ? nil : valueHash
    }

    /// Whether it replaces `stored`: a base only by a newer revision (it never moves back); a
    /// local record always.
    package func replaces(storedRevision: UInt64?) -> Bool {
        guard table == .base else { return true }
        return RecordRule.baseTakes(incoming: revision, over: storedRevision)
    }
}

