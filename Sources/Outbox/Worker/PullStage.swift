import Foundation
import OutboxCore
import OutboxWire
import Synchronization

extension WakeReason {
    /// Whether a pass this wake starts pulls every feed, due or not: the member opened the app or
    /// came back to it, the network or the session came back, or the app asked (`pull()`).
    var forcesPull: Bool {
        switch self {
        case .appLaunch, .connectivityRegained, .foreground, .sessionResumed, .pullRequested: true
        case .saveRetryable, .timer, .drain, .inlineSave, .enqueued, .retryRequested, .clockChanged: false
        }
    }
}

/// The pass's pull, after its sends: which feeds are due (``FeedSchedule``), each pulled by
/// ``FeedPuller`` in the order of the businesses' bytes, within the pass's page budget, giving
/// way when a write waits; and what each feed's pull teaches its schedule.
///
/// The schedule's facts (failures, the server's `Retry-After`, when a feed last caught up, the
/// limits it published) live in memory, by the injected clock; after a restart a feed's last
/// catch-up is read back from the page that set its cursor, and the rest starts afresh (the app
/// launch pulls every feed anyway).
final class PullStage: Sendable {
    let puller: FeedPuller
    let settings: PullConfiguration
    let store: JournalStore
    let configuration: OutboxConfiguration
    let log: EngineLog
    private let memory = Mutex(Memory())
    /// How far each feed's pull has come, for a progress bar.
    let progress = PullProgressBoard()

    /// The soonest the timer asks again for a feed that just reached its end: a freshness of
    /// zero would otherwise pull back to back.
    static let minimumRepullSeconds: TimeInterval = 1

    init(puller: FeedPuller, settings: PullConfiguration) {
        self.puller = puller
        self.settings = settings
        self.store = puller.store
        self.configuration = puller.configuration
        self.log = puller.log
    }

    /// What the worker knows of one feed beyond its row.
    struct Track: Sendable {
        /// When a page last reached the feed's end.
        var caughtUpAt: DeviceMoment?
        var lastPageAt: Date?
        /// A pull was asked for (a forced wake) or cut short (a write waiting, the page budget)
        /// and has not finished: due at once.
        var owed = false
        var failures = 0
        var lastFailureAt: Date?
        var retryAfter: Date?
        var limits: FeedLimits?
        var lastStop: Outbox.PullStop?
        /// When each type's summary was last compared with the base (since the journal opened).
        var summarizedAt: [ExactString: Date] = [:]
    }

    private struct Memory {
        var tracks: [ExactString: Track] = [:]
        var pulls = 0
        var pagesApplied = 0
        var pagesRefused = 0
        var skipped = 0
        var resnapshots = 0
        var summariesChecked = 0
        var summaryMismatches = 0
        /// Businesses whose pulled types' schema versions were checked since the journal opened.
        var schemasChecked: Set<ExactString> = []
    }

    /// What the stage came to.
    struct Result: Sendable {
        var report: Outbox.PullReport
        /// When the next pass should run for the feeds.
        var next: Date?
    }

    private var clock: any OutboxClock { configuration.clock }
    private var policy: OperationTypePolicy.RetryPolicy { configuration.retryPolicy }
    private func moment() -> DeviceMoment { DeviceMoment(wall: clock.now(), uptime: clock.uptime()) }

    // MARK: The stage

