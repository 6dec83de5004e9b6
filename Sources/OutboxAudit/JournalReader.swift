public import Outbox
public import Foundation
public import OutboxCore
package import OutboxStorage

/// A read-only view of a journal, for other processes and tools (a widget, `journal-inspect`).
///
/// ```swift
/// let reader = try JournalReader(directory: journalURL)
/// let events = try reader.history(id)
/// let page = try reader.events(matching: EventQuery(kinds: [.attemptFinished], limit: 100))
/// let report = try reader.verify()
/// ```
///
/// It never writes and never blocks the engine writing the same journal: LMDB opens the data file
/// read-only, and each read sees one consistent snapshot. Open it in a process that does not also
/// have the journal open as an ``Outbox`` (that one answers the same reads).
///
/// A journal whose stored projections were written by another layout is folded from its events
/// at open instead (every read answers the same). A damaged record is reported by the reads that
/// meet it, as a ``Outbox.DamagedRecord``, and they carry on with the rest.
public final class JournalReader: Sendable {
    package let store: JournalStore
    /// Every read: from the stored projections, or from the events folded at open.
    let queries: JournalQueries
    /// The projections folded from the events, when the stored ones are of another layout.
    private let folded: FoldedJournal?
    /// Whether a queued row's scheduled moment is still ahead is judged by it.
    private let clock: any OutboxClock

    /// Opens the journal in `directory` read-only.
    /// - Throws: ``OutboxError/notAJournal(path:reason:)`` for a missing path or something that
    ///   is not a journal; ``OutboxError/newerFormat(found:supported:)``;
    ///   ``OutboxError/alreadyOpen(path:)`` when this process has the journal open.
    /// - Parameter encryptionKey: the key of a journal encrypted at rest; without it, payloads,
    ///   entity labels and summaries read as empty, and everything else as usual.
    /// - Throws: also ``OutboxError/wrongEncryptionKey`` for a key that does not open it.
    /// - Parameter clock: what "now" is for the reads that judge a moment (whether a queued row
    ///   is still scheduled): a reader has no engine, so by default the device's.
    public init(directory: URL, encryptionKey: SealingKey? = nil, clock: any OutboxClock = SystemClock()) throws {
        self.clock = clock
        let store = try JournalStore.open(
            directory: directory, options: JournalStore.readerOptions(sealingKey: encryptionKey))
        self.store = store
        if store.projectionsAreCurrent {
            queries = store.queries
            folded = nil
        } else {
            do {
                (queries, folded) = try store.foldedQueries()
            } catch {
                store.close()
                throw error
            }
        }
    }

    deinit {
        store.close()
    }

    /// The journal's directory.
    public var path: String { store.environment.path }

    /// Whether the journal is read without LMDB's lock file: its directory or `lock.mdb` could
    /// not be written (read-only media, a copy this user may not write). Each read still sees one
    /// snapshot, but a writer working on the journal meanwhile does not know of this reader and
    /// may reuse the pages it reads: its changes may not show consistently.
    public var isReadWithoutLockFile: Bool { store.isWithoutLockFile }

    /// Whether the stored projections were written by this engine's layout. When not, the
    /// engine rebuilds them at its next open, and this reader folded the events at open instead.
    public var projectionsAreCurrent: Bool { store.projectionsAreCurrent }

    /// Whether the journal is encrypted at rest and this reader was opened without its key:
    /// sealed values (payloads, labels, summaries, the records' values) read as absent.
    package func isSealedWithoutKey() throws -> Bool {
        let schema = store.schema
        guard schema.sealing.sealing == nil else { return false }
        return try store.read { txn in try txn.get(schema.meta, JournalSchema.MetaKey.keyCheck) } != nil
    }

    /// The records the fold at open could not read, when the projections are of another layout
    /// (empty otherwise): operations and counts folded without them may be incomplete.
    public var recordsSkippedByFold: [Outbox.DamagedRecord] { folded?.damaged ?? [] }

    // MARK: Operations

