import Foundation
import OutboxTestSupport
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
func runBinary(_ arguments: [String], environment: [String: String] = [:], user: OtherUser? = nil,
               deadlineSeconds: Double = 60, keepOutput: Bool = true) throws -> ProcessResult {
    let scratch = TemporaryDirectory("journal-inspect-run")
    let outURL = keepOutput ? scratch.path("stdout") : URL(fileURLWithPath: "/dev/null")
    let errURL = scratch.path("stderr")
    guard !keepOutput || FileManager.default.createFile(atPath: outURL.path, contents: nil),
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
    else { throw FixtureError.unexpected("cannot create the output files in \(scratch.url.path)") }
    let outHandle = try FileHandle(forWritingTo: outURL)
    let errHandle = try FileHandle(forWritingTo: errURL)
    let process = Process()
    let executable = try inspectExecutable()
    if let user, let switcher = user.command.first {
        process.executableURL = URL(fileURLWithPath: switcher)
        process.arguments = Array(user.command.dropFirst()) + [executable.path] + arguments
    } else {
        process.executableURL = executable
        process.arguments = arguments
    }
    var base = ProcessInfo.processInfo.environment
    base.removeValue(forKey: "NO_COLOR")
    process.environment = base.merging(environment) { _, new in new }
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    let timedOut = Atomic<Bool>(false)
    let pid = process.processIdentifier
    let stop = DispatchWorkItem {
        guard process.isRunning else { return }
        timedOut.store(true, ordering: .relaxed)
        kill(pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + 5) { if process.isRunning { kill(pid, SIGKILL) } }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + deadlineSeconds, execute: stop)
    process.waitUntilExit()
    stop.cancel()
    try outHandle.close()
    try errHandle.close()
    let signaled = process.terminationReason == .uncaughtSignal
    return ProcessResult(
        status: process.terminationStatus,
        output: keepOutput ? String(decoding: try Data(contentsOf: outURL), as: UTF8.self) : "",
        errors: String(decoding: try Data(contentsOf: errURL), as: UTF8.self),
        signal: signaled ? process.terminationStatus : nil,
        timedOut: timedOut.load(ordering: .relaxed)
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
    let process = Process()
    private let output = Pipe()
    private var buffer = Data()
    private let watchdog: DispatchWorkItem

    /// - Parameter deadlineSeconds: the process is killed after this long whatever happens, so a
    ///   broken test fails instead of hanging.
    init(_ arguments: [String], deadlineSeconds: Double = 30) throws {
        process.executableURL = try inspectExecutable()
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let process = self.process
        let pid = process.processIdentifier
        watchdog = DispatchWorkItem { if process.isRunning { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + deadlineSeconds, execute: watchdog)
    }

    /// The next line printed, waiting for it; `nil` once the process has ended.
    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// Interrupts the process (as Ctrl-C would, with SIGTERM here, or `signal`) and answers its
    /// exit status, or the signal's number when one ended it (see ``endedBySignal``). One that
    /// ignores the interruption is killed after a while, so the test fails, not hangs.
    func stop(with signal: Int32 = SIGTERM) -> Int32 {
        watchdog.cancel()
        let pid = process.processIdentifier
        let process = self.process
        let killer = DispatchWorkItem { if process.isRunning { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: killer)
        if process.isRunning { kill(pid, signal) }
        process.waitUntilExit()
        killer.cancel()
        return process.terminationStatus
    }

    /// Whether the process ended of a signal rather than by exiting.
    var endedBySignal: Bool { process.terminationReason == .uncaughtSignal }
}
