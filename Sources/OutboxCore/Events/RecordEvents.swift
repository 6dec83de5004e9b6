import Foundation
public import OutboxCrypto
public import OutboxWire

// The events of the member's records (journal format 3).

/// A later write of a record was made on a value that has since been rolled back (its write
/// failed, was blocked, discarded or withdrawn): it is held, `conflicted`, never sent on a base
/// the server never had, and its overlay is hidden. A person decides.
public struct HeldOnRollback: Sendable, Equatable {
    /// The rolled-back write it was built on.
    public var builtOn: OperationID

    public init(builtOn: OperationID) {
        self.builtOn = builtOn
    }
}

/// The app acknowledged that the member saw a write's rollback on a record: the record stops
/// saying it was rolled back. The write's status does not change.
public struct RollbackAcknowledged: Sendable, Equatable {
    public var key: RecordKey

    public init(key: RecordKey) {
        self.key = key
    }
}

/// Records of local-only types written (drafts, preferences): never sent. The values live in the
/// journal's record store; the event keeps each key, value hash and schema version.
public struct RecordsWritten: Sendable, Equatable {
    public var writes: [RecordWrite]

    public init(writes: [RecordWrite]) {
        self.writes = writes
    }
}

/// The server base of one record type was dropped (an app upgrade changed the type without an
/// adapter for its stored values): its records are fetched again. Pending writes are untouched.
public struct RecordBaseDropped: Sendable, Equatable {
    public var business: String
    public var type: String
    /// The type's schema version the engine now has.
    public var schemaVersion: Int

    public init(business: String, type: String, schemaVersion: Int) {
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
public struct DeletedOnServer: Sendable, Equatable {
    public var key: RecordKey
    /// The tombstone's revision.
    public var revision: UInt64

    public init(key: RecordKey, revision: UInt64) {
        self.key = key
        self.revision = revision
    }
}

/// A page of a business's change feed applied: its changes went to the server base (each only
/// over an older revision) and its cursor to the feed, in this event's commit. The values live
/// in the base; the event keeps each record's revision and value hash, the base's trail.
public struct PageApplied: Sendable, Equatable {
    public var business: String
    /// The cursor the page started from and the one it ended at.
    public var from: FeedPosition
    public var to: FeedPosition
    /// Whether it reached the feed's end (the server said no more followed).
    public var reachedEnd: Bool
    /// The digest the page carried, checked against its changes before anything was written.
    public var digest: SHA256Digest
    /// Each change of a type the app knows, as the trail holds it (source `pulled`).
    public var confirmations: [RecordConfirmation]
    /// The changes passed over, each named with why (a type the app does not pull, a record
    /// over the size the engine keeps, a local-only type, a key no record may have).
    public var skipped: [SkippedChange]

    public init(business: String, from: FeedPosition, to: FeedPosition, reachedEnd: Bool, digest: SHA256Digest,
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
public struct PageRefused: Sendable, Equatable {
    public var business: String
    /// The cursor the page was asked from; `nil`: the feed's start.
    public var from: FeedPosition?
    /// ``PageRefusal/code``, and its sentence (at most 1 KiB).
    public var code: String
    public var detail: String

    public init(business: String, from: FeedPosition?, code: String, detail: String) {
        self.business = business
        self.from = from
        self.code = code
        self.detail = detail.utf8.count <= 1_024 ? detail : String(decoding: detail.utf8.prefix(1_021), as: UTF8.self) + "..."
    }
}

/// A pulled change (or snapshot record) the engine passed over, named so support can tell why a
/// record the server holds is not on the phone.
public struct SkippedChange: Sendable, Equatable {
    public var type: String
    public var id: String
    public var revision: UInt64
    public var reason: Reason

    public enum Reason: UInt8, Sendable, Equatable, CaseIterable {
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

    public init(type: String, id: String, revision: UInt64, reason: Reason) {
        self.type = type
        self.id = id
        self.revision = revision
        self.reason = reason
    }
}