    /// One operation as it stands, with its request; `nil` when no operation has this id.
    public func operation(_ id: OperationID) throws -> OperationSnapshot? {
        try queries.operationSnapshot(id, now: clock.now())
    }

    /// Every event of one operation, in journal order, as ``HistoryEntry`` values.
    /// - Throws: ``OutboxError/operationNotFound(_:)``; ``OutboxError/journalCorrupt(seq:reason:)``
    ///   for a damaged record (``timeline(of:)`` carries on past it instead).
    public func history(_ id: OperationID) throws -> [HistoryEntry] {
        try journalEvents(of: id).map { HistoryEntry($0) }
    }

    /// Every event of one operation, in journal order, as the engine journaled it.
    package func journalEvents(of id: OperationID) throws -> [JournalEvent] {
        try queries.history(id)
    }

    /// A page of operations filtered by status, category, type and creation moment, newest
    /// first, each as ``operation(_:)`` answers it.
    ///
    /// ```swift
    /// let waiting = try reader.operations(matching: OperationQuery(statuses: [.queued], limit: 50)).operations
    /// ```
    public func operations(matching query: OperationQuery) throws -> OperationPage {
        try queries.operations(matching: query, now: clock.now())
    }

    /// The same page as folded states, reading no event: a list of a damaged journal still reads.
    package func operationStates(matching query: OperationQuery) throws -> OperationStatePage {
        try queries.operationStates(matching: query)
    }

    /// The operations whose id starts with `prefix` (hyphens and case ignored), so a person may
    /// type the first few characters of an id.
    /// - Returns: every match, sorted; empty when none.
    public func operationIDs(matchingPrefix prefix: String) throws -> [OperationID] {
        try queries.operationIDs(matchingPrefix: prefix)
    }

    /// Everything the journal holds about one operation, carrying on past damaged records (listed
    /// in ``OperationTimeline/damaged``).
    /// - Throws: ``OutboxError/operationNotFound(_:)`` when the journal has nothing of it.
    public func timeline(of id: OperationID) throws -> OperationTimeline {
        try queries.timeline(of: id)
    }

    // MARK: Events

    /// A page of events matching `query`, carrying on past damaged records (listed in the page).
    ///
    /// ```swift
    /// let tail = try reader.events(matching: EventQuery(order: .newestFirst, limit: 20))
    /// ```
    public func events(matching query: EventQuery) throws -> EventPage {
        try queries.events(matching: query)
    }

    /// Up to `limit` events from `start` on, in journal order.
    /// - Throws: ``OutboxError/journalCorrupt(seq:reason:)`` at the first damaged record
    ///   (``events(matching:)`` carries on past it instead).
    package func events(from start: JournalSequence = 1, limit: Int = 1000) throws -> [JournalEvent] {
        try queries.events(from: start, limit: limit)
    }

    public func lastSeq() throws -> JournalSequence {
        try queries.lastSeq()
    }

    // MARK: Views

    /// The engine-level state: whether the worker is paused and why, which engine opened it.
    package func engineState() throws -> EngineState {
        try queries.engineState()
    }

    /// Why the worker sends nothing, when a 401 paused it (``Outbox/workerPause()``).
    public func workerPause() throws -> Outbox.WorkerPause? {
        try queries.engineState().pause
    }

    // MARK: Records

    /// The member's view of one record, its server base and its sync state (a synced type of
    /// schema version 1 unless `policy` says otherwise: a reader has no app configuration).
    /// Read from the stored projections; a reader of a journal of another layout finds none.
    public func record(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy = OutboxConfiguration.RecordTypePolicy()) throws -> LocalRecord? {
        try queries.record(key, policy: policy)
    }

    /// One page of a business's records of a type, as ``Outbox/records(_:)`` answers it.
    public func records(_ query: RecordQuery, policy: OutboxConfiguration.RecordTypePolicy = OutboxConfiguration.RecordTypePolicy()) throws -> RecordQuery.Page {
        try queries.records(query, policy: policy)
    }

