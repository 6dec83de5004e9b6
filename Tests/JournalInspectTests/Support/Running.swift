import Foundation
import TestHarness
import JournalInspect
import Synchronization

/// Text written by a command run in-process.
final class CapturedOutput: TextOutput {
    private let buffer = Mutex("")

    func write(_ text: String) {
        buffer.withLock { $0 += text }
    }

    var text: String { buffer.withLock { $0 } }
}

/// What one run of the tool produced.
struct RunResult {
    var code: ExitCode
    var output: String
    var errors: String
}

/// Runs `journal-inspect` in this process with a fixed clock, colour off unless asked.
func inspect(_ arguments: [String], now: Date = fixtureStart.addingTimeInterval(7200), color: Bool = false) -> RunResult {
    let output = CapturedOutput()
    let errors = CapturedOutput()
    let code = JournalInspect.run(arguments, context: InspectContext(
        now: now, standardOutput: output, standardError: errors, style: Style(enabled: color)
    ))
    return RunResult(code: code, output: output.text, errors: errors.text)
}

/// The `journal-inspect` executable, built beside the test bundle.
func inspectExecutable() throws -> URL {
    try builtExecutable(named: "journal-inspect")
}

/// What a run of the binary produced: how it ended and both streams.
struct ProcessResult {
    /// The exit status; when a signal ended the process, that signal's number.
    var status: Int32
    var output: String
    var errors: String
    /// The signal that ended the process, when one did.
    var signal: Int32? = nil
    /// Whether the deadline passed and the process was stopped.
    var timedOut = false
}

/// Runs the `journal-inspect` binary to its end; its streams go to files, so a large output
/// never blocks it.
/// - Parameters:
///   - user: run as this other user (``OtherUser``), to meet the permission bits as a support
///     engineer's account does.
///   - deadlineSeconds: a hang guard, never a timing: past it the process is sent SIGTERM
///     (which it passes on to its reading child), then SIGKILL, and the result says it timed
///     out, so a hang fails the test instead of blocking it. Minutes: on a loaded machine a
///     command that takes a second alone may wait a minute for a core.
///   - keepOutput: `false` sends standard output to /dev/null (a fuzzer needs only the status).
///   - wrapper: a command the binary runs through, its path and arguments following it: a
///     shell that sets a limit or a umask first (`sh -c 'ulimit -f 16; exec "$0" "$@"'`).
func runBinary(_ arguments: [String], environment: [String: String] = [:], user: OtherUser? = nil,
               deadlineSeconds: Double = hangGuardSeconds, keepOutput: Bool = true, through wrapper: [String] = []) throws -> ProcessResult {
    let scratch = TemporaryDirectory("journal-inspect-run")
    let outPath = scratch.path("stdout").path
    let errPath = scratch.path("stderr").path
    let executable = try inspectExecutable().path
    let command = (user?.command ?? []) + wrapper + [executable] + arguments
    var base = ProcessInfo.processInfo.environment
    base.removeValue(forKey: "NO_COLOR")
    let process = try SpawnedProcess(
        command[0], Array(command.dropFirst()), environment: base.merging(environment) { _, new in new },
        output: keepOutput ? .file(outPath) : .null, errors: .file(errPath))
    let interrupt = process.signal(SIGTERM, after: deadlineSeconds)
    let kill = process.signal(SIGKILL, after: deadlineSeconds + 5)
    let ending = process.wait()
    interrupt.cancel()
    kill.cancel()
    let (status, signal): (Int32, Int32?) = switch ending {
    case .exited(let status): (status, nil)
    case .signalled(let number): (number, number)
    }
    return ProcessResult(
        status: status,
        output: keepOutput ? String(decoding: try Data(contentsOf: URL(fileURLWithPath: outPath)), as: UTF8.self) : "",
        errors: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self),
        signal: signal,
        timedOut: interrupt.fired
    )
}

/// Another user than the tests', to run the binary as where permission bits must count.
///
/// Root reads and writes whatever the bits say, so a test running as root (as CI does) runs the
/// binary as `nobody` through util-linux's `setpriv`; any other user is bound by the bits
/// already, and runs it directly.
struct OtherUser: Sendable {
    /// The command that runs what follows it as that user; empty when no switch is needed.
    let command: [String]

