public import Foundation
import OutboxCore

extension Outbox {
    /// Tells the worker something happened in the app that may let queued rows through: it
    /// launched, the network came back, it came to the foreground, the device's clock was
    /// changed. Overlapping wakes collapse into one pass; the attempts a wake starts record its
    /// reason (``AttemptStarted/trigger``).
    ///
    /// Until the first wake (or ``drain()``), the worker sends nothing on its own.
    public func wake(_ event: Outbox.AppWake) {
        wake(engine: event.reason)
    }

    /// A wake for any reason, the engine's own included (a timer, a retryable inline save): for
    /// the engine, its tests and the simulation.
    package func wake(engine reason: WakeReason) {
        guard !isClosed else { return }
        log.log(.debug, "wake", [EngineLog.Key.trigger: .string(reason.rawValue)])
        wakesInFlight.add(1, ordering: .relaxed)
        Task {
            await worker.wake(reason)
            self.wakesInFlight.subtract(1, ordering: .releasing)
        }
    }

    /// Returns once everything the engine was set to do at this moment of its clock is done: wakes
    /// delivered, passes ended, no timer due, nothing waiting to be committed. A deterministic
    /// simulation steps the engine with it.
    package func settle() async {
        while !isClosed {
            // A wake on its way to the worker starts a pass only once delivered: wait for it first.
            if wakesInFlight.load(ordering: .acquiring) > 0 {
                await Task.yield()
                continue
            }
            await worker.waitUntilIdle()
            if wakesInFlight.load(ordering: .acquiring) == 0, writer.pendingCount == 0 { return }
        }
    }

    /// Runs one pass now and returns when it ends. If a pass is running, waits for it and then
    /// for one more, so every row due at the call is considered.
    public func drain() async {
        guard !isClosed else { return }
        await worker.drain()
    }

    /// Drains within the time the system gave the app in the background (`BGTaskScheduler`,
    /// WorkManager), up to `deadline` of the configuration's clock, and says what it did.
    ///
    /// Passes run while rows are due and the time left covers a request
    /// (``OutboxConfiguration/attemptBudgetSeconds``): no write's attempt, batch or feed page
    /// starts with less, and a resnapshot stops between its pages (the staged pages are kept).
    /// At the deadline, at ``expire()``, or when the task running this is cancelled, the requests
    /// in flight are cancelled and each is recorded as no response of class `cancelled`, due
    /// again at once and never nearer giving up (a request the server did take is replayed
    /// under its key, so nothing applies twice). When it returns, nothing more starts until the
    /// next ``wake(_:)``, ``drain()`` or enqueue: hand ``Outbox.DrainReport/nextWake`` to the system's
    /// scheduler (Docs/replay.md shows how).
    ///
    /// - Returns: the passes' attempts (and of them the cancelled ones), the last pull's report,
    ///   why it ended, and when the engine next has work.
    @discardableResult
    public func drain(until deadline: Date) async -> Outbox.DrainReport {
        guard !isClosed else { return Outbox.DrainReport(ending: .closed, attempts: 0, cancelledAttempts: 0, pull: nil, nextWake: nil) }
        let worker = self.worker
        let pass = self.replayPass
        let tally = await withTaskCancellationHandler {
            await worker.drain(until: deadline)
        } onCancel: {
            // Nothing more starts from this moment; the worker then cancels what is in flight.
            pass.budget.withLock { $0.expired = true }
            Task { await worker.expire() }
        }
        // The system is about to suspend the app: the engine stops watching the route.
        if !isClosed {
            await attempts.routes.recordAlone(responded: false, at: configuration.clock.now(), writer: writer, log: log,
                                              failure: "could not record that the route stopped being watched")
        }
        let ending: Outbox.DrainReport.Ending = switch tally.cut {
        case _ where isClosed: .closed
        case .budgetSpent?: .budgetSpent
        case .expired?: .expired
        case nil: .finished
        }
        return Outbox.DrainReport(ending: ending, attempts: tally.attempts, cancelledAttempts: tally.cancelled, pull: tally.pull, nextWake: nextWake)
    }

    /// The system takes the app's background time back (a `BGTask`'s expiration handler, a
    /// WorkManager worker's `onStopped`): nothing more starts, the requests in flight are
    /// cancelled and recorded (no response, `cancelled`), and the pass ends. A running
    /// ``drain(until:)`` returns once they are recorded. The next wake, drain or enqueue goes on.
    public func expire() {
        guard !isClosed else { return }
        replayPass.budget.withLock { $0.expired = true }
        let worker = self.worker
        Task { await worker.expire() }
    }

    /// The session was refreshed after a 401: resumes the worker and drains what waited.
    /// - Throws: ``OutboxError/closed``, or a storage error recording the resumption.
    public func resumeSession() async throws {
        try ensureOpen()
        if try engineState().isPaused {
            let events = try await room.append([JournalStore.Draft(operationID: nil, body: .sessionResumed)])
            log.log(.info, "session resumed: the worker drains what waited", [
                EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
            ])
        }
        await worker.wake(.sessionResumed)
    }

    /// The moment the worker next has work (a scheduled retry, a feed due); `nil` when nothing
    /// is scheduled (or the worker is paused, or was never woken). While the app runs, the
    /// worker's own timer runs the pass then; after a budgeted drain or an expiry, it is the
    /// moment to hand the system's scheduler (it may be now: a cancelled attempt is due at once).
    public var nextWake: Date? {
        worker.armedTimer.withLock { $0 }
    }
}
