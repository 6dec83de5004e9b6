public import Foundation
import Synchronization

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
    public enum Ending: Equatable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it (9: SIGKILL).
        case signalled(Int32)
    }

    /// A line the child printed, with how long after its start it was read.
    public struct Line: Equatable, Sendable {
        public var text: String
        public var seconds: Double
    }

    public let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private var buffer = Data()
    private let started = DispatchTime.now()
    private let killSwitch: KillSwitch
    private var timer: (any DispatchSourceTimer)?
    private let errorReader: ErrorReader

    /// Starts `executable` (a name of this package's, e.g. `outbox-test-child`) with `arguments`,
    /// through `wrapper` when given (a command that runs what follows it, e.g. `setpriv ...` to
    /// run as another user).
    public init(_ executable: String, _ arguments: [String], through wrapper: [String] = []) throws {
        let built = try builtExecutable(named: executable)
        if let launcher = wrapper.first {
            process.executableURL = URL(fileURLWithPath: launcher)
            process.arguments = Array(wrapper.dropFirst()) + [built.path] + arguments
        } else {
            process.executableURL = built
            process.arguments = arguments
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        killSwitch = KillSwitch(pid: process.processIdentifier)
        errorReader = ErrorReader(errors.fileHandleForReading)
    }

    deinit {
        timer?.cancel()
    }

    /// The next line the child prints, blocking until it does.
    /// - Throws: ``Failure/ended(output:errors:)`` when the child's output ends first.
    public func readLine() throws -> String {
        while true {
            if let line = takeLine() { return line }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw Failure.ended(output: String(decoding: buffer, as: UTF8.self), errors: errorOutput) }
            buffer.append(chunk)
        }
    }

    /// Every line the child prints from now until its output ends (it exited or was killed),
    /// each with when it was read. A last line cut short by a kill is not one of them.
    /// Disarms ``kill(after:)``: the child has ended.
    public func readToEnd() -> [Line] {
        var lines: [Line] = []
        while true {
            let chunk = output.fileHandleForReading.availableData
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let line = takeLine() { lines.append(Line(text: line, seconds: seconds)) }
        }
        killSwitch.disarm()
        return lines
    }

    private func takeLine() -> String? {
        guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
        buffer.removeSubrange(buffer.startIndex...newline)
        return line
    }

    public func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Kills the child with SIGKILL: no cleanup, no flush, as when the OS ends an app.
    /// - Returns: whether it was still running to be killed.
    @discardableResult
    public func kill() -> Bool {
        guard process.isRunning else { return false }
        return Foundation.kill(process.processIdentifier, SIGKILL) == 0
    }

    /// Kills the child with SIGKILL from a timer `seconds` after it started (at once if that is
    /// past), whatever it is doing then, unless its output has ended first (see ``readToEnd()``).
    public func kill(after seconds: Double) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .userInitiated))
        timer.schedule(deadline: started + seconds, leeway: .microseconds(100))
        timer.setEventHandler { [killSwitch] in killSwitch.fire() }
        timer.resume()
        self.timer = timer
    }

    /// Waits for the child to end; answers its status.
    @discardableResult
    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits for the child to end; answers how.
    public func waitForEnding() -> Ending {
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
    }

    /// What the child wrote to standard error, once it has ended.
    public var errorOutput: String {
        errorReader.text
    }
}

/// The kill a timer delivers, unless the child ended first.
///
/// Foundation reaps the child on a thread of its own as soon as it exits, after which its pid
/// may in principle be given to another process. The switch is disarmed as soon as the child's
/// output ends, which is when it exits; a kill can only meet a reaped pid in the instant between
/// the two, and Linux hands out pids in sequence, so reaching a reused one would take the
/// whole pid space wrapping around in that instant.
private final class KillSwitch: Sendable {
    private let pid: pid_t
    private let armed = Mutex(true)

    init(pid: pid_t) {
        self.pid = pid
    }

    func fire() {
        armed.withLock { armed in
            if armed { _ = kill(pid, SIGKILL) }
            armed = false
        }
    }

    func disarm() {
        armed.withLock { $0 = false }
    }
}

/// What the child writes to standard error, read to its end on another thread so that the child
/// never blocks on a full pipe.
private final class ErrorReader: Sendable {
    private let data = Mutex(Data())
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        DispatchQueue.global().async { [self] in
            let read = handle.readDataToEndOfFile()
            data.withLock { $0 = read }
            done.signal()
        }
    }

    /// Everything written, once the child has closed standard error (ended).
    var text: String {
        done.wait()
        done.signal()
        return String(decoding: data.withLock { $0 }, as: UTF8.self)
    }
}
