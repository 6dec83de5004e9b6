import Foundation
import TestHarness
import OutboxTestServer
import OutboxTestServerPostgres
import Testing

@Suite("The outbox-test-server command line", .timeLimit(.minutes(10)))
struct ServerCommandLineTests {
    func configuration(_ arguments: [String]) throws -> TestServer.Configuration {
        guard case .run(let configuration) = try ServerCommandLine.parse(arguments).get() else {
            throw UnexpectedHelp()
        }
        return configuration
    }

    struct UnexpectedHelp: Error {}

    @Test func noArgumentsRunTheDefaults() throws {
        let configuration = try configuration([])
        #expect(configuration.port == 0)
        #expect(configuration.maxBodyBytes == 1 << 20)
        #expect(configuration.maxConnections == 64)
        #expect(configuration.maxBatchOperations == 100)
        #expect(configuration.readTimeout == 10)
        #expect(configuration.claimPolicy.retention == 30 * 86_400)
        guard case .memory = configuration.storage else {
            Issue.record("expected memory storage")
            return
        }
    }

    @Test func everyOptionIsApplied() throws {
        // --data-dir names a directory that may be created: a fresh one, whatever the machine holds.
        let parent = TemporaryDirectory()
        defer { parent.remove() }
        let data = parent.url.appendingPathComponent("x").path
        let configuration = try configuration([
            "--port", "8080", "--data-dir", data, "--max-body-bytes", "10", "--max-connections", "3",
            "--read-timeout", "0.5", "--retention-days", "45",
        ])
        guard case .lmdb(let directory) = configuration.storage else {
            Issue.record("expected lmdb storage")
            return
        }
        #expect(configuration.port == 8080)
        #expect(directory.path == data)
        #expect(configuration.maxBodyBytes == 10)
        #expect(configuration.maxConnections == 3)
        #expect(configuration.readTimeout == 0.5)
        #expect(configuration.claimPolicy.retention == 45 * 86_400)
    }

    @Test func helpIsAskedForWithEitherSpelling() throws {
        for flag in ["-h", "--help"] {
            guard case .help = try ServerCommandLine.parse(["--port", "1", flag]).get() else {
                Issue.record("expected help for \(flag)")
                continue
            }
        }
    }

    /// The ends of every range are accepted, and read as written.
    @Test(arguments: [
        (["--port", "0"], "port", 0.0), (["--port", "65535"], "port", 65_535),
        (["--max-body-bytes", "0"], "body", 0), (["--max-body-bytes", "1073741824"], "body", 1_073_741_824),
        (["--max-connections", "1"], "connections", 1), (["--max-connections", "4096"], "connections", 4_096),
        (["--max-batch-operations", "1"], "batch", 1), (["--max-batch-operations", "10000"], "batch", 10_000),
        (["--read-timeout", "0.001"], "timeout", 0.001), (["--read-timeout", "86400"], "timeout", 86_400),
        (["--retention-days", "0.5"], "retention", 43_200), (["--retention-days", "36500"], "retention", 36_500 * 86_400),
    ] as [([String], String, Double)])
    func theEndsOfEachRangeAreAccepted(_ arguments: [String], _ setting: String, _ expected: Double) throws {
        let configuration = try configuration(arguments)
        let value: Double = switch setting {
        case "port": Double(configuration.port)
        case "body": Double(configuration.maxBodyBytes)
        case "connections": Double(configuration.maxConnections)
        case "batch": Double(configuration.maxBatchOperations)
        case "timeout": configuration.readTimeout
        default: configuration.claimPolicy.retention
        }
        #expect(value == expected, "\(arguments)")
    }

