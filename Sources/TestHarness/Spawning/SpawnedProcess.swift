public import Foundation
import Synchronization

/// A child process started with `posix_spawn` and waited for with `waitpid`, for the tests and
/// their support.
///
/// Foundation's `Process` is not used: on Linux its launch and its reaping thread have crashed
/// and spun when many test suites start and kill children at once. Here the child gets pipes
/// made close-on-exec from the start, no descriptor of this process but those it is given
/// (every other one is closed in it), no blocked signal and every signal's default action. It
/// is reaped only by ``wait()`` (or ``poll()``), under the same lock as ``signal(_:)``, so a
/// signal can never reach another process that was given the pid afterwards.
///
/// ```swift
/// let child = try SpawnedProcess("/bin/sh", ["-c", "echo hi"], output: .pipe)
/// let output = child.output!.readToEnd()
/// #expect(child.wait() == .exited(0))
/// ```
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// This process's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe to this process: ``input``, ``output`` or ``errors``.
        case pipe
        /// A file, truncated or created (0644) for an output stream, read for the input.
        case file(String)
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// This signal ended it (9: SIGKILL).
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exited(\(status))"
            case .signalled(let signal): "signalled(\(signal))"
            }
        }
    }

    /// Why a child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public var executable: String
        public var step: String
        public var code: Int32

        public var description: String {
            "cannot start \(executable): \(step) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    public let pid: pid_t
    public let executable: String
    /// The child's standard input, when it is ``Stream/pipe``.
    public let input: WriteEnd?
    /// The child's standard output, when it is ``Stream/pipe``.
    public let output: ReadEnd?
    /// The child's standard error, when it is ``Stream/pipe``.
    public let errors: ReadEnd?
    /// Set once the child is reaped; guards every use of the pid.
    private let ended = Mutex<Termination?>(nil)

    /// Starts `executable` (a path; no `PATH` search) with `arguments`.
    /// - Parameters:
    ///   - environment: the child's whole environment; `nil` gives it this process's.
    ///   - workingDirectory: where the child starts; `nil` is this process's.
    /// - Throws: ``SpawnError`` naming the step that failed (a missing executable is
    ///   `posix_spawn` failing with ENOENT).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        workingDirectory: String? = nil, input: Stream = .inherit, output: Stream = .inherit, errors: Stream = .inherit
    ) throws {
        self.executable = executable
        var actions = SpawnActions()
        defer { actions.destroy() }
        actions.resetSignals()
        // Pipe ends opened so far: this process's are kept, the child's are closed once it has
        // them (or on a failure, all of them).
        var ours: [Int32] = []
        var theirs: [Int32] = []
        defer { theirs.forEach { _ = close($0) } }
        func fail(_ step: String, _ code: Int32) -> SpawnError {
            ours.forEach { _ = close($0) }
            return SpawnError(executable: executable, step: step, code: code)
        }

        var ends: [Int32?] = [nil, nil, nil]
        for (target, stream) in [input, output, errors].enumerated() {
            let target = Int32(target)
            let result: Int32
            switch stream {
            case .inherit:
                result = actions.inherit(target)
            case .null:
                result = actions.open("/dev/null", O_RDWR, to: target)
            case .file(let path):
                result = actions.open(path, target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, to: target)
            case .pipe:
                guard let pipe = closeOnExecPipe() else { throw fail("pipe", errno) }
                let (mine, child) = target == 0 ? (pipe.write, pipe.read) : (pipe.read, pipe.write)
                ours.append(mine)
                theirs.append(child)
                ends[Int(target)] = mine
                result = actions.duplicate(child, to: target)
            }
            guard result == 0 else { throw fail("a file action for descriptor \(target)", result) }
        }
        if let workingDirectory {
            let result = actions.changeDirectory(to: workingDirectory)
            guard result == 0 else { throw fail("changing to \(workingDirectory)", result) }
        }
        let closed = actions.closeOthers()
        guard closed == 0 else { throw fail("closing other descriptors", closed) }

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = [executable] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(argv) { argv in
            withCStrings(envp) { envp in actions.spawn(&pid, executable, argv, envp) }
        }
        guard result == 0 else { throw fail("posix_spawn", result) }
        self.pid = pid
        self.input = ends[0].map(WriteEnd.init)
        self.output = ends[1].map(ReadEnd.init)
        self.errors = ends[2].map(ReadEnd.init)
    }

    deinit {
        // Never leave a zombie: a child still running is reaped by a thread that waits for it.
        guard poll() == nil else { return }
        let pid = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        }
    }

    /// Waits for the child to end and answers how; every later call answers the same.
    public func wait() -> Termination {
        if let termination = ended.withLock({ $0 }) { return termination }
        // Wait for the end without reaping (WNOWAIT), outside the lock, so that ``signal(_:)``
        // stays free meanwhile; the pid stays the child's until it is reaped below.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 {
            // ECHILD: another call reaped it meanwhile, under the lock, and recorded how it ended.
            if errno == ECHILD { break }
            precondition(errno == EINTR, "waitid(\(pid)) failed: errno \(errno)")
        }
        return ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 {
                // ECHILD here: something else in this process reaped our child (a waitpid(-1), or
                // SIGCHLD set to be ignored); how it ended is lost, and no test can go on honestly.
                precondition(errno == EINTR, "the child \(pid) (\(executable)) was reaped by someone else: errno \(errno)")
            }
            let termination = Self.termination(status)
            ended = termination
            return termination
        }
    }

    /// How the child ended if it has, reaping it then; `nil` while it runs. Does not wait.
    public func poll() -> Termination? {
        ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            var reaped = waitpid(pid, &status, WNOHANG)
            while reaped == -1, errno == EINTR { reaped = waitpid(pid, &status, WNOHANG) }
            guard reaped == pid else { return nil }
            ended = Self.termination(status)
            return ended
        }
    }

    /// Sends `number` to the child.
    /// - Returns: whether it was still running to receive it.
    @discardableResult
    public func signal(_ number: Int32) -> Bool {
        ended.withLock { ended in
            if ended != nil { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                ended = Self.termination(status)
                return false
            }
            return sendSignal(pid, number) == 0
        }
    }

    /// Kills the child with SIGKILL: no cleanup, no flush, as when the OS ends an app.
    /// - Returns: whether it was still running to be killed.
    @discardableResult
    public func kill() -> Bool {
        signal(SIGKILL)
    }

    /// The POSIX encoding, the same on Linux and Darwin: the low 7 bits are the signal that
    /// ended the process (0 when it exited), the next 8 its exit status.
    static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }
}

/// `kill(2)`, which the methods named `kill` hide.
private func sendSignal(_ pid: pid_t, _ number: Int32) -> Int32 {
    kill(pid, number)
}

/// `strings` as a NULL-terminated array of C strings, for the duration of `body`.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return body(pointers)
}