    /// Pulls the feeds due (every feed on a wake that ``WakeReason/forcesPull``), at most
    /// ``PullConfiguration/maxPagesPerPass`` pages over all of them. Stops every feed left when
    /// the session goes (a 401, a sign-out, another account), and when `interruption` says so
    /// after a page: ``Outbox.PullStop/signedOut`` once the worker is stopped, ``Outbox.PullStop/writesWaiting``
    /// once a page has landed and a write waits.
    func run(trigger: WakeReason, interruption: () -> Outbox.PullStop?) async -> Result {
        let businesses: [ExactString]
        do {
            businesses = try self.businesses()
        } catch {
            log.problem(.journalRead, "could not read which feeds to pull; the next pass pulls them", error: error)
            return Result(report: Outbox.PullReport(feeds: []), next: poll())
        }
        // Once a process: a type whose schema changed with no adapter is fetched again whole, in
        // this pass.
        let unchecked = memory.withLock { memory in businesses.filter { memory.schemasChecked.insert($0).inserted } }
        for business in unchecked where !(await puller.dropBasesOfChangedSchemas(business: business.string)).isEmpty {
            memory.withLock { $0.tracks[business, default: Track()].owed = true }
        }
        let forced = trigger.forcesPull
        let start = moment()
        var toPull: [ExactString] = []
        var reports: [Outbox.FeedReport] = []
        memory.withLock { memory in
            for business in businesses {
                var track = memory.tracks[business] ?? Track()
                if forced { track.owed = true }
                memory.tracks[business] = track
                if isDue(track, business: business.string, now: start, forced: forced) {
                    toPull.append(business)
                } else if forced {
                    reports.append(Outbox.FeedReport(business: business.string, stoppedBy: .backingOff(until: due(track, business: business.string, now: start))))
                }
            }
            if !toPull.isEmpty { memory.pulls += 1 }
        }
        var budget = settings.maxPagesPerPass
        var pagesLanded = 0
        var halt: Outbox.PullStop?
        for business in toPull {
            if halt == nil, let interrupted = interruption(), interrupted != .writesWaiting || pagesLanded > 0 { halt = interrupted }
            if halt == nil, budget <= 0 { halt = .pageLimit }
            if let halt {
                reports.append(Outbox.FeedReport(business: business.string, stoppedBy: halt))
                continue
            }
            let limits = memory.withLock { $0.tracks[business]?.limits }
            progress.began(business.string, at: clock.now())
            var pulled = await puller.pull(business: business.string, settings: settings, limits: limits, maxPages: budget,
                                           interruption: interruption) { [progress] changes, bytes in
                progress.applied(business.string, changes: changes, bytes: bytes)
            }
            progress.ended(business.string)
            budget -= pulled.report.pagesApplied + pulled.report.pagesStaged
            pagesLanded += pulled.report.pagesApplied
            pulled.report = learn(pulled, business: business)
            if pulled.report.reachedEnd, budget > 0 {
                budget -= await checkSummaries(of: business, into: &pulled.report, limits: pulled.limits, budget: budget)
            }
            switch pulled.report.stoppedBy {
            case .unauthorized?, .signedOut?, .otherAccount?, .writesWaiting?: halt = pulled.report.stoppedBy
            default: break
            }
            reports.append(pulled.report)
        }
        reports.sort { $0.business.utf8.lexicographicallyPrecedes($1.business.utf8) }
        let halted: Bool
        switch halt {
        case .unauthorized?, .signedOut?, .otherAccount?: halted = true
        default: halted = false
        }
        return Result(report: Outbox.PullReport(feeds: reports), next: halted ? poll() : nextDue(of: businesses))
    }

    /// Compares the summary of each listed type whose interval ran out with the base, after the
    /// feed reached its end (``FeedPuller/checkSummary(business:type:settings:limits:maxPages:)``).
    /// - Returns: the pages it pulled and staged on the way.
    private func checkSummaries(of business: ExactString, into report: inout Outbox.FeedReport, limits: FeedLimits?, budget: Int) async -> Int {
        guard let interval = settings.summaryIntervalSeconds else { return 0 }
        let now = clock.now()
        let due = memory.withLock { memory in
            settings.exactTypes.keys.sorted { $0.string.utf8.lexicographicallyPrecedes($1.string.utf8) }.filter { type in
                memory.tracks[business]?.summarizedAt[type].map { now.timeIntervalSince($0) >= interval } ?? true
            }
        }
        var spent = 0
        for type in due where spent < budget {
            let check = await puller.checkSummary(business: business.string, type: type.string, settings: settings, limits: limits,
                                                  maxPages: budget - spent)
            spent += check.pagesApplied + (check.resync?.pagesStaged ?? 0)
            report.pagesApplied += check.pagesApplied
            report.pagesStaged += check.resync?.pagesStaged ?? 0
            report.recordsStaged += check.resync?.recordsStaged ?? 0
            if let checked = check.checked { report.summaries[type.string] = checked.verdict }
            memory.withLock { memory in
                memory.tracks[business, default: Track()].summarizedAt[type] = now
                memory.pagesApplied += check.pagesApplied
                if check.checked != nil { memory.summariesChecked += 1 }
                if check.checked?.verdict == .mismatched { memory.summaryMismatches += 1 }
                if check.resync?.swapped == true { memory.resnapshots += 1 }
            }
            if check.stoppedBy != nil { break }
        }
        return spent
    }

