import Dispatch
import Foundation
import OutboxCore
import Synchronization

/// The journal's single writer, with group commit.
///
/// Callers from any task hand it a unit of events and suspend. One serial queue takes every unit
/// waiting at that moment and commits them in one write transaction, so many tasks enqueueing at
/// once share one commit (and one flush to disk). Each caller resumes only after the commit that
/// holds its own events, with those events or the reason its unit was refused.
///
/// A unit may be submitted as needing no flush (``append(_:flush:)``, ``appendWithoutWaiting(_:landed:)``):
/// a transaction whose units all need none commits without flushing, and one holding any unit
/// that needs a flush flushes, which covers the others.
final class JournalWriter: Sendable {
    typealias Unit = [JournalStore.Draft]
    /// A unit as it waits: each record encoded on its producer's task.
    typealias PreparedUnit = [JournalStore.PreparedDraft]

    /// The most units one transaction takes; the rest wait for the next.
    static let maxUnitsPerCommit = 1024

    /// The longest a transaction waits for the callers the last commit resumed to come back, in
    /// seconds of the injected clock's uptime (a manual clock's does not move by itself, so under
    /// one a transaction never waits: commits do not depend on how fast the machine runs).
    static let maxFillWait: TimeInterval = 0.002

    private struct Submission {
        var unit: PreparedUnit
        /// Builds the unit on the writer's queue when it is taken, for a unit whose making costs
        /// what its caller should not wait for (``appendWithoutWaiting(flush:making:landed:)``).
        var make: (@Sendable () -> PreparedUnit)?
        /// Whether the commit holding it must be flushed before its result is delivered.
        var flush = true
        /// Whether delivering its result resumes a caller (1), or another unit of the same
        /// caller's does (0).
        var resumes: Int = 1
        /// Hands the unit's result to whoever waits for it.
        var deliver: @Sendable (Result<[JournalEvent], any Error>) -> Void

        /// The submission with its unit built: called on the writer's queue, outside the lock.
        consuming func made() -> Submission {
            guard let make else { return self }
            unit = make()
            self.make = nil
            return self
        }
    }

    private struct State {
        var pending: [Submission] = []
        var draining = false
        var closed = false
        /// Set by tests to hold submissions back, so that a known set lands in one commit.
        var held = false
        /// How many callers the last commit resumed, and how many have submitted since: while
        /// fewer have, the next transaction waits a little for the rest (``maxFillWait``).
        var lastResumed = 0
        var arrivedSinceResume = 0
        /// When the last commit resumed its callers, and how long that commit took: the wait for
        /// them ends that long after they were resumed, so a drain started by the first of them
        /// to come back still waits for the rest, and one started long after waits for nobody.
        var lastResumedAt: TimeInterval?
        var lastCommit: TimeInterval = 0
        /// The writer waits in its transaction for a submission; the next one wakes it.
        var writerWaiting = false

        /// The first submission waiting, when a transaction that is `flushing` (or not) may take
        /// it: one without a flush takes none that needs one.
        mutating func takeFirst(flushing: Bool) -> Submission? {
            guard let first = pending.first, flushing || !first.flush else { return nil }
            return pending.removeFirst()
        }
    }

    private let store: JournalStore
    private let clock: any OutboxClock
    private let queue = DispatchQueue(label: "outbox.journal-writer", qos: .userInitiated)
    private let state = Mutex(State())
    /// Wakes the writer waiting for a submission.
    private let arrival = DispatchSemaphore(value: 0)
    private let onCommit: @Sendable ([JournalEvent]) -> Void

    /// - Parameter onCommit: called on the writer's queue after each commit, with every event it
    ///   holds, before the callers resume.
    init(store: JournalStore, clock: any OutboxClock, onCommit: @escaping @Sendable ([JournalEvent]) -> Void) {
        self.store = store
        self.clock = clock
        self.onCommit = onCommit
    }

    /// Appends one unit and returns once it is committed: durable, unless `flush` is `false`,
    /// when it survives the app ending and becomes durable with the next flushing commit.
    /// - Throws: the unit's own refusal (an illegal transition), or the commit's failure
    ///   (``OutboxError/storageFull(limitBytes:)``, ``OutboxError/closed``): nothing was written.
    func append(_ unit: Unit, flush: Bool = true) async throws -> [JournalEvent] {
        // Encoded here, on the caller's task: the writer only gives each record its seq.
        let prepared = unit.map(JournalStore.PreparedDraft.init)
        return try await withCheckedThrowingContinuation { continuation in
            submit([Submission(unit: prepared, flush: flush, deliver: { continuation.resume(with: $0) })])
        }
    }

