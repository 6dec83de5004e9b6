public import Foundation
@_exported public import OutboxCore
@_exported public import OutboxCrypto
import OutboxStorage
import Synchronization

/// The engine: one account's journal of offline writes, sent exactly once.
///
/// ```swift
/// let outbox = try Outbox(
///     directory: journalURL,
///     transport: myTransport,
///     configuration: OutboxConfiguration(account: "member-42")
/// )
/// let id = try await outbox.enqueue(request)   // returns once durable
/// let row = try outbox.operation(id)           // .status == .queued
/// ```
///
/// Every enqueue, attempt and outcome is an immutable event in an LMDB journal; every status,
/// schedule and view is folded from those events. Reads are synchronous and safe from any
/// thread; writes suspend until durable.
public final class Outbox: Sendable {
    /// The version of the engine, recorded in the journal each time it is opened.
    public static let engineVersion = "0.2.0"

    /// The journal's directory.
    public let directory: URL
    public let configuration: OutboxConfiguration
    let transport: any OutboxTransport

    package let store: JournalStore
    let writer: JournalWriter
    let broadcaster: ChangeBroadcaster
    /// Every live ``observe(_:)``: told the region of each commit.
    let observations: ObservationHub
    /// The app's logger, and the problems counted and kept in memory.
    let log: EngineLog
    /// The attachments' bytes, beside the journal.
    package let files: AttachmentFiles
    /// Where the storage budget is kept: every write that must make room goes through it.
    let room: JournalRoom
    /// One attempt at one row: the worker's, and an inline save's.
    let attempts: ReplayAttempt
    let replayPass: ReplayPass
    let worker: ReplayWorker
    /// Wake signals handed to the worker and not yet delivered.
    let wakesInFlight = Atomic<Int>(0)
    /// Whether an automatic compaction runs now.
    let compacting = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)
    /// How long each phase of this open took: for the benchmark's breakdown of a launch.
    package let openPhases: OpenPhases

    /// Opens (or creates) the journal in `directory`.
    ///
    /// Opening costs nothing proportional to the journal's length. A journal whose projections
    /// were written by another layout has them rebuilt from its events first.
    /// - Throws: ``OutboxError/invalidConfiguration(field:problem:)`` for a value out of range
    ///   (nothing is opened), ``OutboxError/alreadyOpen(path:)`` when this process has it open,
    ///   ``OutboxError/openInAnotherProcess(path:processID:)`` when another process writes it,
    ///   ``OutboxError/newerFormat(found:supported:)`` for a journal of a newer engine,
    ///   ``OutboxError/journalDamaged(path:reason:)`` for a file cut short or structurally damaged,
    ///   ``OutboxError/wrongAccount(journal:configured:)``, ``OutboxError/notAJournal(path:reason:)``,
    ///   ``OutboxError/permissionDenied(path:)``, ``OutboxError/storageFull(limitBytes:errno:)``.
    public convenience init(directory: URL, transport: any OutboxTransport, configuration: OutboxConfiguration) throws {
        try self.init(directory: directory, transport: transport, configuration: configuration, faultHook: nil)
    }

    /// Opens the journal telling `fileSteps` each durable step of keeping an attachment's file:
    /// the crash tests' hook (``AttachmentFiles/step``).
    package convenience init(directory: URL, transport: any OutboxTransport, configuration: OutboxConfiguration,
                             fileSteps: @escaping @Sendable (String) -> Void) throws {
        try self.init(directory: directory, transport: transport, configuration: configuration, faultHook: nil, fileSteps: fileSteps)
    }

    init(directory: URL, transport: any OutboxTransport, configuration: OutboxConfiguration, faultHook: LMDBFaultHook?,
         fileSteps: @escaping @Sendable (String) -> Void = { _ in }) throws {
        let started = OpenPhases.now()
        try configuration.validate()
        self.directory = directory
        self.configuration = configuration
        self.transport = transport
        let log = EngineLog(logger: configuration.logger, clock: configuration.clock)
        let budget = StorageBudget(budgetBytes: configuration.maxJournalBytes)
        var phases = OpenPhases()
        let store = try JournalStore.open(
            directory: directory,
            options: JournalStore.Options(
                readOnly: false,
                syncOnCommit: configuration.durability == .full,
                initialMapSizeBytes: configuration.initialJournalBytes,
                maxMapSizeBytes: budget.mapSizeBytes,
                budgetBytes: budget.budgetBytes,
                faultHook: faultHook,
                sealingKey: configuration.encryptionKey,
                account: configuration.account,
                runningOn: .some(configuration.installation)
            ),
            phases: &phases
        )
        let broadcaster = ChangeBroadcaster { [store] events in (try? store.recordsTouched(by: events)) ?? [] }
        self.store = store
        self.files = AttachmentFiles(journal: directory, keys: store.schema.sealing, step: fileSteps)
        self.broadcaster = broadcaster
        let observations = ObservationHub(environment: store.environment)
        self.observations = observations
        store.schema.uploadProgress.onStep { [observations] region in observations.changed(region) }
        let writer = JournalWriter(store: store, clock: configuration.clock) { events in
            broadcaster.publish(events)
        }
        self.writer = writer
        self.log = log
        let room = JournalRoom(store: store, writer: writer, budget: budget, log: log, retention: Compactor.Retention(configuration))
        self.room = room
        let opening: JournalStore.OpeningFacts
        do {
            opening = try store.openingFacts()
        } catch {
            writer.close()
            store.close()
            throw error
        }
        let attempts = ReplayAttempt(store: store, room: room, transport: transport, configuration: configuration, log: log,
                                     routes: RouteWatch(opening.route))
        self.attempts = attempts
        self.replayPass = ReplayPass(store: store, room: room, attempts: attempts, configuration: configuration, files: files, log: log)
        self.worker = ReplayWorker(pass: replayPass, clock: configuration.clock)
        replayPass.pulls?.progress.onPage { [observations] region in observations.changed(region) }
        let recording = OpenPhases.now()
        Self.recordOpening(opening, writer: writer, appVersion: configuration.appVersion, installation: configuration.installation,
                           clock: configuration.clock, log: log)
        phases.recording += OpenPhases.now() - recording
        phases.total = OpenPhases.now() - started
        openPhases = phases
        // A kill between keeping a file and committing its write left it unnamed: collected now,
        // with the files of writes settled longer than the keep period. A file kept before the
        // journal was encrypted (or whose sealing a kill cut short) is sealed.
        collectAttachmentFiles(strays: true)
        files.sealPlainFiles()
    }

    /// Records `journalOpened` and, for every attempt the last process started and never saw
    /// end, `attemptAbandoned`: those rows are due at once, replayed under the same key.
    ///
    /// The opening makes the app wait for nothing, its abandonments with it: it is handed to the
    /// writer's queue, which builds its record there (the time zone's name, the boot's id) and
    /// commits it durably while the app reads, and every unit written after the open lands after
    /// it. Until it lands, nothing is judged without it: the engine judges rows by the engine
    /// state as its opening records it (``JournalSchema/engineStateAsJudged(in:)``), so a journal
    /// copied to another installation holds its writes from the open's return; and a row it
    /// abandons reads as the last process left it, `syncing`, which no pass sends (a pass's own
    /// look for orphans finds the abandonment recorded first). A process ended before that commit
    /// loses the opening and nothing else: each row it abandons is still `syncing` on the disk,
    /// so the next open records the abandonment again, and its own opening.
    private static func recordOpening(_ opening: JournalStore.OpeningFacts, writer: JournalWriter, appVersion: String?, installation: String?,
                                      clock: any OutboxClock, log: EngineLog) {
        @Sendable func opened() -> JournalStore.Draft {
            JournalStore.Draft(operationID: nil, body: .journalOpened(JournalOpened(
                formatVersion: RecordCodec.formatVersion, engineVersion: engineVersion, appVersion: appVersion,
                timeZone: clock.timeZone.identifier, installation: installation
            )))
        }
        let (abandoned, routeLost) = (opening.abandoned, opening.lostRoute)
        let metadata: OutboxLogger.Metadata = [
            EngineLog.Key.engineVersion: .string(engineVersion),
            EngineLog.Key.formatVersion: "\(RecordCodec.formatVersion)",
            EngineLog.Key.count: "\(abandoned.count)",
        ]
        writer.appendWithoutWaiting(flush: true, making: { [opened()] + (routeLost.map { [$0] } ?? []) + abandoned }, landed: { result in
            switch result {
            case .success(let events):
                var recorded = metadata
                recorded[EngineLog.Key.seq] = .string(events.first.map { "\($0.seq)" } ?? "")
                log.log(.info, "journal opened", recorded)
            case .failure(OutboxError.closed):
                break
            case .failure(let error):
                // Nothing waits on it: the journal stays open and readable, a row it would have
                // abandoned stays `syncing` until a pass records that (each pass looks for
                // orphans first), and the next open records its own opening.
                log.problem(.openingNotRecorded, "journal opened, but its opening could not be recorded", error: error, metadata)
            }
        })
    }

    /// Returns once the writer has committed (or refused) everything handed to it before this
    /// call, the opening among it: for tests that read the journal right after opening it.
    package func untilWritesLanded() {
        writer.untilLanded()
    }

    deinit {
        close()
    }

    /// Whether `operationType` may be queued: `false` for ``OperationTypePolicy.Replay/onlineOnly`` types
    /// and for types the configuration lists nowhere (``OutboxConfiguration/operationPolicies``,
    /// ``OutboxConfiguration/defaultPolicy``). Ask before the member confirms, so the form can
    /// say "needs a connection" first.
    public func canQueue(_ operationType: String) -> Bool {
        configuration.policy(for: operationType).map { $0.replay != .onlineOnly } ?? false
    }

    /// Finishes the writes already accepted, ends every ``changes()`` stream and closes the
    /// journal. Later calls throw ``OutboxError/closed``. Closing twice does nothing.
    ///
    /// Nothing new starts from the call on, in a pass under way too: no write's attempt, no
    /// grant, no segment (the attachments' queue stops between two). A request already out ends
    /// with its pass, unrecorded.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // At once, not when the worker gets to it: a pass would start the next file's segment
        // meanwhile, its landing never journaled, and the next open would send it again.
        replayPass.stop()
        let worker = self.worker
        Task { await worker.shutdown() }
        writer.close()
        if store.environment.hasUnflushedCommits {
            // The last commits are in the OS's cache (every commit of `.processCrash`; in `.full`
            // a route change recorded alone, when nothing flushed after it): hand them to the disk before letting
            // go. `close()` cannot throw: a failure is logged and counted, and the commits stay
            // in the OS's cache, safe unless the device loses power.
            do {
                try store.environment.sync()
            } catch {
                log.problem(.flushFailed, "flushing the last commits at close failed", error: OutboxError(storage: error, limitBytes: configuration.maxJournalBytes))
            }
        }
        broadcaster.finish()
        observations.finish()
        store.close()
    }

    /// Flushes every commit to disk. Needed only with the ``OutboxConfiguration.Durability/processCrash`` tier, where
    /// commits are not flushed one by one: call it when the app moves to the background.
    /// - Throws: the storage error when the flush fails; what was committed stays committed.
    public func flush() throws {
        try ensureOpen()
        do {
            try store.environment.sync()
        } catch {
            throw OutboxError(storage: error, limitBytes: configuration.maxJournalBytes)
        }
    }

    /// Whether ``close()`` has run.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    package func ensureOpen() throws(OutboxError) {
        if isClosed { throw .closed }
    }
}
