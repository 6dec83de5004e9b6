import Foundation
import TestHarness
import OutboxTestServer
import Testing

@Suite("The outbox-test-server executable", .timeLimit(.minutes(10)))
struct OutboxTestServerBinaryTests {
    /// The executable, built beside the test bundle: found by walking up from the test
    /// process's executable (Linux) or from the loaded `.xctest` bundle (Apple platforms, where
    /// the process is the `xctest` tool).
    static func executable() throws -> URL {
        try builtExecutable(named: "outbox-test-server")
    }

    enum BinaryError: Error {
        case noPortLine(String)
    }

    /// The executable started with `arguments` (and `environment` added to this process's), its
    /// standard output and error piped.
    static func launch(_ arguments: [String], environment: [String: String] = [:]) throws -> SpawnedProcess {
        try SpawnedProcess(
            try executable().path, arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: .pipe, errors: .pipe)
    }

    /// Reads the first line, `listening on 127.0.0.1:PORT`, and answers the port.
    static func port(from process: SpawnedProcess) throws -> UInt16 {
        // The process was launched with its output piped.
        var lines = LineReader(process.output!)
        let line = lines.next() ?? lines.rest
        let prefix = "listening on 127.0.0.1:"
        guard line.hasPrefix(prefix), let port = UInt16(line.dropFirst(prefix.count).prefix { $0.isNumber }) else {
            throw BinaryError.noPortLine(line)
        }
        return port
    }

    @Test func theBinaryPrintsItsPortServesAndStopsOnSIGTERM() async throws {
        let process = try Self.launch(["--read-timeout", "2"])
        defer { process.signal(SIGTERM) }

        let port = try await onThread { try Self.port(from: process) }

        let created = try await exchange(port, request(key: "op-1", body: #"{"id":"p-1"}"#))
        #expect(created.status == 201)
        let applied = try await exchange(port, request("GET", "/_control/applied"))
        #expect(applied.appliedCounts == ["op-1": 1])

        process.signal(SIGTERM)
        let ending = try await onThread { process.wait() }
        #expect(ending == .exited(0), "a clean stop on SIGTERM")
    }

    @Test func aDataDirectoryThatIsAFileExits64InWordsWithoutASystemErrorDump() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.url.appendingPathComponent("claims")
        try Data("x".utf8).write(to: file)
        let process = try Self.launch(["--data-dir", file.path])
        defer { process.signal(SIGTERM) }
        let (ending, message) = try await onThread { () -> (SpawnedProcess.Termination, String) in
            // Launched with its standard error piped.
            let bytes = process.errors!.readToEnd()
            return (process.wait(), String(decoding: bytes, as: UTF8.self))
        }
        #expect(ending == .exited(64))
        #expect(message.hasPrefix("outbox-test-server: --data-dir '\(file.path)' is a file, not a directory"), "\(message)")
        #expect(!message.contains("NSCocoaErrorDomain") && !message.contains("Code="), "\(message)")
    }

    @Test func aNumberOutOfRangeExits64NamingTheOptionAndTheRange() async throws {
        let process = try Self.launch(["--read-timeout", "1e16"])
        defer { process.signal(SIGTERM) }
        let (ending, message) = try await onThread { () -> (SpawnedProcess.Termination, String) in
            // Launched with its standard error piped.
            let bytes = process.errors!.readToEnd()
            return (process.wait(), String(decoding: bytes, as: UTF8.self))
        }
        #expect(ending == .exited(64), "exited 64, not killed by a trap")
        #expect(message.hasPrefix("outbox-test-server: --read-timeout expects seconds over 0 and at most 86400, not '1e16'"), "\(message)")
    }
}
