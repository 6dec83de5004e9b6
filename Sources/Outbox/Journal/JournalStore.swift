// Kept in one file: the store's opening and the state it shares; appending, rebuilding and
// sealing are in files of their own.

package import Foundation
package import OutboxCore
package import OutboxCrypto
package import OutboxStorage
package import Synchronization

/// The journal on disk: the append-only events and their projections, in one LMDB environment.
///
/// Appends fold each event before writing it, and write the event and everything it changes in
/// one transaction: they land together or not at all. Opening costs nothing proportional to the
/// journal's length, unless the projections were written by another layout and are rebuilt.
package final class JournalStore: Sendable {
    package struct Options: Sendable {
        var readOnly = false
        var syncOnCommit = true
        var initialMapSizeBytes = 4 << 20
        var maxMapSizeBytes = 1 << 30
        /// The budget of live data the engine keeps to (`maxJournalBytes`); the map leaves room
        /// beyond it for LMDB's free pages. Defaults to the map's maximum.
        var budgetBytes: Int?
        var faultHook: LMDBFaultHook?
        /// The key of a journal encrypted at rest. An engine given one for a plaintext journal
        /// seals it at open; a reader without one sees sealed fields empty.
        var sealingKey: SealingKey?
        /// The account whose journal this is; a journal of another account is refused.
        /// `nil` for readers, which accept any.
        var account: String?
        /// The journal's directory, set by ``JournalStore/open(directory:options:)``: a failed
        /// write asks its file system whether it is out of room.
        var directoryPath: String?
        /// How a rebuild at open splits its work (tests shrink it).
        var rebuildTuning = RebuildTuning()
        /// The installation the engine that opens the journal runs on (`.some(nil)` when the app
        /// names none), which its opening records; `nil` for readers
        /// (``JournalSchema/engineStateAsJudged(in:)``).
        var runningOn: String?? = nil

        var environmentOptions: LMDBEnvironment.Options {
            LMDBEnvironment.Options(
                readOnly: readOnly,
                syncOnCommit: syncOnCommit,
                initialMapSizeBytes: min(initialMapSizeBytes, maxMapSizeBytes),
                maxMapSizeBytes: maxMapSizeBytes,
                faultHook: faultHook
            )
        }
    }

    /// A reader's options: read-only, with the journal's key when it has one.
    package static func readerOptions(sealingKey: SealingKey?) -> Options {
        Options(readOnly: true, sealingKey: sealingKey)
    }

    /// One event to append, before the journal gives it a seq and a moment.
    package struct Draft: Sendable {
        var operationID: OperationID?
        var body: JournalEventBody
        /// Record values the event brings to the record store (a server base, a local record),
        /// written in the same transaction once the unit lands; the event keeps their trail.
        var storeWrites: [RecordStoreWrite] = []
        /// A business and type whose server base the event drops (`recordBaseDropped`).
        var dropsBase: (business: String, type: String)? = nil
        /// Server bases a resnapshot stages (or, at its swap, deletes) in the generation its
        /// business's feed row does not show yet; written after ``storeWrites``.
        var stagedWrites: [RecordStoreWrite] = []
        /// A step's change of its feed row (a page's move, a resnapshot's step): written last,
        /// and only when the stored row is the one the step started from.
        var feedWrite: FeedRowWrite? = nil
    }

    /// A draft with its record encoded but for the seq and moment (``RecordCodec/prepare(operationID:body:)``):
    /// prepared on the producer's task, so the writer only finishes it.
    package struct PreparedDraft: Sendable {
        var draft: Draft
        var record: RecordCodec.PreparedRecord

        init(_ draft: Draft) {
            self.draft = draft
            record = RecordCodec.prepare(operationID: draft.operationID, body: draft.body)
        }
    }

    package let environment: LMDBEnvironment
    package let schema: JournalSchema
    package let options: Options
    /// The process lock a writer holds while the journal is open; `nil` for readers.
    package let writerLock: ProcessLock?
    /// Whether a reader opened the journal without LMDB's lock file (read-only media).
    package var isWithoutLockFile: Bool { environment.options.withoutLockFile }
    /// Whether the stored projections match this engine's layout (a read-only journal with
    /// older projections is read by folding the events instead).
    package let projectionsAreCurrent: Bool
    /// The counters as the last append committed them: the next append starts from them instead
    /// of decoding the stored value. Every other write that changes them clears it
    /// (``forgetCounters()``); `nil` until an append commits.
    package let committedCounters = Mutex<JournalCounters?>(nil)

    // MARK: Opening

    /// Opens the journal in `directory`, creating it unless read-only.
    ///
    /// A writer first takes the journal's process lock (`writer.lock`): one process writes a
    /// journal at a time. A new journal is created whole in a staging directory and renamed into
    /// place, so a journal exists completely or not at all; what a creation killed midway left
    /// is cleared here. The data file is checked against its meta pages before LMDB maps it.
    ///
    /// - Throws: ``OutboxError/alreadyOpen(path:)``, ``OutboxError/openInAnotherProcess(path:processID:)``,
    ///   ``OutboxError/notAJournal(path:reason:)``, ``OutboxError/journalDamaged(path:reason:)``,
    ///   ``OutboxError/newerFormat(found:supported:)``, ``OutboxError/wrongAccount(journal:configured:)``,
    ///   ``OutboxError/permissionDenied(path:)``, ``OutboxError/storageFull(limitBytes:errno:)``,
    ///   ``OutboxError/journalCorrupt(seq:reason:)`` when a rebuild meets a damaged record.
    package static func open(directory: URL, options: Options) throws(OutboxError) -> JournalStore {
        var phases = OpenPhases()
        return try open(directory: directory, options: options, phases: &phases)
    }

    /// Opens the journal as ``open(directory:options:)`` does, timing each phase into `phases`.
    package static func open(directory: URL, options: Options, phases: inout OpenPhases) throws(OutboxError) -> JournalStore {
        var options = options
        options.directoryPath = directory.path
        return options.readOnly ? try openForReading(directory, options, &phases) : try openForWriting(directory, options, &phases)
    }

    /// The names a journal's directory holds besides LMDB's own files.
    package enum FileName {
        static let data = "data.mdb"
        static let lock = "lock.mdb"
        /// The engine's process lock: held by the one process writing the journal.
        static let writerLock = "writer.lock"
        /// Where a new journal is built before it is renamed into place.
        static let staging = ".creating"
    }

    private static func openForReading(_ directory: URL, _ options: Options, _ phases: inout OpenPhases) throws(OutboxError) -> JournalStore {
        let path = directory.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .notAJournal(path: path, reason: "nothing exists at this path")
        }
        // A directory this user may not enter looks empty to `fileExists`: say so instead.
        if isDirectory.boolValue, access(path, R_OK | X_OK) != 0, errno == EACCES || errno == EPERM {
            throw .permissionDenied(path: path)
        }
        guard isDirectory.boolValue else {
            throw .notAJournal(path: path, reason: "it is a file; give the journal's directory (holding data.mdb)")
        }
        let dataPath = directory.appendingPathComponent(FileName.data).path
        guard FileManager.default.fileExists(atPath: dataPath) else {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent(FileName.staging).path) {
                throw .notAJournal(path: path, reason: "the journal's creation was interrupted before it held anything; the app creates it anew when it next opens it")
            }
            throw .notAJournal(path: path, reason: "the directory holds no data.mdb")
        }
        let environmentOptions = options.environmentOptions
        let environment: LMDBEnvironment = try phases.time(\.mapping) { () throws(OutboxError) in
            do throws(OutboxError) {
                return try openEnvironment(directory, environmentOptions, options)
            } catch let error where error.isAccessProblem {
                // Read-only media, or a lock file this user may not open: read without LMDB's lock.
                var withoutLock = environmentOptions
                withoutLock.withoutLockFile = true
                return try openEnvironment(directory, withoutLock, options)
            }
        }
        do {
            return try JournalStore(environment: environment, options: options, writerLock: nil, phases: &phases)
        } catch {
            environment.close()
            throw error
        }
    }

    private static func openForWriting(_ directory: URL, _ options: Options, _ phases: inout OpenPhases) throws(OutboxError) -> JournalStore {
        let lock = try phases.time(\.preparing) { () throws(OutboxError) in try prepareForWriting(directory, options) }
        let environment = try phases.time(\.mapping) { () throws(OutboxError) in try openEnvironment(directory, options.environmentOptions, options) }
        do {
            return try JournalStore(environment: environment, options: options, writerLock: lock, phases: &phases)
        } catch {
            environment.close()
            throw error
        }
    }

    /// Takes the process lock of the journal in `directory`, creating the journal when it has none.
    ///
    /// The paths are joined as strings (``path(_:in:)``) and the directory is created only when
    /// missing: a `URL`'s parse and the file manager's look-ups were most of an open's time here.
    private static func prepareForWriting(_ directory: URL, _ options: Options) throws(OutboxError) -> ProcessLock {
        let path = directory.path
        if !FileSystem.isDirectory(path) {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw OutboxError(fileSystem: error, path: path, options: options)
            }
        }
        let canonical = directory.standardizedFileURL.resolvingSymlinksInPath().path
        if LMDBEnvironment.isOpen(path: canonical) { throw .alreadyOpen(path: canonical) }
        let lock: ProcessLock
        // The canonical path: the lock is known in this process by it, however the directory is named.
        let lockPath = Self.path(FileName.writerLock, in: canonical)
        do {
            lock = try ProcessLock.acquire(path: lockPath)
        } catch {
            switch error {
            case .held(let holder) where holder == ProcessLock.currentProcessID:
                throw .alreadyOpen(path: canonical)
            case .held(let holder):
                throw .openInAnotherProcess(path: path, processID: holder)
            case .unavailable(let code):
                throw OutboxError(storage: LMDBError(rawValue: code), limitBytes: options.limitBytes, path: lockPath)
            }
        }
        if try !journalExists(in: path, options: options) {
            try create(in: directory, options: options)
        }
        return lock
    }

    /// `name` in the directory at `directory`.
    package static func path(_ name: String, in directory: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// Whether the directory at `directory` holds a journal to open; clears what an interrupted
    /// creation left.
    ///
    /// A data file of zero bytes is what an engine killed in its very first open leaves behind
    /// (before journals were created in a staging directory): it holds nothing, and goes.
    private static func journalExists(in directory: String, options: Options) throws(OutboxError) -> Bool {
        let data = path(FileName.data, in: directory)
        try remove(path(FileName.staging, in: directory), options: options)
        guard let entry = FileSystem.entry(data) else { return false }
        guard entry.sizeBytes == 0, entry.isRegularFile else { return true }
        try remove(data, options: options)
        try remove(path(FileName.lock, in: directory), options: options)
        return false
    }

    /// Builds a new journal in the staging directory, then renames its data file into place:
    /// the rename is the moment the journal exists, whole.
    private static func create(in directory: URL, options: Options) throws(OutboxError) {
        let staging = directory.appendingPathComponent(FileName.staging)
        var stagingOptions = options
        stagingOptions.directoryPath = staging.path
        do throws(OutboxError) {
            let environment = try openEnvironment(staging, stagingOptions.environmentOptions, stagingOptions)
            do {
                var phases = OpenPhases()
                let store = try JournalStore(environment: environment, options: stagingOptions, writerLock: nil, phases: &phases)
                store.close()
            } catch {
                environment.close()
                throw error
            }
            try run(options) {
                try FileSystem.rename(
                    staging.appendingPathComponent(FileName.data).path,
                    to: directory.appendingPathComponent(FileName.data).path
                )
                try FileSystem.syncDirectory(directory.path)
            }
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
        try remove(staging.path, options: options)
    }

    private static func remove(_ path: String, options: Options) throws(OutboxError) {
        guard FileManager.default.fileExists(atPath: path) else { return }
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw OutboxError(fileSystem: error, path: path, options: options)
        }
    }

    private static func openEnvironment(
        _ directory: URL, _ environmentOptions: LMDBEnvironment.Options, _ options: Options
    ) throws(OutboxError) -> LMDBEnvironment {
        let path = directory.path
        do {
            return try LMDBEnvironment.open(directory: directory, options: environmentOptions)
        } catch let error as LMDBEnvironmentError {
            if case .alreadyOpen(let path) = error { throw .alreadyOpen(path: path) }
            throw .notAJournal(path: path, reason: "\(error)")
        } catch let problem as LMDBDataFile.Problem {
            switch problem.kind {
            case .truncated, .damaged: throw .journalDamaged(path: path, reason: problem.reason)
            case .notLMDB, .unsupportedVersion: throw .notAJournal(path: path, reason: "LMDB cannot read it: \(problem.reason)")
            case .notRegularFile, .empty: throw .notAJournal(path: path, reason: problem.reason)
            case .inaccessible: throw .permissionDenied(path: directory.appendingPathComponent(FileName.data).path)
            }
        } catch let error as LMDBError where error == .invalid || error == .versionMismatch || error == .noSuchFile {
            throw .notAJournal(path: path, reason: "LMDB cannot read it: \(error)")
        } catch let error as LMDBError where error == .accessDenied || error == .readOnlyFileSystem {
            throw .permissionDenied(path: inaccessiblePath(in: directory, writing: !environmentOptions.readOnly))
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes, path: path)
        }
    }

    /// The first of the journal's directory and files this process may not use as it needs.
    private static func inaccessiblePath(in directory: URL, writing: Bool) -> String {
        let mode = writing ? R_OK | W_OK : R_OK
        for name in [nil, FileName.data, FileName.lock] {
            let url = name.map { directory.appendingPathComponent($0) } ?? directory
            if FileManager.default.fileExists(atPath: url.path), access(url.path, name == nil ? mode | X_OK : mode) != 0 {
                return url.path
            }
        }
        return directory.path
    }

    private init(environment: LMDBEnvironment, options: Options, writerLock: ProcessLock?, phases: inout OpenPhases) throws(OutboxError) {
        self.environment = environment
        self.options = options
        self.writerLock = writerLock
        let path = environment.path
        let started = OpenPhases.now()
        do {
            self.schema = try JournalSchema(environment: environment, runningOn: options.runningOn)
        } catch LMDBEnvironmentError.noSuchDatabase(let name) {
            throw .notAJournal(path: path, reason: "an LMDB environment without the journal's '\(name)' database")
        } catch let error as LMDBError where error == .incompatible {
            throw .notAJournal(path: path, reason: "an LMDB environment laid out differently from a journal")
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes)
        }
        let databasesOpened = OpenPhases.now()
        phases.databases += databasesOpened - started
        let stored: MetaCheck = try Self.run(options) { [schema] in
            // Read first: a journal that exists needs nothing written to open, even on a full disk.
            let stored = try environment.read { txn in try Self.checkMeta(schema: schema, path: path, options: options, in: txn) }
            guard case .new = stored else { return stored }
            return try environment.write { txn in try Self.checkMeta(schema: schema, path: path, options: options, in: txn) }
        }
        var current = stored.projection == JournalSchema.projectionVersion
        if !current && !options.readOnly {
            // Before anything else is written: a migration that fails leaves the journal as an
            // engine of its own format and layout reads it.
            try Self.rebuildProjections(environment: environment, schema: schema, options: options, tuning: options.rebuildTuning)
            current = true
        }
        if case .found(_, let format) = stored, format < RecordCodec.formatVersion, !options.readOnly {
            // This engine writes records of its own format from now on: an older engine must
            // refuse the journal before it reads one (each record names its version too).
            try Self.run(options) { [schema] in
                try environment.write { txn in
                    try txn.put(schema.meta, JournalSchema.MetaKey.formatVersion, JournalCodec.Version.bytes(UInt32(RecordCodec.formatVersion)))
                }
            }
        }
        self.projectionsAreCurrent = current
        try adoptKey()
        phases.meta += OpenPhases.now() - databasesOpened
    }

    /// Checks the configured key against the journal's, and seals a plaintext journal an engine
    /// opens with a key.
    private func adoptKey() throws(OutboxError) {
        let schema = self.schema
        let stored = try read { txn in try txn.get(schema.meta, JournalSchema.MetaKey.keyCheck) }
        let sealing = options.sealingKey.map(JournalSealing.init(key:))
        switch (stored, sealing) {
        case (nil, nil):
            break
        case (.some, nil):
            // A reader may go on without the key: sealed fields stay sealed.
            if !options.readOnly { throw .encryptionKeyRequired }
        case (let check?, let sealing?):
            guard sealing.opens(keyCheck: check) else { throw .wrongEncryptionKey }
            schema.sealing.sealing = sealing
        case (nil, let sealing?):
            guard !options.readOnly else { break }
            try reseal(from: nil, to: sealing)
        }
        try adoptAttachmentKey()
    }

    /// What `meta` says of a journal being opened.
    private enum MetaCheck {
        /// A journal: its stored projection version and format version.
        case found(projection: UInt32?, format: Int)
        /// Nothing written yet: a writer writes the format version and account.
        case new

        var projection: UInt32? {
            switch self {
            case .found(let projection, _): projection
            case .new: nil
            }
        }
    }

    /// Checks (and, in a write transaction for a new journal, writes) the format version and account.
    private static func checkMeta(
        schema: JournalSchema,
        path: String,
        options: Options,
        in txn: borrowing LMDBTransaction
    ) throws -> MetaCheck {
        guard let format = try txn.get(schema.meta, JournalSchema.MetaKey.formatVersion) else {
            guard try txn.count(schema.events.database) == 0, !options.readOnly else {
                throw OutboxError.notAJournal(path: path, reason: "it has no format version")
            }
            if txn.isReadOnly { return .new }
            try txn.put(schema.meta, JournalSchema.MetaKey.formatVersion, JournalCodec.Version.bytes(UInt32(RecordCodec.formatVersion)))
            try txn.put(schema.meta, JournalSchema.MetaKey.projectionVersion, JournalCodec.Version.bytes(JournalSchema.projectionVersion))
            if let account = options.account {
                try txn.put(schema.meta, JournalSchema.MetaKey.account, Array(account.utf8))
            }
            return .found(projection: JournalSchema.projectionVersion, format: RecordCodec.formatVersion)
        }
        guard let version = (try? format.withUnsafeBytes(JournalCodec.Version.decode)).map(Int.init) else {
            throw OutboxError.notAJournal(path: path, reason: "its format version is unreadable")
        }
        guard version <= RecordCodec.formatVersion else {
            throw OutboxError.newerFormat(found: version, supported: RecordCodec.formatVersion)
        }
        if let configured = options.account,
            let stored = try txn.get(schema.meta, JournalSchema.MetaKey.account),
            !stored.elementsEqual(configured.utf8)
        {
            // Byte for byte: an account named in NFC is not the one named in NFD.
            throw OutboxError.wrongAccount(journal: String(decoding: stored, as: UTF8.self), configured: configured)
        }
        let projection = try txn.get(schema.meta, JournalSchema.MetaKey.projectionVersion)
        return .found(projection: projection.flatMap { try? $0.withUnsafeBytes(JournalCodec.Version.decode) }, format: version)
    }

    /// Drops the counters an append remembered: a compaction, a key rotation or a rebuild
    /// changed the stored ones.
    package func forgetCounters() {
        committedCounters.withLock { $0 = nil }
    }

    package func close() {
        environment.close()
        writerLock?.release()
    }

    // MARK: Reading

    /// `attemptAbandoned` drafts for every syncing row: at open, attempts the last process started
    /// and never saw end.
    package func interruptedAttempts() throws(OutboxError) -> [JournalStore.Draft] {
        let schema = self.schema
        return try read { txn in try schema.interruptedAttempts(in: txn) }
    }

    /// Runs `body` in a read transaction: one consistent snapshot.
    package func read<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws(OutboxError) -> R {
        try Self.run(options) { try environment.read(body) }
    }

    /// Runs storage work, turning its errors into ``OutboxError``.
    package static func run<R>(_ options: Options, _ body: () throws -> R) throws(OutboxError) -> R {
        do {
            return try body()
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes, path: options.directoryPath)
        }
    }
}

extension JournalStore.Options {
    /// The size a full journal reports: the budget when there is one.
    package var limitBytes: Int { budgetBytes ?? maxMapSizeBytes }
}