    /// What the feed's pull teaches its schedule; the report, its backoff's end filled in.
    private func learn(_ pulled: FeedPuller.Pulled, business: ExactString) -> Outbox.FeedReport {
        var report = pulled.report
        let now = moment()
        var next: Date?
        memory.withLock { memory in
            var track = memory.tracks[business] ?? Track()
            track.limits = pulled.limits
            if report.pagesApplied > 0 { track.lastPageAt = now.wall }
            if report.reachedEnd {
                track.caughtUpAt = now
                track.owed = false
                track.failures = 0
                track.lastFailureAt = nil
                track.retryAfter = nil
            } else if let stop = report.stoppedBy, stop.backsOff {
                track.owed = false
                track.failures += 1
                track.lastFailureAt = now.wall
                track.retryAfter = pulled.retryAfter
                if case .backingOff = stop { report.stoppedBy = .backingOff(until: due(track, business: business.string, now: now)) }
            } else if let stop = report.stoppedBy, [.writesWaiting, .pageLimit, .budgetSpent, .expired].contains(stop) {
                // Cut short after progress: the feed goes on at once, its earlier failures forgotten.
                track.owed = true
                track.failures = 0
                track.lastFailureAt = nil
                track.retryAfter = nil
            }
            track.lastStop = report.stoppedBy
            memory.tracks[business] = track
            next = due(track, business: business.string, now: now)
            memory.pagesApplied += report.pagesApplied
            memory.pagesRefused += pulled.refused
            memory.skipped += report.skipped
            memory.resnapshots += report.resnapshots
        }
        var metadata: OutboxLogger.Metadata = [
            EngineLog.Key.count: "\(report.pagesApplied)",
            EngineLog.Key.reason: .string(report.stoppedBy?.code ?? "reached_end"),
        ]
        if let next { metadata[EngineLog.Key.nextAttemptAt] = EngineLog.moment(next) }
        log.log(report.stoppedBy?.backsOff == true ? .info : .debug, "feed pulled", metadata)
        return report
    }

    /// The report of a pass the 401 pause kept from pulling: every feed stopped, nothing asked.
    func pausedReport() -> Outbox.PullReport {
        let businesses: [ExactString]
        do {
            businesses = try self.businesses()
        } catch {
            // The report then names only the configured feeds; the journal's own are paused all the same.
            log.problem(.journalRead, "could not read the businesses the journal pulls; the report names the configured ones", error: error)
            businesses = settings.businesses.map { ExactString($0) }
        }
        return Outbox.PullReport(feeds: businesses.map { Outbox.FeedReport(business: $0.string, stoppedBy: .unauthorized) })
    }

    // MARK: The schedule

    /// The configured businesses and every one the journal holds, each once, by their bytes.
    func businesses() throws -> [ExactString] {
        var all = Set(try store.queries.pulledBusinesses())
        for business in settings.businesses { all.insert(ExactString(business)) }
        let known = memory.withLock { Set($0.tracks.keys) }
        for business in all.subtracting(known) {
            let track = try seeded(business)
            memory.withLock { memory in
                if memory.tracks[business] == nil { memory.tracks[business] = track }
            }
        }
        return all.sorted()
    }

    /// Makes each of `businesses`' feeds due at once, as a forced wake does: a write synced
    /// without its record described waits for the feed to bring the server's value back.
    /// A business not pulled is left alone.
    func owe(_ businesses: Set<String>) {
        guard !businesses.isEmpty else { return }
        let pulled: [ExactString]
        do {
            pulled = try self.businesses()
        } catch {
            log.problem(.journalRead, "could not read which feeds to pull; a write's feed waits for its freshness", error: error)
            return
        }
        let owed = Set(businesses.map { ExactString($0) }).intersection(pulled)
        memory.withLock { memory in
            for business in owed { memory.tracks[business, default: Track()].owed = true }
        }
    }

    /// A feed first seen since the journal opened: its last catch-up read from the page that
    /// set its cursor (when that page reached the end).
    private func seeded(_ business: ExactString) throws -> Track {
        guard let stored = try store.queries.storedFeed(business: business.string) else { return Track() }
        var track = Track()
        track.lastPageAt = stored.pageAt?.wall
        if stored.page?.reachedEnd == true { track.caughtUpAt = stored.pageAt }
        return track
    }

    private func feed(_ track: Track) -> FeedSchedule.Feed {
        FeedSchedule.Feed(caughtUpAt: track.owed ? nil : track.caughtUpAt, failures: track.failures, lastFailureAt: track.lastFailureAt,
                          retryAfter: track.retryAfter)
    }

    private func isDue(_ track: Track, business: String, now: DeviceMoment, forced: Bool) -> Bool {
        FeedSchedule.isDue(feed(track), business: business, freshnessSeconds: settings.freshnessSeconds, policy: policy, now: now, forced: forced)
    }

