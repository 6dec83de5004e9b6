// Kept in one file: the environment's lifecycle (opening, map growth, readers, closing) is one
// set of invariants; transactions and tables are in files of their own.

import CLMDB
public import Foundation
import Synchronization

/// One LMDB environment: a directory holding `data.mdb` and `lock.mdb`.
///
/// ```swift
/// let environment = try LMDBEnvironment.open(directory: url, options: .init())
/// let events = try environment.openDatabase("events")
/// try environment.write { txn in try txn.put(events, key: key, value: record, flags: .append) }
/// let record = try environment.read { txn in try txn.get(events, key: key) }
/// ```
///
/// Transactions are synchronous and scoped to a closure: returning commits, throwing aborts and
/// rethrows. There is no `await` inside one, because LMDB's write lock belongs to a thread.
/// Writes are serialized here; reads run on any thread at once (`MDB_NOTLS`) and never block
/// the writer. A path is opened at most once per process, as LMDB requires.
public final class LMDBEnvironment: @unchecked Sendable {
    // Why unchecked: `handle` is only used through LMDB calls, which are safe across threads
    // for an MDB_NOTLS environment while the map gate is held; the mutable state sits in a Mutex.

    /// How an environment is opened.
    public struct Options: Sendable {
        /// Open without writing: for other processes and tools reading a live journal.
        public var readOnly: Bool
        /// Flush to disk on every commit (`true`: durable against power loss). `false` uses
        /// `MDB_NOSYNC`: a commit survives the process being killed, not the system crashing.
        public var syncOnCommit: Bool
        /// The map's size at creation; it doubles when full, up to ``maxMapSizeBytes``.
        public var initialMapSizeBytes: Int
        /// The most the map may grow to. A write that needs more fails with
        /// ``LMDBError/mapFull`` and writes nothing.
        public var maxMapSizeBytes: Int
        /// How many named databases the environment may hold.
        public var maxDatabases: UInt32
        /// How many read transactions may be open at once across every process.
        public var maxReaders: UInt32
        /// Forces failures for tests (see ``LMDBFaultHook``); `package`, never a product's API.
        package var faultHook: LMDBFaultHook?
        /// Read without LMDB's lock file (`MDB_NOLOCK`), for a copy on read-only media where
        /// `lock.mdb` can be neither created nor opened. Read-only environments only: nothing
        /// then coordinates with a writer, so it suits a copy, not a live journal.
        public var withoutLockFile: Bool

        public init(
            readOnly: Bool = false,
            syncOnCommit: Bool = true,
            initialMapSizeBytes: Int = 4 << 20,
            maxMapSizeBytes: Int = 1 << 30,
            maxDatabases: UInt32 = 16,
            maxReaders: UInt32 = 126,
            withoutLockFile: Bool = false
        ) {
            self.init(readOnly: readOnly, syncOnCommit: syncOnCommit, initialMapSizeBytes: initialMapSizeBytes,
                      maxMapSizeBytes: maxMapSizeBytes, maxDatabases: maxDatabases, maxReaders: maxReaders,
                      faultHook: nil, withoutLockFile: withoutLockFile)
        }

        /// The options with a fault hook: for this package's tests (and the engine that passes
        /// theirs on).
        package init(
            readOnly: Bool = false,
            syncOnCommit: Bool = true,
            initialMapSizeBytes: Int = 4 << 20,
            maxMapSizeBytes: Int = 1 << 30,
            maxDatabases: UInt32 = 16,
            maxReaders: UInt32 = 126,
            faultHook: LMDBFaultHook?,
            withoutLockFile: Bool = false
        ) {
            self.readOnly = readOnly
            self.withoutLockFile = withoutLockFile
            self.syncOnCommit = syncOnCommit
            self.initialMapSizeBytes = initialMapSizeBytes
            self.maxMapSizeBytes = maxMapSizeBytes
            self.maxDatabases = maxDatabases
            self.maxReaders = maxReaders
            self.faultHook = faultHook
        }
    }

    /// What the environment reports of its size and use.
    public struct Info: Sendable, Equatable {
        /// The map's current size.
        public var mapSizeBytes: Int
        /// The bytes in use: the pages up to the last one written.
        public var usedBytes: Int
        public var pageSizeBytes: Int
        /// Read transactions open now, across processes.
        public var readersInUse: Int
        /// The id of the last committed write transaction.
        public var lastTransactionID: Int
    }