    /// Each bad command line, and the words its message must hold: the option and what it takes.
    @Test(arguments: [
        (["--port"], "--port needs a value"),
        (["--port", "70000"], "--port expects a whole number from 0 to 65535, not '70000'"),
        (["--port", "-1"], "--port expects a whole number from 0 to 65535"),
        (["--port", "http"], "--port expects a whole number from 0 to 65535"),
        (["--max-body-bytes", "-1"], "--max-body-bytes expects a whole number from 0 to 1073741824"),
        (["--max-body-bytes", "1073741825"], "--max-body-bytes expects a whole number from 0 to 1073741824"),
        (["--max-body-bytes", "9223372036854775808"], "--max-body-bytes expects a whole number from 0 to 1073741824"),
        (["--max-body-bytes", "1e6"], "--max-body-bytes expects a whole number"),
        (["--max-connections", "0"], "--max-connections expects a whole number from 1 to 4096, not '0'"),
        (["--max-connections", "4097"], "--max-connections expects a whole number from 1 to 4096"),
        (["--max-batch-operations", "0"], "--max-batch-operations expects a whole number from 1 to 10000, not '0'"),
        (["--max-batch-operations", "10001"], "--max-batch-operations expects a whole number from 1 to 10000"),
        (["--read-timeout", "1e16"], "--read-timeout expects seconds over 0 and at most 86400, not '1e16'"),
        (["--read-timeout", "86400.5"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--read-timeout", "0"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--read-timeout", "-1"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--read-timeout", "nan"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--read-timeout", "inf"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--read-timeout", "ten"], "--read-timeout expects seconds over 0 and at most 86400"),
        (["--retention-days", "0"], "--retention-days expects days over 0 and at most 36500"),
        (["--retention-days", "36501"], "--retention-days expects days over 0 and at most 36500"),
        (["--retention-days", "1e308"], "--retention-days expects days over 0 and at most 36500"),
        (["--retention-days", "nan"], "--retention-days expects days over 0 and at most 36500"),
        (["--data-dir", ""], "--data-dir needs a directory path"),
        (["--frobnicate", "1"], "unknown option '--frobnicate'"),
        (["--bogus"], "unknown option '--bogus'"),
        (["--port", "1", "--bogus"], "unknown option '--bogus'"),
        (["-x"], "unknown option '-x'"),
        (["--bogus=1"], "unknown option '--bogus'"),
        (["--help=yes"], "--help takes no value"),
        (["--port="], "--port expects a whole number from 0 to 65535, not ''"),
        (["--port=70000"], "--port expects a whole number from 0 to 65535, not '70000'"),
        (["--data-dir="], "--data-dir needs a directory path"),
        (["stray"], "unexpected argument 'stray'"),
    ])
    func aBadCommandLineIsAUsageErrorSayingWhatIsAllowed(_ arguments: [String], _ words: String) {
        guard case .failure(let error) = ServerCommandLine.parse(arguments) else {
            Issue.record("\(arguments) should not parse")
            return
        }
        #expect(error.message.contains(words), "\(arguments): \(error.message)")
    }

    @Test func aValueMayFollowItsOptionAfterAnEqualsSign() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try configuration(["--port=0", "--max-body-bytes=10", "--read-timeout=0.5", "--data-dir=\(directory.url.path)"])
        #expect(configuration.port == 0 && configuration.maxBodyBytes == 10 && configuration.readTimeout == 0.5)
        guard case .lmdb(let url) = configuration.storage else {
            Issue.record("expected lmdb storage")
            return
        }
        #expect(url.path == directory.url.path)
    }

    @Test func aDataDirectoryThatIsAFileIsRefusedInWords() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.url.appendingPathComponent("data.mdb")
        try Data("not a directory".utf8).write(to: file)
        guard case .failure(let error) = ServerCommandLine.parse(["--data-dir", file.path]) else {
            Issue.record("a regular file was accepted as --data-dir")
            return
        }
        #expect(error.message == "--data-dir '\(file.path)' is a file, not a directory: name a directory for the LMDB storage")
        #expect(throws: DataDirectoryError.self) { try TestServer(.init(storage: .lmdb(directory: file))) }
    }

    @Test func aDataDirectoryWhoseParentsAreMissingIsRefusedAndNothingIsCreated() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.url.appendingPathComponent("typo/claims", isDirectory: true)
        guard case .failure(let error) = ServerCommandLine.parse(["--data-dir", missing.path]) else {
            Issue.record("a directory whose parent is missing was accepted")
            return
        }
        #expect(error.message.contains("its parent directory '\(missing.deletingLastPathComponent().path)' does not exist"), "\(error.message)")
        #expect(throws: DataDirectoryError.self) { try TestServer(.init(storage: .lmdb(directory: missing))) }
        #expect(!FileManager.default.fileExists(atPath: missing.deletingLastPathComponent().path), "nothing created")
        // One level inside an existing directory is created.
        let server = try TestServer(.init(storage: .lmdb(directory: directory.url.appendingPathComponent("claims"))))
        server.stop()
    }

    /// A server runs with every setting at the top of its range: none of them overflows a
    /// conversion on the way to the sockets.
    @Test func aServerStartsWithEveryNumberAtTheTopOfItsRange() async throws {
        let configuration = try configuration([
            "--max-body-bytes", "1073741824", "--max-connections", "4096", "--read-timeout", "86400", "--retention-days", "36500",
        ])
        let server = try TestServer(configuration)
        defer { server.stop() }
        let created = try await exchange(server.port, request(key: "op-1", body: #"{"id":"p-1"}"#))
        #expect(created.status == 201)
    }
}
