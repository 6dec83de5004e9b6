import Synchronization

/// Where in an environment a transaction read or wrote: keys and key ranges, database by
/// database. An observation keeps the region its read read; each commit hands over the region it
/// wrote; the read runs again only when the two meet. (GRDB's `DatabaseRegion`, for LMDB.)
public struct LMDBRegion: Sendable, Equatable {
    /// A span of keys in one database, both ends included; `nil`: open at that end.
    public struct KeyRange: Sendable, Equatable {
        public var lower: [UInt8]?
        public var upper: [UInt8]?

        public init(lower: [UInt8]?, upper: [UInt8]?) {
            self.lower = lower
            self.upper = upper
        }

        /// This span, no wider than `outer`.
        func clipped(to outer: KeyRange) -> KeyRange {
            func greater(_ a: [UInt8]?, _ b: [UInt8]?) -> [UInt8]? {
                guard let a else { return b }
                guard let b else { return a }
                return a.lexicographicallyPrecedes(b) ? b : a
            }
            func lesser(_ a: [UInt8]?, _ b: [UInt8]?) -> [UInt8]? {
                guard let a else { return b }
                guard let b else { return a }
                return a.lexicographicallyPrecedes(b) ? a : b
            }
            return KeyRange(lower: greater(lower, outer.lower), upper: lesser(upper, outer.upper))
        }

        func contains(_ key: [UInt8]) -> Bool {
            if let lower, key.lexicographicallyPrecedes(lower) { return false }
            if let upper, upper.lexicographicallyPrecedes(key) { return false }
            return true
        }
    }

    /// Single keys, per database handle.
    public private(set) var keys: [UInt32: Set<[UInt8]>] = [:]
    /// Key ranges, per database handle.
    public private(set) var ranges: [UInt32: [KeyRange]] = [:]
    /// Databases taken whole (counted, emptied).
    public private(set) var wholeDatabases: Set<UInt32> = []

    public init() {}

    public var isEmpty: Bool { keys.isEmpty && ranges.isEmpty && wholeDatabases.isEmpty }

    /// Adds `key` of `database`: also a handle no LMDB database has, for state an engine keeps
    /// in memory and observations watch like a table.
    public mutating func insert(_ key: [UInt8], in database: UInt32) {
        keys[database, default: []].insert(key)
    }

    mutating func insert(_ range: KeyRange, in database: UInt32) {
        if range.lower == nil, range.upper == nil {
            wholeDatabases.insert(database)
        } else {
            ranges[database, default: []].append(range)
        }
    }

    mutating func insertWhole(_ database: UInt32) {
        wholeDatabases.insert(database)
    }

    public mutating func formUnion(_ other: LMDBRegion) {
        for (database, keys) in other.keys { self.keys[database, default: []].formUnion(keys) }
        for (database, ranges) in other.ranges { self.ranges[database, default: []].append(contentsOf: ranges) }
        wholeDatabases.formUnion(other.wholeDatabases)
    }

    /// Whether a write of `written` could change what a read of this region read. `written` is a
    /// write's region: single keys, and whole databases it emptied.
    public func isChanged(by written: LMDBRegion) -> Bool {
        for database in written.wholeDatabases where touches(database) { return true }
        for database in wholeDatabases where written.touches(database) { return true }
        for (database, writtenKeys) in written.keys {
            let read = keys[database] ?? []
            let spans = ranges[database] ?? []
            for key in writtenKeys {
                if read.contains(key) || spans.contains(where: { $0.contains(key) }) { return true }
            }
        }
        return false
    }

    private func touches(_ database: UInt32) -> Bool {
        wholeDatabases.contains(database) || keys[database] != nil || ranges[database] != nil
    }
}

/// Collects the region of the transactions it is handed to: a read's keys and ranges, or a
/// write's keys.
public final class LMDBRegionRecorder: Sendable {
    public enum Mode: Sendable {
        /// Keys read, and the spans scans crossed.
        case reads
        /// Keys put or deleted, databases emptied.
        case writes
    }

    public let mode: Mode
    private let collected = Mutex(LMDBRegion())

    public init(_ mode: Mode) {
        self.mode = mode
    }

    /// The region so far.
    public var region: LMDBRegion { collected.withLock { $0 } }

    func record(_ body: (inout LMDBRegion) -> Void) {
        collected.withLock { body(&$0) }
    }

    /// Records a read of `key` in `database` made outside LMDB (see ``LMDBRegion/insert(_:in:)``).
    public func recordRead(_ key: [UInt8], in database: UInt32) {
        guard mode == .reads else { return }
        record { $0.insert(key, in: database) }
    }

    /// The recorder the reads of the current task hand their transactions: set around a read to
    /// learn its region (``LMDBEnvironment/read(_:)`` asks it once per transaction).
    @TaskLocal public static var current: LMDBRegionRecorder?
}

/// Hears of every write transaction an environment commits, with the region it wrote: how
/// observations learn what a commit could have changed, whatever code wrote it. Off (no region
/// recorded, nothing called) until a handler is set.
final class LMDBWriteWatch: Sendable {
    private let handler = Mutex<(@Sendable (LMDBRegion) -> Bool)?>(nil)
    private let watching = Atomic<Bool>(false)

    public init() {}

    /// Whether commits record their region now.
    public var isWatching: Bool { watching.load(ordering: .acquiring) }

    /// Sets (or, with `nil`, clears) what hears each commit's region: through
    /// ``LMDBEnvironment/watchWrites(_:)``, between two write transactions.
    func setHandler(_ body: (@Sendable (LMDBRegion) -> Bool)?) {
        handler.withLock { $0 = body }
        watching.store(body != nil, ordering: .releasing)
    }

    /// A write transaction committed, having written `region`. Called after the commit, on the
    /// writing thread, under the environment's writer lock: the handler only hands it on, and
    /// answers whether to go on watching (no: regions stop being recorded).
    func committed(_ region: LMDBRegion) {
        guard !region.isEmpty, let body = handler.withLock({ $0 }) else { return }
        if !body(region) { setHandler(nil) }
    }
}