    /// The canonical path of the directory.
    public let path: String
    public let options: Options

    private let handle: OpaquePointer
    private let gate = MapGate()
    /// Serializes writers of this process; also held while closing.
    private let writer = NSLock()
    private let state: Mutex<State>
    /// Set by a commit that was not flushed, cleared by a flush (``hasUnflushedCommits``).
    private let unflushedCommits = Atomic<Bool>(false)
    /// Told the region of every write transaction that commits, while it has a handler.
    let writeWatch = LMDBWriteWatch()

    private struct State {
        var mapSizeBytes: Int
        var isClosed = false
    }

    /// Paths opened by this process. LMDB's locks are per process: a second handle on the same
    /// files would release the first one's locks when closed.
    private static let openPaths = Mutex(Set<String>())

    /// Whether this process has the environment at `path` (canonical) open.
    public static func isOpen(path: String) -> Bool {
        openPaths.withLock { $0.contains(path) }
    }

    /// The version of the linked LMDB library.
    public static var libraryVersion: String { LMDB.version }

    /// Opens (and, unless read-only, creates) the environment in `directory`.
    ///
    /// The data file is checked first (``LMDBDataFile/check(path:)``): a file shorter than the
    /// pages its meta page names, or whose roots are out of bounds, is refused before LMDB maps
    /// it. Clears stale reader slots left by dead processes (`mdb_reader_check`).
    /// - Throws: ``LMDBEnvironmentError/alreadyOpen(path:)`` when this process has the path
    ///   open; ``LMDBDataFile/Problem`` for a data file that fails the check;
    ///   ``LMDBError/noSuchFile`` when a read-only open finds no environment;
    ///   ``LMDBError/invalid`` or ``LMDBError/versionMismatch`` for a file LMDB cannot read.
    public static func open(directory: URL, options: Options = Options()) throws -> LMDBEnvironment {
        if !options.readOnly, !FileSystem.isDirectory(directory.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let path = directory.standardizedFileURL.resolvingSymlinksInPath().path
        let claimed = openPaths.withLock { $0.insert(path).inserted }
        guard claimed else { throw LMDBEnvironmentError.alreadyOpen(path: path) }
        do {
            return try LMDBEnvironment(path: path, options: options)
        } catch {
            _ = openPaths.withLock { $0.remove(path) }
            throw error
        }
    }

    private init(path: String, options: Options) throws {
        precondition(options.initialMapSizeBytes > 0, "initialMapSizeBytes must be positive")
        precondition(options.maxMapSizeBytes >= options.initialMapSizeBytes, "maxMapSizeBytes below initialMapSizeBytes")
        precondition(!options.withoutLockFile || options.readOnly, "only a read-only environment may go without its lock file")
        _ = try LMDBDataFile.check(path: path + "/data.mdb")
        var env: OpaquePointer?
        try LMDB.check(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw LMDBError.invalid }
        do {
            try LMDB.check(mdb_env_set_maxdbs(env, options.maxDatabases), "mdb_env_set_maxdbs")
            try LMDB.check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try LMDB.check(mdb_env_set_mapsize(env, options.initialMapSizeBytes), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if options.withoutLockFile { flags |= UInt32(MDB_NOLOCK) }
            if !options.syncOnCommit { flags |= UInt32(MDB_NOSYNC) }
            try LMDB.check(mdb_env_open(env, path, flags, 0o600), "mdb_env_open")
            if !options.withoutLockFile {
                var dead: Int32 = 0
                try LMDB.check(mdb_reader_check(env, &dead), "mdb_reader_check")
            }
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.path = path
        self.options = options
        // An existing file may already be larger than the initial size: LMDB adopts its size.
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        self.state = Mutex(State(mapSizeBytes: info.me_mapsize))
    }

    deinit {
        close()
    }

    /// Closes the environment, waiting for transactions in progress. Later calls throw
    /// ``LMDBError/closed``. Closing twice does nothing.
    public func close() {
        writer.withLock {
            gate.withExclusive {
                let wasOpen = state.withLock { state in
                    defer { state.isClosed = true }
                    return !state.isClosed
                }
                guard wasOpen else { return }
                mdb_env_close(handle)
                _ = Self.openPaths.withLock { $0.remove(path) }
            }
        }
    }

    /// Whether ``close()`` has run.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: Databases

    /// Opens the named database if the environment has one by that name.
    /// - Returns: `nil` when there is none (nothing is created).
    public func openExistingDatabase(_ name: String) throws -> LMDBDatabase? {
        do {
            return try openDatabase(name, creating: false)
        } catch LMDBEnvironmentError.noSuchDatabase {
            return nil
        }
    }

    /// Opens the named database, creating it unless the environment is read-only.
    /// - Throws: ``LMDBEnvironmentError/noSuchDatabase(name:)`` when a read-only environment
    ///   has no database of that name; ``LMDBError/incompatible`` when `name` is not a database.
    public func openDatabase(_ name: String) throws -> LMDBDatabase {
        try openDatabase(name, creating: !options.readOnly)
    }

    private func openDatabase(_ name: String, creating: Bool) throws -> LMDBDatabase {
        while true {
            do {
                return try openDatabaseOnce(name, creating: creating)
            } catch let error as LMDBError where error == .mapFull && creating {
                // Creating a database writes pages: a map started very small grows for it.
                try growMap()
            }
        }
    }

    private func openDatabaseOnce(_ name: String, creating: Bool) throws -> LMDBDatabase {
        try gate.withShared {
            try ensureOpen()
            var txn: OpaquePointer?
            let flags = options.readOnly ? UInt32(MDB_RDONLY) : 0
            try LMDB.check(mdb_txn_begin(handle, nil, flags, &txn), "mdb_txn_begin")
            var dbi = MDB_dbi()
            let create = creating ? UInt32(MDB_CREATE) : 0
            let found: Bool
            do {
                found = try LMDB.found(mdb_dbi_open(txn, name, create, &dbi), "mdb_dbi_open")
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            guard found else {
                mdb_txn_abort(txn)
                throw LMDBEnvironmentError.noSuchDatabase(name: name)
            }
            // Committing keeps the handle open for every later transaction.
            try LMDB.check(mdb_txn_commit(txn), "mdb_txn_commit")
            if !options.syncOnCommit && creating { unflushedCommits.store(true, ordering: .releasing) }
            return LMDBDatabase(handle: dbi, name: name)
        }
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction: one consistent snapshot of the environment, unaffected
    /// by writes committed while it runs. Any thread may read, many at once.
    public func read<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        while true {
            let outcome: R? = try gate.withShared {
                try ensureOpen()
                guard let txn = try begin(readOnly: true) else { return nil }
                defer { mdb_txn_abort(txn) }
                // Bound to a name first: passing the temporary straight to `body` crashes the
                // Swift 6.3 optimizer when it specializes this function (`-c release`).
                let transaction = LMDBTransaction(pointer: txn, isReadOnly: true, faultHook: options.faultHook, recorder: LMDBRegionRecorder.current)
                return try body(transaction)
            }
            if let outcome { return outcome }
            try adoptResizedMap()
        }
    }

    /// Runs `body` in the write transaction and commits it when `body` returns.
    ///
    /// Writes are serialized. When the map fills, the transaction is aborted, the map doubled
    /// (up to ``Options/maxMapSizeBytes``) and `body` run again from the start, so `body` must
    /// do nothing but transaction work. Past the maximum, ``LMDBError/mapFull`` is thrown and
    /// nothing of the transaction is written.
    /// - Throws: whatever `body` throws (the transaction is aborted), or the commit's error.
    public func write<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        try write(flushing: true, body)
    }

    /// Runs `body` in the write transaction as ``write(_:)`` does; with `flushing: false` its
    /// commit waits for one flush, of its pages, not for the second, of its meta page, even where
    /// ``Options/syncOnCommit`` flushes both for every other.
    ///
    /// ```swift
    /// try environment.write(flushing: false) { txn in try txn.put(events, key: key, value: record) }
    /// ```
    ///
    /// Such a commit survives the process ending; a system crash before the next flushing commit
    /// or ``sync()`` may undo it, and never damages the environment: its pages are on the disk
    /// before its meta page is written (LMDB's `MDB_NOMETASYNC`: "maintains database integrity,
    /// but a system crash may undo the last committed transaction"), whatever order the file
    /// system writes in. The next flush writes out the whole file, the meta page with it.
    /// ``hasUnflushedCommits`` says whether one is still waiting for it. LMDB's switch belongs to
    /// the whole environment, so it is turned on and off while no other transaction of this
    /// process can begin or commit: readers wait for this transaction as they wait for a map
    /// resize. Without ``Options/syncOnCommit`` every commit is unflushed and this is ``write(_:)``.
    /// - Warning: A thread holding a read transaction must not make such a commit: it would wait
    ///   for itself.
    /// - Throws: as ``write(_:)``; a fault hook is asked ``LMDBCall/commitWithoutFlush`` instead
    ///   of ``LMDBCall/commit``.
    public func write<R>(flushing: Bool, _ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        precondition(!options.readOnly, "write on a read-only environment")
        let withoutFlush = !flushing && options.syncOnCommit
        writer.lock()
        defer { writer.unlock() }
        func once() throws -> R? {
            try ensureOpen()
            guard let txn = try begin(readOnly: false) else { return nil }
            let recorder = writeWatch.isWatching ? LMDBRegionRecorder(.writes) : nil
            let result: R
            do {
                result = try body(LMDBTransaction(pointer: txn, isReadOnly: false, faultHook: options.faultHook, recorder: recorder))
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            try commit(txn, flushing: !withoutFlush)
            if let recorder { writeWatch.committed(recorder.region) }
            return result
        }
        while true {
            do {
                let outcome: R? = withoutFlush
                    ? try gate.withExclusive { try unflushed(once) }
                    : try gate.withShared(once)
                if let outcome { return outcome }
                try adoptResizedMap()
            } catch let error as LMDBError where error == .mapFull {
                try growMap()
            }
        }
    }

    /// Has every write transaction that commits from now on tell `handler` the region it wrote
    /// (`nil`: none, and no region is recorded). Set between two write transactions, so that a
    /// read begun after this returns sees every commit it is not told of.
    /// `handler` answers whether to go on (no: as if `nil` were set).
    public func watchWrites(_ handler: (@Sendable (LMDBRegion) -> Bool)?) {
        writer.lock()
        defer { writer.unlock() }
        writeWatch.setHandler(handler)
    }

    /// Whether a commit since the last flush was not flushed: every commit without
    /// ``Options/syncOnCommit``, those of ``write(flushing:_:)`` with it. ``sync()`` or the next
    /// flushing commit writes them out.
    public var hasUnflushedCommits: Bool { unflushedCommits.load(ordering: .acquiring) }

    /// Flushes committed data to disk: needed only when ``Options/syncOnCommit`` is off.
    public func sync() throws {
        try gate.withShared {
            try ensureOpen()
            // Cleared first: a commit that lands while the flush runs may miss it, and sets it again.
            let had = unflushedCommits.exchange(false, ordering: .acquiringAndReleasing)
            do {
                try LMDB.injected(options.faultHook, .sync)
                try LMDB.check(mdb_env_sync(handle, 1), "mdb_env_sync")
            } catch {
                if had { unflushedCommits.store(true, ordering: .releasing) }
                throw error
            }
        }
    }

    /// The environment's size and use.
    public func info() throws -> Info {
        try gate.withShared {
            try ensureOpen()
            var info = MDB_envinfo()
            var stat = MDB_stat()
            try LMDB.check(mdb_env_info(handle, &info), "mdb_env_info")
            try LMDB.check(mdb_env_stat(handle, &stat), "mdb_env_stat")
            let pageSize = Int(stat.ms_psize)
            return Info(
                mapSizeBytes: info.me_mapsize,
                usedBytes: (info.me_last_pgno + 1) * pageSize,
                pageSizeBytes: pageSize,
                readersInUse: Int(info.me_numreaders),
                lastTransactionID: info.me_last_txnid
            )
        }
    }

    /// The longest key a database of this environment takes, in bytes (`mdb_env_get_maxkeysize`:
    /// 511 in LMDB's default build). A longer key is `MDB_BAD_VALSIZE`, a misuse: every key the
    /// journal composes is bounded to fit.
    public var maxKeyBytes: Int {
        gate.withShared { Int(mdb_env_get_maxkeysize(handle)) }
    }

    /// The current map size.
    public var mapSizeBytes: Int { state.withLock { $0.mapSizeBytes } }

    /// How much of the file holds live data: the pages up to the last one written, less those
    /// on LMDB's free list (freed by earlier transactions and reused by later ones).
    public func liveBytes() throws -> Int {
        let info = try info()
        let freePages = try read { txn in try txn.freePageCount() }
        return max(0, info.usedBytes - freePages * info.pageSizeBytes)
    }

    // MARK: Internals

    private func ensureOpen() throws(LMDBError) {
        if state.withLock({ $0.isClosed }) { throw LMDBError.closed }
    }

    /// Begins a transaction; `nil` when another process grew the map and this one must adopt
    /// the new size first (`MDB_MAP_RESIZED`).
    private func begin(readOnly: Bool) throws(LMDBError) -> OpaquePointer? {
        try LMDB.injected(options.faultHook, .beginTransaction)
        var txn: OpaquePointer?
        let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
        if rc == MDB_MAP_RESIZED { return nil }
        try LMDB.check(rc, "mdb_txn_begin")
        return txn
    }

    /// Commits `txn`, flushed when the environment flushes commits and `flushing` says so.
    private func commit(_ txn: OpaquePointer, flushing: Bool) throws(LMDBError) {
        let flushes = flushing && options.syncOnCommit
        do {
            try LMDB.injected(options.faultHook, options.syncOnCommit && !flushing ? .commitWithoutFlush : .commit)
        } catch {
            // A failed commit frees its transaction; a forced failure must leave the same state.
            mdb_txn_abort(txn)
            throw error
        }
        try LMDB.check(mdb_txn_commit(txn), "mdb_txn_commit")
        guard flushes else {
            unflushedCommits.store(true, ordering: .releasing)
            return
        }
        #if canImport(Darwin)
        // LMDB flushes with fsync on Apple platforms, which leaves data in the drive's cache;
        // only F_FULLFSYNC makes a commit survive power loss there.
        var fd: Int32 = -1
        if mdb_env_get_fd(handle, &fd) == MDB_SUCCESS, fcntl(fd, F_FULLFSYNC) == -1 {
            throw LMDBError(rawValue: errno)
        }
        #endif
        // The flush wrote out the whole file: every unflushed commit before this one with it.
        if unflushedCommits.load(ordering: .relaxed) { unflushedCommits.store(false, ordering: .releasing) }
    }

    /// Runs `body` with LMDB's `MDB_NOMETASYNC` on. The flag is the environment's, read by every
    /// commit: the caller holds the gate exclusively, so no other transaction begins or commits
    /// while it is on.
    private func unflushed<R>(_ body: () throws -> R) throws -> R {
        try ensureOpen()
        try LMDB.check(mdb_env_set_flags(handle, UInt32(MDB_NOMETASYNC), 1), "mdb_env_set_flags")
        defer {
            // Clearing a flag LMDB lets change cannot fail.
            _ = mdb_env_set_flags(handle, UInt32(MDB_NOMETASYNC), 0)
            assert(!isWithoutMetaSync, "MDB_NOMETASYNC left on after an unflushed commit")
        }
        return try body()
    }

    /// Whether LMDB's `MDB_NOMETASYNC` is on.
    private var isWithoutMetaSync: Bool {
        var flags: UInt32 = 0
        mdb_env_get_flags(handle, &flags)
        return flags & UInt32(MDB_NOMETASYNC) != 0
    }

    /// Doubles the map, up to the maximum; past it rethrows ``LMDBError/mapFull``.
    private func growMap() throws {
        let current = state.withLock { $0.mapSizeBytes }
        guard current < options.maxMapSizeBytes else { throw LMDBError.mapFull }
        let next = min(current * 2, options.maxMapSizeBytes)
        try gate.withExclusive {
            try ensureOpen()
            try LMDB.check(mdb_env_set_mapsize(handle, next), "mdb_env_set_mapsize")
            state.withLock { $0.mapSizeBytes = next }
        }
    }

    /// Another process grew the map: take its size (`mdb_env_set_mapsize(0)`).
    private func adoptResizedMap() throws {
        try gate.withExclusive {
            try ensureOpen()
            try LMDB.check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize")
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            state.withLock { $0.mapSizeBytes = info.me_mapsize }
        }
    }
}

/// Errors of the environment's own rules, as opposed to LMDB's return codes.
public enum LMDBEnvironmentError: Error, Equatable, Sendable, CustomStringConvertible {
    /// This process already has the environment at `path` open.
    case alreadyOpen(path: String)
    /// A read-only environment has no database of that name.
    case noSuchDatabase(name: String)

    public var description: String {
        switch self {
        case .alreadyOpen(let path):
            "the LMDB environment at \(path) is already open in this process; open it once and share it"
        case .noSuchDatabase(let name):
            "the environment has no database named '\(name)'"
        }
    }
}
