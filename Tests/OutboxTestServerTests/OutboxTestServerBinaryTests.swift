import Foundation
import OutboxTestSupport
import OutboxTestServer
import Testing

@Suite("The outbox-test-server executable", .timeLimit(.minutes(1)))
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
    static func launch(_ arguments: [String], environment: [String: String] = [:]) throws -> (process: Process, output: Pipe, errors: Pipe) {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let (output, errors) = (Pipe(), Pipe())
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        return (process, output, errors)
    }

    /// Reads the first line, `listening on 127.0.0.1:PORT`, and answers the port.
    static func port(from output: Pipe) throws -> UInt16 {
        var bytes = Data()
        while !bytes.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            bytes += chunk
        }
        let line = String(decoding: bytes, as: UTF8.self)
        let prefix = "listening on 127.0.0.1:"
        guard line.hasPrefix(prefix), let port = UInt16(line.dropFirst(prefix.count).prefix { $0.isNumber }) else {
            throw BinaryError.noPortLine(line)
        }
        return port
    }

    @Test func theBinaryPrintsItsPortServesAndStopsOnSIGTERM() async throws {
        let (process, output, _) = try Self.launch(["--read-timeout", "2"])
        defer { if process.isRunning { process.terminate() } }

        let port = try await onThread { try Self.port(from: output) }

        let created = try await exchange(port, request(key: "op-1", body: #"{"id":"p-1"}"#))
        #expect(created.status == 201)
        let applied = try await exchange(port, request("GET", "/_control/applied"))
        #expect(applied.json as? [String: Int] == ["op-1": 1])

        process.terminate()
        let status = try await onThread { () -> Int32 in
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(status == 0, "a clean stop on SIGTERM")
    }

    @Test func aNumberOutOfRangeExits64NamingTheOptionAndTheRange() async throws {
        let (process, _, errors) = try Self.launch(["--read-timeout", "1e16"])
        defer { if process.isRunning { process.terminate() } }
        let (status, message) = try await onThread { () -> (Int32, String) in
            let bytes = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: bytes, as: UTF8.self))
        }
        #expect(process.terminationReason == .exit, "exited, not killed by a trap")
        #expect(status == 64)
        #expect(message.hasPrefix("outbox-test-server: --read-timeout expects seconds over 0 and at most 86400, not '1e16'"), "\(message)")
    }
}
