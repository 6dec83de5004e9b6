public import Foundation

/// An executable of this package, built beside the test bundle: found by walking up from the
/// test process's executable (Linux) or from the loaded `.xctest` bundle (Apple platforms, where
/// the process is the `xctest` tool).
public func builtExecutable(named name: String) throws -> URL {
    let starts = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        + Bundle.allBundles.map(\.bundleURL).filter { $0.pathExtension == "xctest" }
    for start in starts {
        var directory = start
        for _ in 0..<5 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
    }
    throw ChildProcess.Failure.notBuilt(name)
}

/// A child process spoken to line by line over its standard input and output: a second
/// process reading a live journal, or one the crash tests kill at a random moment.
public final class ChildProcess {
    public enum Failure: Error, CustomStringConvertible {
        case notBuilt(String)
        case ended(output: String, errors: String)

        public var description: String {
            switch self {
            case .notBuilt(let name): "\(name) is not built beside \(CommandLine.arguments[0])"
            case .ended(let output, let errors):
                "the child ended; its last output: \(output.suffix(300)); its standard error: \(errors.suffix(500))"
            }
        }
    }

    /// How the child ended.
    public typealias Ending = SpawnedProcess.Termination

    /// A line the child printed, with how long after its start it was read.
    public struct Line: Equatable, Sendable {
        public var text: String
        public var seconds: Double
    }

    public let process: SpawnedProcess
    private var lines: LineReader
    private let errors: CollectedOutput
    private let started = DispatchTime.now()
    private var scheduledKill: ScheduledSignal?

    /// Starts `executable` (a name of this package's, e.g. `outbox-test-child`) with `arguments`,
    /// through `wrapper` when given (a command that runs what follows it, e.g. `setpriv ...` to
    /// run as another user).
    public init(_ executable: String, _ arguments: [String], through wrapper: [String] = []) throws {
        let built = try builtExecutable(named: executable).path
        let command = wrapper + [built] + arguments
        process = try SpawnedProcess(command[0], Array(command.dropFirst()), input: .pipe, output: .pipe, errors: .pipe)
        // All three streams were asked for as pipes.
        lines = LineReader(process.output!)
        errors = process.errors!.collect()
    }

    /// The next line the child prints, blocking until it does.
    /// - Throws: ``Failure/ended(output:errors:)`` when the child's output ends first.
    public func readLine() throws -> String {
        guard let line = lines.next() else { throw Failure.ended(output: lines.rest, errors: errorOutput) }
        return line
    }

    /// Every line the child prints from now until its output ends (it exited or was killed),
    /// each with when it was read. A last line cut short by a kill is not one of them.
    /// Disarms ``kill(after:)``: the child has ended.
    public func readToEnd() -> [Line] {
        var read: [Line] = []
        while let line = lines.next() {
            read.append(Line(text: line, seconds: Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9))
        }
        scheduledKill?.cancel()
        return read
    }

    /// Sends `line` to the child's standard input; a child that has ended reads nothing.
    public func send(_ line: String) {
        try? process.input?.write(line + "\n")
    }

    /// Kills the child with SIGKILL: no cleanup, no flush, as when the OS ends an app.
    /// - Returns: whether it was still running to be killed.
    @discardableResult
    public func kill() -> Bool {
        process.kill()
    }

    /// Kills the child with SIGKILL from a timer `seconds` after it started (at once if that is
    /// past), whatever it is doing then, unless its output has ended first (see ``readToEnd()``).
    public func kill(after seconds: Double) {
        scheduledKill = process.signal(SIGKILL, at: started + seconds)
    }

    /// Waits for the child to end; answers its exit status, or the signal's number when one
    /// ended it.
    @discardableResult
    public func wait() -> Int32 {
        switch process.wait() {
        case .exited(let status), .signalled(let status): status
        }
    }

    /// Waits for the child to end; answers how.
    public func waitForEnding() -> Ending {
        process.wait()
    }

    /// What the child wrote to standard error, once it has ended.
    public var errorOutput: String {
        errors.text
    }
}
