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

/// What a run of the binary produced: its exit status and both streams.
struct ProcessResult {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs the `journal-inspect` binary to its end; its streams go to files, so a large output
/// never blocks it.
func runBinary(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
    let scratch = TemporaryDirectory("journal-inspect-run")
    let outURL = scratch.path("stdout")
    let errURL = scratch.path("stderr")
    guard FileManager.default.createFile(atPath: outURL.path, contents: nil),
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
    else { throw FixtureError.unexpected("cannot create the output files in \(scratch.url.path)") }
    let outHandle = try FileHandle(forWritingTo: outURL)
    let errHandle = try FileHandle(forWritingTo: errURL)
    let process = Process()
    process.executableURL = try inspectExecutable()
    process.arguments = arguments
    var base = ProcessInfo.processInfo.environment
    base.removeValue(forKey: "NO_COLOR")
    process.environment = base.merging(environment) { _, new in new }
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    process.waitUntilExit()
    try outHandle.close()
    try errHandle.close()
    return ProcessResult(
        status: process.terminationStatus,
        output: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        errors: String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
    )
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

    /// Interrupts the process (as Ctrl-C would, with SIGTERM here) and answers its exit status.
    /// One that ignores the interruption is killed after a while, so the test fails, not hangs.
    func stop() -> Int32 {
        watchdog.cancel()
        let pid = process.processIdentifier
        let process = self.process
        let killer = DispatchWorkItem { if process.isRunning { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: killer)
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        killer.cancel()
        return process.terminationStatus
    }
}
