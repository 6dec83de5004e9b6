import Foundation

/// The `outbox-test-child` executable, built beside the test bundle.
func childExecutable() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("outbox-test-child")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory.deleteLastPathComponent()
    }
    throw ChildProcessError.notBuilt
}

enum ChildProcessError: Error {
    case notBuilt
    case ended(String)
}

/// A child process spoken to line by line over its standard input and output.
final class ChildProcess {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(_ arguments: [String]) throws {
        process.executableURL = try childExecutable()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line the child prints (blocking until it does).
    func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw ChildProcessError.ended(String(decoding: buffer, as: UTF8.self)) }
            buffer.append(chunk)
        }
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Waits for the child to exit; answers its status.
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}
