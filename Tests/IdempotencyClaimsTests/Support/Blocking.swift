import Foundation
import Synchronization

/// Runs blocking work on a thread of its own, so that a test waiting on a ``Gate`` never holds
/// one of Swift concurrency's few threads.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

enum BlockingError: Error {
    /// A gate stayed closed far longer than any test needs: the test is broken, not slow.
    case gateNeverOpened
}

/// A barrier a blocked thread waits at until the test opens it. Opening is for every waiter,
/// past and future.
final class Gate: Sendable {
    private let isOpen = Mutex(false)
    private let semaphore = DispatchSemaphore(value: 0)

    func open() {
        let wasOpen = isOpen.withLock { state in
            defer { state = true }
            return state
        }
        if !wasOpen { semaphore.signal() }
    }

    /// Blocks until ``open()``; throws after two minutes so a broken test fails instead of hanging
    /// (a deadline for a broken test, never a timing: a loaded machine may stall a thread for
    /// seconds).
    func wait() throws {
        if isOpen.withLock({ $0 }) { return }
        guard semaphore.wait(timeout: .now() + 120) == .success else { throw BlockingError.gateNeverOpened }
        semaphore.signal()   // let any other waiter through too
    }
}

/// A one-shot event an async test awaits: fired from any thread.
final class Signal: Sendable {
    private struct State {
        var fired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

/// Lets `count` threads start together, so they really run at once.
final class StartLine: Sendable {
    private let count: Int
    private let arrived = Mutex(0)
    private let gate = Gate()

    init(count: Int) {
        self.count = count
    }

    func arriveAndWait() throws {
        let all = arrived.withLock { value in
            value += 1
            return value == count
        }
        if all { gate.open() }
        try gate.wait()
    }
}

/// Runs `work` on a thread of its own and waits at most `seconds` for its answer: `nil` when it
/// has not answered by then (it goes on, its answer dropped). For a test that must see an answer
/// arrive while something is still held: work that waits for the held thing fails the test
/// instead of hanging it (a deadline for a broken test, not a timing).
func answerWithin<T: Sendable>(seconds: TimeInterval = 300, _ work: @escaping @Sendable () throws -> T) async throws -> T? {
    try await onThread {
        let answer = Mutex<Result<T, any Error>?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread {
            let result = Result { try work() }
            answer.withLock { $0 = result }
            answered.signal()
        }.start()
        guard answered.wait(timeout: .now() + seconds) == .success else { return nil }
        return try answer.withLock { $0 }?.get()
    }
}
