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

    let meta: LMDBDatabase
    let events: LMDBDatabase
    let operations: LMDBDatabase
    let byStatus: LMDBDatabase
    let schedule: LMDBDatabase
    let lanes: LMDBDatabase
    let syncTab: LMDBDatabase
    let counters: LMDBDatabase
    /// The journal's key, when it is encrypted at rest and the key was given.
    let sealing = SealingBox()

    /// The databases derived from the events: cleared and refilled by a rebuild.
    var projections: [LMDBDatabase] {
        [operations, byStatus, schedule, lanes, syncTab, counters]
    }

    init(environment: LMDBEnvironment) throws {
        meta = try environment.openDatabase("meta")
        events = try environment.openDatabase("events")
        operations = try environment.openDatabase("operations")
        byStatus = try environment.openDatabase("by-status")
        schedule = try environment.openDatabase("schedule")
        lanes = try environment.openDatabase("lanes")
        syncTab = try environment.openDatabase("sync-tab")
        counters = try environment.openDatabase("counters")
    }

    // MARK: Meta keys

    enum MetaKey {
        static let formatVersion = Array("format-version".utf8)
        static let projectionVersion = Array("projection-version".utf8)
        static let account = Array("account".utf8)
        static let createdAt = Array("created-at".utf8)
        static let engineState = Array("engine-state".utf8)
        /// A constant sealed with the journal's key: present when it is encrypted at rest.
        static let keyCheck = Array("key-check".utf8)
    }

    // MARK: Index keys

    static func statusKey(_ status: OutboxStatus, firstSeq: JournalSequence) -> [UInt8] {
        [status.code] + firstSeq.key
    }

    static func statusPrefix(_ status: OutboxStatus) -> [UInt8] { [status.code] }

    /// Due moments sort as unsigned integers; a row due now sorts first.
    static func scheduleKey(dueAt: Date?, firstSeq: JournalSequence) -> [UInt8] {
        guard let dueAt else { return [UInt8](repeating: 0, count: 8) + firstSeq.key }
        return sortableBits(dueAt.timeIntervalSinceReferenceDate).bigEndianBytes + firstSeq.key
    }

    /// The moment a schedule key names; `nil` for "due now".
    static func scheduledMoment(_ key: UnsafeRawBufferPointer) -> Date? {
        let bits = key.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard bits != 0 else { return nil }
        return Date(timeIntervalSinceReferenceDate: unsortableBits(bits))
    }

    static func laneKey(_ lane: String, firstSeq: JournalSequence) -> [UInt8] {
        lanePrefix(lane) + firstSeq.key
    }

    static func lanePrefix(_ lane: String) -> [UInt8] {
        Array(lane.utf8) + [0]
    }

    enum TabGroup: UInt8 {
        case waiting = 0
        case approval = 1
    }

    static func tabKey(_ group: TabGroup, category: String, latestSeq: JournalSequence) -> [UInt8] {
        tabPrefix(group, category: category) + latestSeq.key
    }

    static func tabPrefix(_ group: TabGroup, category: String) -> [UInt8] {
        [group.rawValue] + Array(category.utf8) + [0]
    }

    /// A double's bits, reordered so that unsigned comparison follows numeric order.
    private static func sortableBits(_ value: Double) -> UInt64 {
        let bits = value.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    private static func unsortableBits(_ bits: UInt64) -> Double {
        Double(bitPattern: bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits)
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