    /// When the feed is due next: never before the server's `Retry-After` (which ``FeedSchedule``
    /// never pulls before either, where the retry policy caps a write's at its longest backoff),
    /// nor sooner than ``minimumRepullSeconds`` after it caught up.
    private func due(_ track: Track, business: String, now: DeviceMoment) -> Date {
        var due = FeedSchedule.due(feed(track), business: business, freshnessSeconds: settings.freshnessSeconds, policy: policy, now: now)
        if let retryAfter = track.retryAfter { due = max(due, retryAfter) }
        guard !track.owed, track.failures == 0, let caughtUp = track.caughtUpAt else { return due }
        return max(due, caughtUp.wall.addingTimeInterval(Self.minimumRepullSeconds))
    }

    /// The earliest moment one of `businesses`' feeds is due.
    private func nextDue(of businesses: [ExactString]) -> Date? {
        let now = moment()
        return memory.withLock { memory in
            businesses.compactMap { business in memory.tracks[business].map { due($0, business: business.string, now: now) } }.min()
        }
    }

    /// One cap from now: when a stage that could not go on asks again.
    private func poll() -> Date {
        clock.now().addingTimeInterval(policy.maxDelaySeconds)
    }

    // MARK: What an app reads

    /// `business`'s feed state; `nil` when it is neither pulled nor was.
    func state(business: String) throws -> Outbox.FeedState? {
        let key = ExactString(business)
        let businesses = try self.businesses()
        let stored = try store.queries.storedFeed(business: business)
        guard stored != nil || businesses.contains(key) else { return nil }
        let track = memory.withLock { $0.tracks[key] } ?? Track()
        let now = moment()
        var state = Self.state(stored: stored, business: business, clock: clock) ?? Outbox.FeedState(business: business)
        state.lastPageAt = track.lastPageAt ?? state.lastPageAt
        state.caughtUpAt = track.caughtUpAt?.wall ?? state.caughtUpAt
        state.lagSeconds = track.caughtUpAt.map { DeviceMoment.elapsed(from: $0, to: now, bootGapCapSeconds: .infinity) } ?? state.lagSeconds
        state.nextPullAt = due(track, business: business, now: now)
        state.limits = track.limits
        state.failures = track.failures
        state.lastStop = track.lastStop
        state.pull = progress.progress(of: business)
        return state
    }

    /// Every pulled feed's state, by the businesses' bytes.
    func states() throws -> [Outbox.FeedState] {
        try businesses().compactMap { try state(business: $0.string) }
    }

    /// A feed's state from the journal alone (no worker's schedule); `nil` for a feed never pulled.
    static func state(stored: StoredFeed?, business: String, clock: any OutboxClock) -> Outbox.FeedState? {
        guard let stored else { return nil }
        var state = Outbox.FeedState(business: business)
        state.epoch = stored.row.cursor?.epoch
        state.cursor = stored.row.cursor?.text
        state.resnapshot = stored.row.staging.map {
            Outbox.FeedState.ResnapshotProgress(position: $0.position.text, pagesStaged: $0.pages, recordsStaged: $0.staged)
        }
        state.lastPageAt = stored.pageAt?.wall
        if stored.page?.reachedEnd == true, let caughtUp = stored.pageAt {
            state.caughtUpAt = caughtUp.wall
            state.lagSeconds = DeviceMoment.elapsed(from: caughtUp, to: DeviceMoment(wall: clock.now(), uptime: clock.uptime()),
                                                    bootGapCapSeconds: .infinity)
        }
        return state
    }

    /// The pull's numbers since the journal opened, into `metrics`.
    func fill(_ metrics: inout OutboxMetrics) {
        // Every feed's last catch-up read in, for a journal not pulled since it opened.
        do {
            _ = try businesses()
        } catch {
            log.problem(.journalRead, "could not read the businesses the journal pulls; the metrics count the feeds read so far", error: error)
        }
        let now = moment()
        memory.withLock { memory in
            metrics.pulls = memory.pulls
            metrics.pagesApplied = memory.pagesApplied
            metrics.pagesRefused = memory.pagesRefused
            metrics.pulledChangesSkipped = memory.skipped
            metrics.resnapshots = memory.resnapshots
            metrics.summariesChecked = memory.summariesChecked
            metrics.summaryMismatches = memory.summaryMismatches
            var lag: [ExactString: Double] = [:]
            for (business, track) in memory.tracks {
                if let caughtUp = track.caughtUpAt { lag[business] = DeviceMoment.elapsed(from: caughtUp, to: now, bootGapCapSeconds: .infinity) }
            }
            metrics.cursorLagSeconds = lag.byString { first, _ in first }
        }
    }
}