    /// Appends one unit without waiting for it, built by `making` on the writer's queue: for
    /// events nobody waits on, that the engine would record again if they were lost (the
    /// opening). Its place among the units is this call's: every unit submitted after it lands
    /// after it. Logs nothing itself.
    /// - Parameter landed: called once with the unit's events or the reason it was refused:
    ///   after its commit, on the writer's queue, before the callers of that commit resume; at
    ///   once when the writer is closed.
    func appendWithoutWaiting(flush: Bool, making: @escaping @Sendable () -> Unit,
                              landed: @escaping @Sendable (Result<[JournalEvent], any Error>) -> Void) {
        // Nobody waits to submit again: it does not count as a caller the fill wait expects back.
        submit([Submission(unit: [], make: { making().map(JournalStore.PreparedDraft.init) }, flush: flush, resumes: 0, deliver: landed)])
    }

    /// Appends several units, each landing or refused on its own, submitted together so that
    /// they share commits (the units of a batch's attempts, or of its outcomes).
    /// - Returns: each unit's events or the reason it was refused, in the order given.
    func appendEach(_ units: [Unit]) async -> [Result<[JournalEvent], any Error>] {
        guard !units.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let collected = Mutex((results: [Result<[JournalEvent], any Error>?](repeating: nil, count: units.count), left: units.count))
            let submissions = units.enumerated().map { index, unit in
                Submission(unit: unit.map(JournalStore.PreparedDraft.init), resumes: index == 0 ? 1 : 0, deliver: { result in
                    let done = collected.withLock { state -> [Result<[JournalEvent], any Error>]? in
                        state.results[index] = result
                        state.left -= 1
                        return state.left == 0 ? state.results.map { $0! } : nil
                    }
                    if let done { continuation.resume(returning: done) }
                })
            }
            submit(submissions)
        }
    }

    /// Queues `submissions` together and starts a drain unless one is running or held.
    private func submit(_ submissions: [Submission]) {
        let (startDraining, wake) = state.withLock { state -> (Bool?, Bool) in
            guard !state.closed else { return (nil, false) }
            state.pending.append(contentsOf: submissions)
            state.arrivedSinceResume += submissions.reduce(0) { $0 + $1.resumes }
            let wake = state.writerWaiting
            state.writerWaiting = false
            guard !state.draining, !state.held else { return (false, wake) }
            state.draining = true
            return (true, wake)
        }
        if wake { arrival.signal() }
        switch startDraining {
        case nil: for submission in submissions { submission.deliver(.failure(OutboxError.closed)) }
        case true?: queue.async { self.drain() }
        case false?: break
        }
    }

    /// Runs storage work that is not a plain append (a compaction, a key rotation) on the writer's
    /// queue, after the units already waiting: no append runs beside it.
    /// - Parameter work: its own write transaction(s); returns its result and the events it
    ///   appended, handed to the commit callback.
    func perform<R: Sendable>(_ work: @escaping @Sendable (JournalStore, Date) throws -> (R, [JournalEvent])) async throws -> R {
        guard !state.withLock({ $0.closed }) else { throw OutboxError.closed }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { [store, clock, onCommit] in
                do {
                    let (result, events) = try work(store, clock.now())
                    if !events.isEmpty { onCommit(events) }
                    continuation.resume(returning: result)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Returns once every unit submitted before this call is committed or refused (unless held):
    /// a drain runs on the queue until nothing waits.
    func untilLanded() {
        queue.sync {}
    }

    /// The same for a task: resumes once every unit submitted before this call is committed or
    /// refused (the opening among them), without blocking a thread.
    func landed() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }

    /// Holds submissions back until ``release()``: lets a test gather a known batch.
    func hold() {
        state.withLock { $0.held = true }
    }

    /// Commits everything held, in one transaction per ``maxUnitsPerCommit`` units.
    func release() {
        let start = state.withLock { state -> Bool in
            state.held = false
            guard !state.draining, !state.pending.isEmpty else { return false }
            state.draining = true
            return true
        }
        if start { queue.async { self.drain() } }
    }

    /// Units waiting for a commit.
    var pendingCount: Int {
        state.withLock { $0.pending.count }
    }

    /// Refuses new units and waits for the ones accepted to be committed.
    func close() {
        release()
        state.withLock { $0.closed = true }
        queue.sync {}
        // A drain scheduled before closing may still be queued behind the sync above.
        while state.withLock({ $0.draining }) { queue.sync {} }
    }

    /// Commits what waits, one transaction after another, until nothing does. Units submitted
    /// while a transaction runs join it (``JournalStore/append(_:joining:at:uptime:)``) until it
    /// commits: a producer that arrives meanwhile waits for that commit, not for the next.
    ///
    /// A group commit that fills: the callers the last commit resumed are likely to submit again
    /// at once (a producer that enqueues one write after another). While some have not, and the
    /// transaction has nothing more to take, a durable one waits for them a little before it
    /// commits, so that one flush serves them all (``fillDeadline(durable:started:lastResumedAt:lastCommit:)``).
    /// A lone producer never waits (it is the one that came back); nor does a commit that is not
    /// flushed.
    ///
    /// A transaction flushes when any unit it takes needs a flush. One of units that need none
    /// commits without one, and is joined only by units that need none: the first that does
    /// waits for the next transaction, so the order of units is kept; it never waits to fill.
    private func drain() {
        let stopwatch = Stopwatch(clock: clock)
        while true {
            let (taken, lastResumedAt, lastCommit) = state.withLock { state in
                let count = min(state.pending.count, Self.maxUnitsPerCommit)
                let batch = Array(state.pending.prefix(count))
                state.pending.removeFirst(count)
                if batch.isEmpty { state.draining = false }
                return (batch, state.lastResumedAt, state.lastCommit)
            }
            if taken.isEmpty { return }
            var batch = taken.map { $0.made() }
            let flush = taken.contains(where: \.flush)
            let started = stopwatch.now
            // Only a flush is worth waiting for: without one (`.processCrash`, or units that need
            // none) a commit costs less than the wait, and the writer's time is what bounds the rate.
            let waitUntil = Self.fillDeadline(durable: flush && store.options.syncOnCommit, started: started,
                                              lastResumedAt: lastResumedAt, lastCommit: lastCommit)
            let results: [Result<[JournalEvent], OutboxError>]
            do {
                results = try store.append(batch.map(\.unit), joining: {
                    guard let next = self.nextJoining(until: waitUntil, flushing: flush, clock: stopwatch)?.made() else { return nil }
                    batch.append(next)
                    return next.unit
                }, flush: flush, at: clock.now(), uptime: clock.uptime())
            } catch {
                if flush { resumed(batch, at: stopwatch.now, commitTook: nil) }
                for submission in batch { submission.deliver(.failure(error)) }
                continue
            }
            let took = stopwatch.now - started
            let committed = results.flatMap { (try? $0.get()) ?? [] }
            if !committed.isEmpty { onCommit(committed) }
            // The fill wait is the flushing commits' affair: one without a flush leaves what
            // the last flushing one resumed, and how long it took, as they were.
            if flush { resumed(batch, at: stopwatch.now, commitTook: took) }
            for (submission, result) in zip(batch, results) {
                submission.deliver(result.mapError { $0 as any Error })
            }
        }
    }

    /// Until when a transaction that started at `started` waits for the callers the last commit
    /// resumed: as long after they were resumed as that commit took, never over
    /// ``maxFillWait``. So a drain that the first of them starts on coming back still waits for
    /// the rest, and one started long after waits for nobody. A commit that is not flushed never
    /// waits.
    static func fillDeadline(
        durable: Bool,
        started: TimeInterval,
        lastResumedAt: TimeInterval?,
        lastCommit: TimeInterval
    ) -> TimeInterval {
        guard durable, let lastResumedAt else { return started }
        return max(started, lastResumedAt + min(lastCommit, maxFillWait))
    }

    /// Notes that the callers of `batch` are about to resume: from now on, each that submits
    /// again counts as come back. `commitTook` is the commit's duration, `nil` when it failed.
    private func resumed(_ batch: [Submission], at moment: TimeInterval, commitTook: TimeInterval?) {
        let callers = batch.reduce(0) { $0 + $1.resumes }
        state.withLock { state in
            state.lastResumed = callers
            state.arrivedSinceResume = 0
            state.lastResumedAt = moment
            if let commitTook { state.lastCommit = commitTook }
        }
    }

    /// The next submission to join the running transaction: one waiting now, or, while callers
    /// the last commit resumed have not come back, the first to arrive before `deadline`. A
    /// transaction that is not `flushing` takes none that needs a flush.
    private func nextJoining(until deadline: TimeInterval, flushing: Bool, clock: Stopwatch) -> Submission? {
        while true {
            let (next, mayWait) = state.withLock { state -> (Submission?, Bool) in
                if let next = state.takeFirst(flushing: flushing) { return (next, false) }
                guard state.pending.isEmpty, state.arrivedSinceResume < state.lastResumed, !state.closed, !state.held else { return (nil, false) }
                state.writerWaiting = true
                return (nil, true)
            }
            if let next { return next }
            guard mayWait else { return nil }
            let nanoseconds = Int(((deadline - clock.now) * 1e9).rounded(.down))
            let woken = nanoseconds > 0 && arrival.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
            if !woken {
                // Nobody came in time. A submission that cleared the flag meanwhile has
                // signalled (or is about to): take that signal, so the next wait is a real one.
                let signalled = state.withLock { state -> Bool in
                    defer { state.writerWaiting = false }
                    return !state.writerWaiting
                }
                if signalled { arrival.wait() }
                if clock.now >= deadline { return state.withLock { $0.takeFirst(flushing: flushing) } }
            }
        }
    }
}

/// The writer's measure of elapsed time: the injected clock's uptime, so that a test's manual
/// clock decides the fill wait as it decides every other wait. No uptime reads as time standing
/// still (no wait).
private struct Stopwatch {
    let clock: any OutboxClock

    var now: TimeInterval { clock.uptime()?.seconds ?? 0 }
}