    /// Every event that made a record's value, and a verdict in words (``Outbox/recordHistory(_:showingValues:)``).
    public func recordHistory(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy = OutboxConfiguration.RecordTypePolicy(), showingValues: Bool = false) throws -> LocalRecord.History {
        try queries.recordHistory(key, policy: policy, showingValues: showingValues)
    }

    /// A page of the reconciliation ledger: one row per operation, in journal order, without payloads.
    public func ledger(_ query: LedgerQuery = LedgerQuery()) throws -> LedgerPage {
        try queries.ledger(query)
    }

    /// The journal at a glance: versions, seq range, size, counts by status, the oldest pending
    /// operation, the worker's pause, the last event's moment.
    /// - Parameter now: the moment ages are measured at (the tool's `--now`).
    public func summary(now: Date = Date()) throws -> JournalSummary {
        try queries.summary(now: now)
    }

    /// The count of operations not yet terminal after each event, in journal order, thinned to
    /// at most `maxSamples` samples (each the highest of its stretch): the queue's depth over the
    /// journal's life.
    public func queueDepthHistory(maxSamples: Int = 500) throws -> [QueueDepthSample] {
        try queries.queueDepthHistory(maxSamples: maxSamples)
    }

    /// Checks every record's checksum and every operation's invariants, and compares the stored
    /// projections with a rebuild from the events; then hashes the file of every attachment a
    /// write not settled still needs, in the journal's directory (`attachments/<sha256>`), a
    /// chunk at a time: a missing or damaged one is a finding. Reads only.
    public func verify() throws -> VerificationReport {
        try queries.verify(files: attachmentFiles)
    }

    // MARK: Attachments

    /// The attachments' files beside the journal.
    private var attachmentFiles: AttachmentFiles {
        AttachmentFiles(journal: URL(fileURLWithPath: path, isDirectory: true), keys: store.schema.sealing)
    }

    /// The attachments whose id starts with `prefix` (hyphens and case ignored), among the
    /// writes whose details the journal holds (a compaction keeps no manifest).
    /// - Returns: every match, sorted; empty when none.
    public func attachmentIDs(matchingPrefix prefix: String) throws -> [AttachmentID] {
        try queries.attachmentIDs(matchingPrefix: prefix)
    }

    /// The proof of one attachment: its manifest, its write, its upload's events and its local
    /// file; `nil` when no write the journal holds carries it.
    /// - Parameters:
    ///   - hashingFile: read the whole file and hash it (a chunk at a time), or only look at its
    ///     presence and size.
    ///   - keepSeconds: how long the app keeps a settled write's files (a reader has no app
    ///     configuration): what ``AttachmentProof/fileKeptUntil`` counts from.
    public func attachment(_ id: AttachmentID, hashingFile: Bool = true,
                           keepSeconds: TimeInterval = OutboxConfiguration.AttachmentSettings().keepSeconds) throws -> AttachmentProof? {
        try queries.attachmentProof(id, files: attachmentFiles, hashing: hashingFile, keepSeconds: keepSeconds)
    }

    /// The proofs of every attachment the journal holds a manifest of, in journal order; their
    /// files looked at for presence and size only, unless `hashingFiles`.
    public func attachments(hashingFiles: Bool = false,
                            keepSeconds: TimeInterval = OutboxConfiguration.AttachmentSettings().keepSeconds) throws -> [AttachmentProof] {
        try queries.attachmentProofs(files: attachmentFiles, hashing: hashingFiles, keepSeconds: keepSeconds)
    }

    // MARK: For tools in this package

    /// Runs `body` on one snapshot of the journal, for tools in this package.
    package func withSnapshot<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        try queries.read(body)
    }

    /// How many events the snapshot holds.
    package func eventCount(in txn: borrowing LMDBTransaction) throws -> Int {
        try txn.count(store.schema.events.database)
    }

    /// Closes the reader.
    public func close() {
        store.close()
    }
}
