public import Foundation
import Synchronization

extension SpawnedProcess {
    /// What a child run to its end produced.
    public struct Finished: Sendable {
        public var termination: SpawnedProcess.Termination
        public var output: [UInt8]
        public var errors: [UInt8]

        public var outputText: String { String(decoding: output, as: UTF8.self) }
        public var errorText: String { String(decoding: errors, as: UTF8.self) }
    }

    /// Runs `executable` to its end with its standard input at /dev/null, both output streams
    /// read in full (standard error on a thread of its own, so that neither pipe can fill up
    /// and block the child).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, workingDirectory: String? = nil
    ) throws -> Finished {
        let child = try SpawnedProcess(
            executable, arguments, environment: environment, workingDirectory: workingDirectory,
            input: .null, output: .pipe, errors: .pipe)
        // Both ends exist: both streams were asked for as pipes.
        let errors = child.errors!.collect()
        let output = child.output!.readToEnd()
        return Finished(termination: child.wait(), output: output, errors: errors.data)
    }

    /// Sends `number` to the child at `deadline`, unless it has ended or the answer's
    /// ``ScheduledSignal/cancel()`` came first (dropping the answer cancels it too): a hang
    /// fails a test instead of blocking it.
    public func signal(_ number: Int32, at deadline: DispatchTime) -> ScheduledSignal {
        ScheduledSignal(self, number, at: deadline)
    }

    /// ``signal(_:at:)`` `seconds` from now.
    public func signal(_ number: Int32, after seconds: Double) -> ScheduledSignal {
        signal(number, at: .now() + seconds)
    }
}

/// A signal to a child on a timer; see ``SpawnedProcess/signal(_:at:)``.
public final class ScheduledSignal: Sendable {
    private let timer: TimerSource
    private let arming = Arming()

    fileprivate init(_ child: SpawnedProcess, _ number: Int32, at deadline: DispatchTime) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .userInitiated))
        timer.schedule(deadline: deadline, leeway: .microseconds(100))
        timer.setEventHandler { [arming] in
            // Under the lock: once cancel() has returned the signal is never sent.
            arming.state.withLock { state in
                if state.armed { state.fired = child.signal(number) }
                state.armed = false
            }
        }
        self.timer = TimerSource(timer)
        timer.resume()
    }

    deinit {
        cancel()
    }

    /// Whether the signal was sent (the child was still running at the deadline).
    public var fired: Bool {
        arming.state.withLock { $0.fired }
    }

    /// Stops the timer; once this returns the signal can no longer be sent.
    public func cancel() {
        arming.state.withLock { $0.armed = false }
        timer.source.cancel()
    }
}

/// Whether a ``ScheduledSignal`` may still send its signal, and whether it did.
private final class Arming: Sendable {
    let state = Mutex((armed: true, fired: false))
}

/// A Dispatch timer held by a `Sendable` class. `@unchecked`: libdispatch sources may be
/// cancelled from any thread, but Linux's Dispatch does not mark them `Sendable`.
private struct TimerSource: @unchecked Sendable {
    let source: any DispatchSourceTimer

    init(_ source: any DispatchSourceTimer) {
        self.source = source
    }
}
