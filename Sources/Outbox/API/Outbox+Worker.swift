public import Foundation
import OutboxCore

extension Outbox {
    /// Tells the worker something happened in the app that may let queued rows through: it
    /// launched, the network came back, it came to the foreground, the device's clock was
    /// changed. Overlapping wakes collapse into one pass; the attempts a wake starts record its
    /// reason (``AttemptStarted/trigger``).
    ///
    /// Until the first wake (or ``drain()``), the worker sends nothing on its own.
    public func wake(_ event: AppWake) {
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

    /// The session was refreshed after a 401: resumes the worker and drains what waited.
    /// - Throws: ``OutboxError/closed``, or a storage error recording the resumption.
    public func resumeSession() async throws {
        try ensureOpen()
        if try engineState().isPaused {
            let events = try await room.append([JournalStore.Draft(operationID: nil, body: .sessionResumed)], whenFull: .reserve)
            log.log(.info, "session resumed: the worker drains what waited", [
                EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
            ])
        }
        await worker.wake(.sessionResumed)
    }

    /// The moment the worker's timer will next run a pass for a scheduled retry; `nil` when
    /// nothing is scheduled (or the worker is paused, or was never woken).
    public var nextWake: Date? {
        worker.armedTimer.withLock { $0 }
    }
}