    /// The user to run as here; `nil` when running as root without `setpriv`.
    static let available: OtherUser? = {
        guard getuid() == 0 else { return OtherUser(command: []) }
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
        return setpriv.map { OtherUser(command: [$0, "--reuid=65534", "--regid=65534", "--clear-groups"]) }
    }()
}

/// How long a run of the binary may take before it is stopped as hung: a guard, never a timing.
let hangGuardSeconds: Double = 300

/// A running `journal-inspect`, read line by line as it prints.
///
/// A test signals it only once it is ready, on the follower's own word: a line it printed
/// after installing its handler, or the step it announced (``StepHook``, through
/// `JOURNAL_INSPECT_STEPS`). It ends because it handled the signal; the guard that kills it
/// after ``hangGuardSeconds`` only turns a hang into a failure.
final class RunningInspector {
    let process: SpawnedProcess
    private var lines: LineReader
    private var errorLines: LineReader
    private let hangGuard: ScheduledSignal

    /// - Parameter steps: the value of `JOURNAL_INSPECT_STEPS` (`announce`, `hold:<step>`,
    ///   with `,pipe-only`); `nil` sets none. Standard error is a pipe read by ``step(_:)``:
    ///   announcing, the follower blocks once it fills, so a test that announces reads on.
    /// - Parameter wrapper: a command the binary runs through, as ``runBinary(_:environment:user:deadlineSeconds:keepOutput:through:)``'s.
    init(_ arguments: [String], steps: String? = nil, through wrapper: [String] = []) throws {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "NO_COLOR")
        environment["JOURNAL_INSPECT_STEPS"] = steps
        let command = wrapper + [try inspectExecutable().path] + arguments
        process = try SpawnedProcess(command[0], Array(command.dropFirst()), environment: environment, output: .pipe, errors: .pipe)
        // Started with both output streams piped.
        lines = LineReader(process.output!)
        errorLines = LineReader(process.errors!)
        hangGuard = process.signal(SIGKILL, after: hangGuardSeconds)
    }

    /// The next line printed, waiting for it; `nil` once the process has ended.
    func nextLine() -> String? {
        lines.next()
    }

    /// Every line still to be printed, until no process holds the output any more: neither the
    /// tool nor its reading child.
    func remainingLines() -> [String] {
        var rest: [String] = []
        while let line = lines.next() { rest.append(line) }
        return rest
    }

    /// Closes this end of the standard output pipe: the follower's next write meets a reader
    /// that has gone.
    func closeOutput() {
        process.output?.close()
    }

    /// Waits until the follower announces `step` (or says it is held there) on standard error;
    /// answers the pid that said so. Throws if standard error ends first.
    @discardableResult
    func step(_ step: String) throws -> pid_t {
        while let line = errorLines.next() {
            for prefix in ["journal-inspect: step \(step) (pid ", "journal-inspect: held at \(step) (pid "] where line.hasPrefix(prefix) {
                if let pid = pid_t(line.dropFirst(prefix.count).dropLast()) { return pid }
            }
        }
        throw FixtureError.unexpected("journal-inspect's standard error ended before it reached \(step): \(errorLines.rest)")
    }

    /// Every line still to come on standard error, until no process holds it any more.
    func remainingErrors() -> [String] {
        var rest: [String] = []
        while let line = errorLines.next() { rest.append(line) }
        return rest
    }

    /// Interrupts the process (as Ctrl-C would, with SIGTERM here, or `signal`) and answers its
    /// exit status, or the signal's number when one ended it (see ``endedBySignal``).
    func stop(with signal: Int32 = SIGTERM) -> Int32 {
        process.signal(signal)
        return ending()
    }

    /// Waits for the process to end; answers its exit status, or the signal's number when one
    /// ended it.
    func ending() -> Int32 {
        let ending = process.wait()
        hangGuard.cancel()
        switch ending {
        case .exited(let status), .signalled(let status): return status
        }
    }

    /// Whether the hang guard killed the process.
    var hung: Bool { hangGuard.fired }

    /// Whether the process ended of a signal rather than by exiting.
    var endedBySignal: Bool {
        if case .signalled = process.wait() { true } else { false }
    }
}
