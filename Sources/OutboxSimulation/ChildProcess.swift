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
/// process reading a live journal, or one the crash tests kill.
public final class ChildProcess {
    public enum Failure: Error, CustomStringConvertible {
        case notBuilt(String)
        case ended(output: String)

        public var description: String {
            switch self {
            case .notBuilt(let name): "\(name) is not built beside \(CommandLine.arguments[0])"
            case .ended(let output): "the child ended; its last output: \(output.suffix(300))"
            }
        }
    }

    public let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    /// Starts `executable` (a name of this package's, e.g. `outbox-test-child`) with `arguments`.
    public init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = try builtExecutable(named: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line the child prints, blocking until it does.
    /// - Throws: ``Failure/ended(output:)`` when the child's output ends first.
    public func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw Failure.ended(output: String(decoding: buffer, as: UTF8.self)) }
            buffer.append(chunk)
        }
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

    /// Waits for the child to end; answers its status.
    @discardableResult
    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}
