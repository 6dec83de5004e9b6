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
///   - deadlineSeconds: past it the process is sent SIGTERM (which it passes on to its reading
///     child), then SIGKILL, and the result says it timed out: a hang fails the test, never
///     blocks it.
///   - keepOutput: `false` sends standard output to /dev/null (a fuzzer needs only the status).
///   - wrapper: a command the binary runs through, its path and arguments following it: a
///     shell that sets a limit or a umask first (`sh -c 'ulimit -f 16; exec "$0" "$@"'`).
func runBinary(_ arguments: [String], environment: [String: String] = [:], user: OtherUser? = nil,
               deadlineSeconds: Double = 60, keepOutput: Bool = true, through wrapper: [String] = []) throws -> ProcessResult {
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

/// A running `journal-inspect`, read line by line as it prints.
final class RunningInspector {
    let process: SpawnedProcess
    private var lines: LineReader
    private let watchdog: ScheduledSignal

    /// - Parameter deadlineSeconds: the process is killed after this long whatever happens, so a
    ///   broken test fails instead of hanging.
    init(_ arguments: [String], deadlineSeconds: Double = 30) throws {
        process = try SpawnedProcess(try inspectExecutable().path, arguments, output: .pipe, errors: .null)
        // Started with its standard output piped.
        lines = LineReader(process.output!)
        watchdog = process.signal(SIGKILL, after: deadlineSeconds)
    }

    /// The next line printed, waiting for it; `nil` once the process has ended.
    func nextLine() -> String? {
        lines.next()
    }

    /// Interrupts the process (as Ctrl-C would, with SIGTERM here, or `signal`) and answers its
    /// exit status, or the signal's number when one ended it (see ``endedBySignal``). One that
    /// ignores the interruption is killed after a while, so the test fails, not hangs.
    func stop(with signal: Int32 = SIGTERM) -> Int32 {
        watchdog.cancel()
        let killer = process.signal(SIGKILL, after: 10)
        process.signal(signal)
        let ending = process.wait()
        killer.cancel()
        switch ending {
        case .exited(let status), .signalled(let status): return status
        }
    }

    /// Whether the process ended of a signal rather than by exiting.
    var endedBySignal: Bool {
        if case .signalled = process.wait() { true } else { false }
    }
}
