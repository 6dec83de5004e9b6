import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage

/// The journal on disk: the append-only events and their projections, in one LMDB environment.
///
/// Appends fold each event before writing it, and write the event and everything it changes in
/// one transaction: they land together or not at all. Opening costs nothing proportional to the
/// journal's length, unless the projections were written by another layout and are rebuilt.
final class JournalStore: Sendable {
    struct Options: Sendable {
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
    }

    /// One event to append, before the journal gives it a seq and a moment.
    struct Draft: Sendable {
        var operationID: OperationID?
        var body: JournalEventBody
    }

    let environment: LMDBEnvironment
    let schema: JournalSchema
    let options: Options
    /// Whether the stored projections match this engine's layout (a read-only journal with
    /// older projections is read by folding the events instead).
    let projectionsAreCurrent: Bool

    // MARK: Opening

    /// Opens the journal in `directory`, creating it unless read-only.
    ///
    /// - Throws: ``OutboxError/alreadyOpen(path:)``, ``OutboxError/notAJournal(path:reason:)``,
    ///   ``OutboxError/newerFormat(found:supported:)``, ``OutboxError/wrongAccount(journal:configured:)``,
    ///   ``OutboxError/journalCorrupt(seq:reason:)`` when a rebuild meets a damaged record.
    static func open(directory: URL, options: Options) throws(OutboxError) -> JournalStore {
        let path = directory.path
        if options.readOnly {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .notAJournal(path: path, reason: "nothing exists at this path")
            }
            guard isDirectory.boolValue else {
                throw .notAJournal(path: path, reason: "it is a file; give the journal's directory (holding data.mdb)")
            }
            guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
                throw .notAJournal(path: path, reason: "the directory holds no data.mdb")
            }
        }
        let environment: LMDBEnvironment
        do {
            environment = try LMDBEnvironment.open(
                directory: directory,
                options: LMDBEnvironment.Options(
                    readOnly: options.readOnly,
                    syncOnCommit: options.syncOnCommit,
                    initialMapSizeBytes: min(options.initialMapSizeBytes, options.maxMapSizeBytes),
                    maxMapSizeBytes: options.maxMapSizeBytes,
                    faultHook: options.faultHook
                )
            )
        } catch let error as LMDBEnvironmentError {
            if case .alreadyOpen(let path) = error { throw .alreadyOpen(path: path) }
            throw .notAJournal(path: path, reason: "\(error)")
        } catch let error as LMDBError where error == .invalid || error == .versionMismatch || error == .noSuchFile {
            throw .notAJournal(path: path, reason: "LMDB cannot read it: \(error)")
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes)
        }
        do {
            return try JournalStore(environment: environment, options: options)
        } catch {
            environment.close()
            throw error
        }
    }

    private init(environment: LMDBEnvironment, options: Options) throws(OutboxError) {
        self.environment = environment
        self.options = options
        let path = environment.path
        do {
            self.schema = try JournalSchema(environment: environment)
        } catch LMDBEnvironmentError.noSuchDatabase(let name) {
            throw .notAJournal(path: path, reason: "an LMDB environment without the journal's '\(name)' database")
        } catch let error as LMDBError where error == .incompatible {
            throw .notAJournal(path: path, reason: "an LMDB environment laid out differently from a journal")
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes)
        }
        let storedProjectionVersion: UInt32? = try Self.run(options) { [schema] in
            if options.readOnly {
                return try environment.read { txn in try Self.checkMeta(schema: schema, path: path, options: options, in: txn) }
            }
            return try environment.write { txn in try Self.checkMeta(schema: schema, path: path, options: options, in: txn) }
        }
        var current = storedProjectionVersion == JournalSchema.projectionVersion
        if !current && !options.readOnly {
            try Self.rebuildProjections(environment: environment, schema: schema, options: options)
            current = true
        }
        self.projectionsAreCurrent = current
        try adoptKey()
    }

    /// Checks the configured key against the journal's, and seals a plaintext journal an engine
    /// opens with a key.
    private func adoptKey() throws(OutboxError) {
        let schema = self.schema
        let stored = try read { txn in try txn.get(schema.meta, key: JournalSchema.MetaKey.keyCheck) }
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
    }

    /// Checks (and for a new journal, writes) the format version and account.
    /// - Returns: the stored projection version.
    private static func checkMeta(
        schema: JournalSchema,
        path: String,
        options: Options,
        in txn: borrowing LMDBTransaction
    ) throws -> UInt32? {
        guard let format = try txn.get(schema.meta, key: JournalSchema.MetaKey.formatVersion) else {
            guard try txn.count(schema.events) == 0, !txn.isReadOnly else {
                throw OutboxError.notAJournal(path: path, reason: "it has no format version")
            }
            try txn.put(schema.meta, key: JournalSchema.MetaKey.formatVersion, value: UInt32(RecordCodec.formatVersion).bigEndianBytes)
            try txn.put(schema.meta, key: JournalSchema.MetaKey.projectionVersion, value: JournalSchema.projectionVersion.bigEndianBytes)
            if let account = options.account {
                try txn.put(schema.meta, key: JournalSchema.MetaKey.account, value: Array(account.utf8))
            }
            return JournalSchema.projectionVersion
        }
        guard format.count == 4 else { throw OutboxError.notAJournal(path: path, reason: "its format version is unreadable") }
        let version = Int(format.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard version <= RecordCodec.formatVersion else {
            throw OutboxError.newerFormat(found: version, supported: RecordCodec.formatVersion)
        }
        if let configured = options.account,
            let stored = try txn.get(schema.meta, key: JournalSchema.MetaKey.account),
            String(decoding: stored, as: UTF8.self) != configured
        {
            throw OutboxError.wrongAccount(journal: String(decoding: stored, as: UTF8.self), configured: configured)
        }
        let projection = try txn.get(schema.meta, key: JournalSchema.MetaKey.projectionVersion)
        return projection.flatMap { $0.count == 4 ? $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : nil }
    }

    func close() {
        environment.close()
    }

    // MARK: Appending

    /// Appends units of events in one write transaction: the group commit.
    ///
    /// Each unit is folded first and written only if every one of its events is legal, so a unit
    /// lands whole or not at all; an illegal unit fails alone and the others still commit.
    /// - Returns: for each unit, its events as committed or the reason it was refused.
    /// - Throws: when the transaction itself fails (the map or disk is full, an I/O error):
    ///   then nothing of any unit was written.
    func append(_ units: [[Draft]], at now: Date) throws(OutboxError) -> [Result<[JournalEvent], OutboxError>] {
        precondition(!options.readOnly, "append on a read-only journal")
        return try Self.run(options) { [schema] in
            try environment.write { txn in
                var results: [Result<[JournalEvent], OutboxError>] = []
                results.reserveCapacity(units.count)
                var lastSeq = try schema.lastSeq(in: txn)
                // Every unit's counter changes, written once when the units are all in.
                var counterDeltas: [String: Int64] = [:]
                for unit in units {
                    var events: [JournalEvent] = []
                    // The state before and after each operation event, as the check folded it.
                    var changes: [(before: OperationState?, after: OperationState)?] = []
                    do {
                        var seq = lastSeq
                        var folded: [OperationID: OperationState] = [:]
                        for draft in unit {
                            seq = seq.next
                            let event = JournalEvent(seq: seq, operationID: draft.operationID, recordedAt: now, body: draft.body)
                            if let id = draft.operationID {
                                let before = try folded[id] ?? schema.state(id, in: txn)
                                let after = try Fold.apply(event, to: before)
                                folded[id] = after
                                changes.append((before, after))
                            } else {
                                changes.append(nil)
                            }
                            events.append(event)
                        }
                    } catch let error as OutboxError {
                        results.append(.failure(error))
                        continue
                    }
                    for (event, change) in zip(events, changes) {
                        let record = RecordCodec.encode(event)
                        assert((try? schema.decode(record, seq: event.seq)) == event, "record does not round-trip")
                        try txn.put(schema.events, key: event.seq.key, value: record, flags: .append)
                        if let change {
                            try Projection.apply(event, recordSize: record.count, changes: [change], engine: nil,
                                                 counterDeltas: &counterDeltas, schema: schema, in: txn)
                        } else {
                            try schema.projectEngineEvent(event, recordSize: record.count, counterDeltas: &counterDeltas, in: txn)
                        }
                    }
                    lastSeq = events.last?.seq ?? lastSeq
                    results.append(.success(events))
                }
                try Projection.writeCounters(counterDeltas, schema: schema, in: txn)
                return results
            }
        }
    }

    // MARK: Reading

    /// Runs `body` in a read transaction: one consistent snapshot.
    func read<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws(OutboxError) -> R {
        try Self.run(options) { try environment.read(body) }
    }

    /// Runs storage work, turning its errors into ``OutboxError``.
    static func run<R>(_ options: Options, _ body: () throws -> R) throws(OutboxError) -> R {
        do {
            return try body()
        } catch {
            throw OutboxError(storage: error, limitBytes: options.limitBytes)
        }
    }
}

extension JournalStore.Options {
    /// The size a full journal reports: the budget when there is one.
    var limitBytes: Int { budgetBytes ?? maxMapSizeBytes }
}

extension OutboxError {
    /// The engine's error for a failure of the storage layer.
    init(storage error: any Error, limitBytes: Int) {
        switch error {
        case let error as OutboxError:
            self = error
        case let error as LMDBError where error.isOutOfSpace:
            self = .storageFull(limitBytes: limitBytes)
        case let error as LMDBError where error == .closed:
            self = .closed
        case let error as LMDBError:
            self = .storage(code: error.rawValue, message: error.description)
        case let error as LMDBEnvironmentError:
            if case .alreadyOpen(let path) = error {
                self = .alreadyOpen(path: path)
            } else {
                self = .storage(code: 0, message: error.description)
            }
        default:
            self = .storage(code: 0, message: "\(error)")
        }
    }
}
