package import Foundation
package import OutboxCrypto
package import OutboxCore
package import OutboxStorage
import Synchronization

/// The journal's LMDB layout (projection layout ``projectionVersion``): the events, the projections kept beside
/// them in one database, and the member's record values in another.
///
/// | database | key | value |
/// |---|---|---|
/// | `meta` | name | format version, projection version, account, key check |
/// | `events` | seq (u64 BE) | the record (``RecordCodec``) |
/// | `state` | 0, name | `engine`: the engine state; `counters`: every counter (``JournalCounters``) |
/// | `state` | 1, operation id | its folded ``OperationState``, with the seqs of its events |
/// | `state` | 2, due moment, first seq | operation id, for queued rows |
/// | `state` | 3, lane (``Lane/bytes``), first seq | operation id, for rows not yet terminal |
/// | `state` | 4, group, category, 0, latest seq | operation id, for rows on the Sync tab |
/// | `state` | 5, record, lane seq, first seq | operation id, for writes whose change a record's view may show |
/// | `state` | 6, record, first seq | operation id, for writes of the record its view no longer shows (with 5: its history) |
/// | `state` | 7, status code, first seq | operation id |
/// | `records` | 1, record | its server base, generation 0 (``RecordStoreEntry``) |
/// | `records` | 2, record | a local-only record (``RecordStoreEntry``) |
/// | `records` | 3, record | its server base, generation 1: a resnapshot's staging, or the base once swapped in |
/// | `records` | 4, business | its change feed: cursor, the event that set it, the active generation, a staging (``FeedRow``) |
///
/// Every projection is written in the same transaction as the event it folds, and all of them
/// can be rebuilt from `events` alone. They share one B-tree under one-byte prefixes, so a commit
/// writes one page path for all of them, and the counters are one value written once per commit.
///
/// A class: every read takes the schema, and sharing one costs a retain where copying its
/// tables would cost one per table.
package final class JournalSchema: Sendable {
    /// The layout version of the projections (`state`). A journal stored with another version
    /// has its projections rebuilt from the events at open.
    package static let projectionVersion: UInt32 = 14

    /// The first layout that keeps its projections in `state`: a rebuild from such a layout
    /// rewrites what it reads.
    static let firstLayoutInState: UInt32 = 5

    /// The database every projection of this layout lives in.
    static let stateDatabase = "state"

    /// The database of the member's record values: server bases and local records. Not a
    /// projection: a rebuild never clears it.
    static let recordsDatabase = "records"

    /// Databases earlier layouts kept and this one does not: emptied by the migration's last
    /// step, once `state` is written whole. (`operation-events`, layout 2, listed each
    /// operation's seqs; layouts 2 to 4 kept each projection in a database of its own.)
    static let retiredDatabases = ["operation-events", "operations", "by-status", "schedule", "lanes", "sync-tab", "counters"]

    /// The first byte of each table's keys in `state`.
    ///
    /// `by-status` comes last: settled rows, which stay, are appended to it in seq order, and an
    /// append at the end of the tree fills each page before the next (LMDB splits a page so that
    /// the new key alone starts the next one), where one in the middle, before rows of another
    /// table that come and go, splits pages in halves and leaves them half empty.
    enum Prefix {
        static let singletons: UInt8 = 0
        static let operations: UInt8 = 1
        static let schedule: UInt8 = 2
        static let lanes: UInt8 = 3
        static let syncTab: UInt8 = 4
        static let recordWrites: UInt8 = 5
        static let recordOps: UInt8 = 6
        static let byStatus: UInt8 = 7
        static let notices: UInt8 = 8
        static let attachments: UInt8 = 9
    }

    package let meta: LMDBTable<NameCodec, RawBytes>
    package let events: LMDBTable<JournalCodec.Seq, RawBytes>
    /// The one database holding every projection.
    let state: LMDBDatabase
    /// The engine state and the counters: one value each.
    let singletons: LMDBTable<NameCodec, RawBytes>
    let operations: LMDBTable<JournalCodec.ID, JournalCodec.State>
    /// The same entries, read to be shown: without their event seqs (``JournalCodec/StateToShow``).
    let operationsToShow: LMDBTable<JournalCodec.ID, JournalCodec.StateToShow>
    let byStatus: LMDBTable<JournalCodec.StatusKey, JournalCodec.ID>
    let schedule: LMDBTable<JournalCodec.ScheduleKey, JournalCodec.ID>
    let lanes: LMDBTable<JournalCodec.LaneKey, JournalCodec.ID>
    /// The Sync tab's rows: each holds what its row shows and is judged by (``JournalCodec/TabRow``),
    /// so that a card is read from its own few pages, not from one `operations` page per row
    /// (layout 12).
    let syncTab: LMDBTable<JournalCodec.TabKey, JournalCodec.TabRow>
    let recordWrites: LMDBTable<JournalCodec.RecordWriteKey, JournalCodec.ID>
    let recordOps: LMDBTable<JournalCodec.RecordOpKey, JournalCodec.ID>
    /// The decisions the engine made for the member, by when: the Sync tab's notices.
    let notices: LMDBTable<JournalCodec.ScheduleKey, JournalCodec.ID>
    /// The writes that carry attachments, by their first seq (layout 14): what the upload queue
    /// works from, and which local files are still referenced.
    package let attachments: LMDBTable<JournalCodec.Seq, JournalCodec.ID>
    /// The record values' database, and its tables.
    let records: LMDBDatabase
    let base: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>
    /// A business's base generation 1 (``FeedRow/generation``).
    let stagedBase: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>
    package let localRecords: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>
    package let feeds: LMDBTable<NameCodec, JournalCodec.Feed>
    /// The journal's key, when it is encrypted at rest and the key was given.
    package let sealing = SealingBox()
    /// The bytes of segments in flight, which reads add to the landed ones.
    let uploadProgress = UploadProgress()
    /// The installation the engine that opened the journal runs on (``JournalStore/Options/runningOn``).
    let runningOn: String??

    /// Every table of `state`, in key order.
    var tables: [StoredTable] {
        [StoredTable(singletons), storedOperations] + Projection.Index.allCases.map { $0.storage(in: self) }
    }

    /// The operations' table as `verify` sees it.
    package var storedOperations: StoredTable { StoredTable(operations) }

    /// Opens the journal's databases, creating them unless the environment is read-only.
    ///
    /// A reader of a journal of an earlier layout finds no `state`: its tables are then read over
    /// `meta`, where no key starts with a table's prefix (every name there starts with a
    /// letter), so they read as empty; such a reader folds the events instead (``FoldedJournal``).
    /// - Parameter runningOn: the installation of the engine that opened the journal, for
    ///   ``engineStateAsJudged(in:)``; `nil` for a reader.
    init(environment: LMDBEnvironment, runningOn: String?? = nil) throws {
        self.runningOn = runningOn
        let metaDatabase = try environment.openDatabase("meta")
        meta = LMDBTable(metaDatabase)
        events = LMDBTable(try environment.openDatabase("events"))
        let state = environment.options.readOnly
            ? try environment.openExistingDatabase(Self.stateDatabase) ?? metaDatabase
            : try environment.openDatabase(Self.stateDatabase)
        self.state = state
        singletons = LMDBTable(state, prefix: [Prefix.singletons], name: "singletons")
        operations = LMDBTable(state, prefix: [Prefix.operations], name: "operations")
        operationsToShow = LMDBTable(state, prefix: [Prefix.operations], name: "operations")
        byStatus = LMDBTable(state, prefix: [Prefix.byStatus], name: "by-status")
        schedule = LMDBTable(state, prefix: [Prefix.schedule], name: "schedule")
        lanes = LMDBTable(state, prefix: [Prefix.lanes], name: "lanes")
        syncTab = LMDBTable(state, prefix: [Prefix.syncTab], name: "sync-tab")
        recordWrites = LMDBTable(state, prefix: [Prefix.recordWrites], name: "record-writes")
        recordOps = LMDBTable(state, prefix: [Prefix.recordOps], name: "record-ops")
        notices = LMDBTable(state, prefix: [Prefix.notices], name: "notices")
        attachments = LMDBTable(state, prefix: [Prefix.attachments], name: "attachments")
        // A reader of a journal from before records finds none: it reads an empty table over `meta`.
        let records = environment.options.readOnly
            ? try environment.openExistingDatabase(Self.recordsDatabase) ?? metaDatabase
            : try environment.openDatabase(Self.recordsDatabase)
        self.records = records
        base = LMDBTable(records, prefix: [RecordStoreWrite.Table.base.rawValue], name: "base")
        stagedBase = LMDBTable(records, prefix: [Self.secondBasePrefix], name: "base-2")
        localRecords = LMDBTable(records, prefix: [RecordStoreWrite.Table.local.rawValue], name: "local")
        feeds = LMDBTable(records, prefix: [Self.feedsPrefix], name: "feeds")
    }

    /// The `records` table of each business's change feed (``FeedRow``).
    static let feedsPrefix: UInt8 = 4
    /// The `records` table of a business's base generation 1 (generation 0 is table 1): where a
    /// resnapshot stages, and then the base the member sees once its feed row flips.
    static let secondBasePrefix: UInt8 = 3

    // MARK: Keys

    package enum MetaKey {
        package static let formatVersion = "format-version"
        package static let projectionVersion = "projection-version"
        package static let account = "account"
        /// Where layouts 2 to 4 kept the engine state; layout 5 keeps it in `state`.
        static let retiredEngineState = "engine-state"
        /// A constant sealed with the journal's key: present when it is encrypted at rest.
        package static let keyCheck = "key-check"
        /// The key the attachments' files are sealed with, itself sealed with the journal's key
        /// (``AttachmentKeyRecord``): a rotation re-seals it, never the files.
        static let attachmentKey = "attachment-key"
    }

    /// The names of the values under the singletons' prefix.
    enum SingletonKey {
        static let engine = "engine"
        static let counters = "counters"
    }

    package enum TabGroup: UInt8 {
        case waiting = 0
        case approval = 1
        case conflicted = 2
    }
}

