import Foundation
import OutboxCore
import OutboxStorage
import Synchronization

/// The journal's LMDB layout: the events, and the projections kept beside them.
///
/// | database | key | value |
/// |---|---|---|
/// | `meta` | name | format version, projection version, account, engine state |
/// | `events` | seq (u64 BE) | the record (``RecordCodec``) |
/// | `operations` | operation id | its folded ``OperationState``, with the seqs of its events |
/// | `by-status` | status code, first seq | operation id |
/// | `schedule` | due moment, first seq | operation id, for queued rows |
/// | `lanes` | lane, 0, first seq | operation id, for rows not yet terminal |
/// | `sync-tab` | group, category, 0, latest seq | operation id, for rows on the Sync tab |
/// | `counters` | name | signed 64-bit count |
///
/// Every projection is written in the same transaction as the event it folds, and all of them
/// can be rebuilt from `events` alone.
struct JournalSchema: Sendable {
    /// The layout version of every database but `events` and `meta`. A journal stored with
    /// another version has its projections rebuilt from the events at open.
    static let projectionVersion: UInt32 = 3

    /// Databases earlier layouts kept and this one does not: emptied by a rebuild.
    /// (`operation-events`, layout 2, listed each operation's seqs; the state holds them now.)
    static let retiredDatabases = ["operation-events"]

    let meta: LMDBTable<NameCodec, RawBytes>
    let events: LMDBTable<JournalCodec.Seq, RawBytes>
    let operations: LMDBTable<JournalCodec.ID, JournalCodec.State>
    let byStatus: LMDBTable<JournalCodec.StatusKey, JournalCodec.ID>
    let schedule: LMDBTable<JournalCodec.ScheduleKey, JournalCodec.ID>
    let lanes: LMDBTable<JournalCodec.LaneKey, JournalCodec.ID>
    let syncTab: LMDBTable<JournalCodec.TabKey, JournalCodec.ID>
    let counters: LMDBTable<NameCodec, BigEndianInt64>
    /// The journal's key, when it is encrypted at rest and the key was given.
    let sealing = SealingBox()

    /// The databases derived from the events: cleared and refilled by a rebuild.
    var projections: [LMDBDatabase] {
        [operations.database, byStatus.database, schedule.database, lanes.database, syncTab.database, counters.database]
    }

    init(environment: LMDBEnvironment) throws {
        meta = LMDBTable(try environment.openDatabase("meta"))
        events = LMDBTable(try environment.openDatabase("events"))
        operations = LMDBTable(try environment.openDatabase("operations"))
        byStatus = LMDBTable(try environment.openDatabase("by-status"))
        schedule = LMDBTable(try environment.openDatabase("schedule"))
        lanes = LMDBTable(try environment.openDatabase("lanes"))
        syncTab = LMDBTable(try environment.openDatabase("sync-tab"))
        counters = LMDBTable(try environment.openDatabase("counters"))
    }

    // MARK: Meta keys

    enum MetaKey {
        static let formatVersion = "format-version"
        static let projectionVersion = "projection-version"
        static let account = "account"
        static let engineState = "engine-state"
        /// A constant sealed with the journal's key: present when it is encrypted at rest.
        static let keyCheck = "key-check"
    }

    enum TabGroup: UInt8 {
        case waiting = 0
        case approval = 1
    }
}

/// Counter names in the `counters` database.
enum CounterName {
    static let events = "events"
    static let eventBytes = "event-bytes"
    static let attempts = "attempts"

    static func status(_ status: OutboxStatus) -> String { "status/\(status.rawValue)" }
    static func outcome(_ outcome: OutcomeCategory) -> String { "outcome/\(outcome.rawValue)" }
    static func conflicts(_ operationType: String) -> String { "conflicts/\(operationType)" }
    static let conflictsPrefix = "conflicts/"
    static func tab(_ group: JournalSchema.TabGroup, category: String) -> String {
        "tab/\(group.rawValue)/\(category)"
    }
    static func tabPrefix(_ group: JournalSchema.TabGroup) -> String { "tab/\(group.rawValue)/" }
}

/// The journal's sealing, replaced when the key rotates.
final class SealingBox: Sendable {
    private let current = Mutex<JournalSealing?>(nil)

    var sealing: JournalSealing? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
