import Foundation
import OutboxSimulation
import OutboxTestServer
import Testing

@Suite("The outbox-test-server executable", .timeLimit(.minutes(1)))
struct OutboxTestServerBinaryTests {
    @Test func theBinaryPrintsItsPortServesAndStopsOnSIGTERM() async throws {
        let server = try await onThread { try ServerProcess(["--read-timeout", "2"]) }
        let created = try await exchange(server.port, request(key: "op-1", body: #"{"id":"p-1"}"#))
        #expect(created.status == 201)
        let applied = try await exchange(server.port, request("GET", "/_control/applied"))
        #expect(applied.json as? [String: Int] == ["op-1": 1])
        let status = try await onThread { server.terminate() }
        #expect(status == 0, "a clean stop on SIGTERM")
    }
}

@Suite("The outbox-test-server command line")
struct ServerCommandLineTests {
    @Test func noArgumentsRunTheDefaults() throws {
        guard case .run(let configuration) = try ServerCommandLine.parse([]).get() else {
            Issue.record("expected run")
            return
        }
        #expect(configuration.port == 0)
        #expect(configuration.maxBodyBytes == 1 << 20)
        guard case .memory = configuration.storage else {
            Issue.record("expected memory storage")
            return
        }
    }

    @Test func everyOptionIsApplied() throws {
        let parsed = try ServerCommandLine.parse([
            "--port", "8080", "--data-dir", "/tmp/x", "--max-body-bytes", "10", "--max-connections", "3",
            "--read-timeout", "0.5", "--retention-days", "45",
        ]).get()
        guard case .run(let configuration) = parsed, case .lmdb(let directory) = configuration.storage else {
            Issue.record("expected run with lmdb storage")
            return
        }
        #expect(configuration.port == 8080)
        #expect(directory.path == "/tmp/x")
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

    @Test func thePostgresOptionsAreApplied() throws {
        let parsed = try ServerCommandLine.parse([
            "--postgres", "host=/tmp/pg port=5433 dbname=claims sslmode=disable", "--pool-size", "3", "--latency-ms", "2.5",
        ]).get()
        guard case .run(let configuration) = parsed, case .postgres(let settings, let poolSize) = configuration.storage else {
            Issue.record("expected run with postgres storage")
            return
        }
        #expect(settings.conninfo == "host=/tmp/pg port=5433 dbname=claims sslmode=disable")
        #expect(poolSize == 3)
        #expect(configuration.latency == 0.0025)
        guard case .run(let fromEnvironment) = try ServerCommandLine.parse(["--postgres", "env"]).get(),
            case .postgres(let environment, let defaultSize) = fromEnvironment.storage
        else {
            Issue.record("expected postgres storage from the environment")
            return
        }
        #expect(environment.conninfo.isEmpty, "libpq reads the PG* variables")
        #expect(defaultSize == ServerCommandLine.defaultPoolSize)
    }

    @Test func aPasswordOnTheCommandLineIsRefusedWithWhereToPutIt() throws {
        for conninfo in ["host=db password=secret", "postgresql://claims:secret@db/claims"] {
            guard case .failure(let error) = ServerCommandLine.parse(["--postgres", conninfo]) else {
                Issue.record("a password was accepted on the command line")
                continue
            }
            #expect(error.message.contains("PGPASSWORD") && !error.message.contains("secret"))
        }
    }

    @Test(arguments: [
        ["--port"], ["--port", "70000"], ["--read-timeout", "-1"], ["--max-connections", "0"], ["--frobnicate", "1"], ["stray"],
        ["--postgres", "nonsense"], ["--postgres", "env:OUTBOX_NO_SUCH_VARIABLE"], ["--pool-size", "4"],
        ["--postgres", "env", "--pool-size", "0"], ["--postgres", "env", "--pool-size", "1001"],
        ["--postgres", "env", "--data-dir", "/tmp/x"], ["--latency-ms", "-1"], ["--latency-ms", "60001"], ["--latency-ms", "nan"],
    ])
    func badCommandLinesAreUsageErrors(_ arguments: [String]) {
        guard case .failure(let error) = ServerCommandLine.parse(arguments) else {
            Issue.record("\(arguments) should not parse")
            return
        }
        #expect(!error.message.isEmpty)
    }
}
