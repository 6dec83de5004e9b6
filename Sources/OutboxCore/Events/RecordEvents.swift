import Foundation
package import OutboxCrypto
package import OutboxWire

// The events of the member's records (journal format 3).

/// A later write of a record was made on a value that has since been rolled back (its write
/// failed, was blocked, discarded or withdrawn): it is held, `conflicted`, never sent on a base
/// the server never had, and its overlay is hidden. A person decides.
package struct HeldOnRollback: Sendable, Equatable {
    /// The rolled-back write it was built on.
    package var builtOn: OperationID

    package init(builtOn: OperationID) {
        self.builtOn = builtOn
    }
}

/// The app acknowledged that the member saw a write's rollback on a record: the record stops
/// saying it was rolled back. The write's status does not change.
package struct RollbackAcknowledged: Sendable, Equatable {
    package var key: RecordKey

    package init(key: RecordKey) {
        self.key = key
    }
}

/// Records of local-only types written (drafts, preferences): never sent. The values live in the
/// journal's record store; the event keeps each key, value hash and schema version.
package struct RecordsWritten: Sendable, Equatable {
    package var writes: [RecordWrite]

    package init(writes: [RecordWrite]) {
        self.writes = writes
    }
}

/// The server base of one record type was dropped (an app upgrade changed the type without an
/// adapter for its stored values): its records are fetched again. Pending writes are untouched.
package struct RecordBaseDropped: Sendable, Equatable {
    package var business: String
    package var type: String
    /// The type's schema version the engine now has.
    package var schemaVersion: Int

    package init(business: String, type: String, schemaVersion: Int) {
        self.business = business
        self.type = type
        self.schemaVersion = schemaVersion
    }
}

// The events of the pull (journal format 4).

/// A pulled tombstone found a write of the record still waiting: the record was deleted on the
/// server while the member's change waited. The write turns `conflicted`, its change kept on
/// screen beside the deletion, and a person decides (keep it: create the record again; or
/// discard it).
package struct DeletedOnServer: Sendable, Equatable {
    package var key: RecordKey
    /// The tombstone's revision.
    package var revision: UInt64

    package init(key: RecordKey, revision: UInt64) {
        self.key = key
        self.revision = revision
    }
}

/// A page of a business's change feed applied: its changes went to the server base (each only
/// over an older revision) and its cursor to the feed, in this event's commit. The values live
/// in the base; the event keeps each record's revision and value hash, the base's trail.
package struct PageApplied: Sendable, Equatable {
    package var business: String
    /// The cursor the page started from and the one it ended at.
    package var from: FeedPosition
    package var to: FeedPosition
    /// Whether it reached the feed's end (the server said no more followed).
    package var reachedEnd: Bool
    /// The digest the page carried, checked against its changes before anything was written.
    package var digest: SHA256Digest
    /// Each change of a type the app knows, as the trail holds it (source `pulled`).
    package var confirmations: [RecordConfirmation]
    /// The changes passed over, each named with why (a type the app does not pull, a record
    /// over the size the engine keeps, a local-only type, a key no record may have).
    package var skipped: [SkippedChange]

    package init(business: String, from: FeedPosition, to: FeedPosition, reachedEnd: Bool, digest: SHA256Digest,
                confirmations: [RecordConfirmation], skipped: [SkippedChange] = []) {
        self.business = business
        self.from = from
        self.to = to
        self.reachedEnd = reachedEnd
        self.digest = digest
        self.confirmations = confirmations
        self.skipped = skipped
    }
}

/// A page of a business's change feed refused before anything of it was written: what the
/// server got wrong, so support can tell its author. The next pull asks from the same cursor.
package struct PageRefused: Sendable, Equatable {
    package var business: String
    /// The cursor the page was asked from; `nil`: the feed's start.
    package var from: FeedPosition?
    /// ``PageRefusal/code``, and its sentence (at most 1 KiB).
    package var code: String
    package var detail: String

    package init(business: String, from: FeedPosition?, code: String, detail: String) {
        self.business = business
        self.from = from
        self.code = code
        self.detail = detail.utf8.count <= 1_024 ? detail : String(decoding: detail.utf8.prefix(1_021), as: UTF8.self) + "..."
    }
}

/// A pulled change (or snapshot record) the engine passed over, named so support can tell why a
/// record the server holds is not on the phone.
package struct SkippedChange: Sendable, Equatable {
    package var type: String
    package var id: String
    package var revision: UInt64
    package var reason: Reason

    package enum Reason: UInt8, Sendable, Equatable, CaseIterable {
        /// A type the pull configuration does not list.
        case unknownType = 1
        /// A record over 1 MiB, the largest value an answer's record may be: kept out of the
        /// base.
        case overLimit = 2
        /// A local-only type: the server never holds one.
        case localOnly = 3
        /// A type or id no record key may have (``RecordKey/problem``).
        case invalidKey = 4
    }

    package init(type: String, id: String, revision: UInt64, reason: Reason) {
        self.type = type
        self.id = id
        self.revision = revision
        self.reason = reason
    }
}