/// Counter names in the `counters` database.
enum CounterName {
    static let events = "events"
    static let eventBytes = "event-bytes"
    static let attempts = "attempts"
    static let abandonedAttempts = "attempts-abandoned"
    static let cancelledAttempts = "attempts-cancelled"
    static func acknowledged(bucket: Int) -> String { "acknowledged-within/\(OutboxMetrics.AcknowledgementObjective.bucketName(bucket))" }

    static func status(_ status: OutboxStatus) -> String { "status/\(status.rawValue)" }
    static func outcome(_ outcome: OutcomeCategory) -> String { "outcome/\(outcome.rawValue)" }
    static func conflicts(_ operationType: String) -> String { "conflicts/\(operationType)" }
    static let conflictsPrefix = "conflicts/"
    static func revisionConflicts(_ operationType: String) -> String { "revision-conflicts/\(operationType)" }
    static let revisionConflictsPrefix = "revision-conflicts/"
    static func tab(_ group: JournalSchema.TabGroup, category: String) -> String {
        "tab/\(group.rawValue)/\(category)"
    }
    static func tabPrefix(_ group: JournalSchema.TabGroup) -> String { "tab/\(group.rawValue)/" }
}

/// The journal's sealing, replaced when the key rotates, and the key its attachments' files
/// are sealed with.
package final class SealingBox: Sendable {
    private let current = Mutex<JournalSealing?>(nil)
    private let files = Mutex<SealingKey?>(nil)

    package var sealing: JournalSealing? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// The attachments key: `nil` while the journal was never encrypted (or this reader has no
    /// key). It does not change when the journal's key rotates.
    var attachmentKey: SealingKey? {
        get { files.withLock { $0 } }
        set { files.withLock { $0 = newValue } }
    }
}
