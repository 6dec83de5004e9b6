import Foundation
import OutboxTestServer
import OutboxTestServerPostgres
import Testing

/// The options of PostgreSQL storage and latency; the others are `ServerCommandLineTests`'.
@Suite("The outbox-test-server command line: PostgreSQL and latency")
struct ServerCommandLinePostgresTests {
    @Test func thePostgresOptionsAreApplied() throws {
        let parsed = try ServerCommandLine.parse([
            "--postgres", "host=/tmp/pg port=5433 dbname=claims sslmode=disable", "--pool-size", "3", "--latency-ms", "25",
        ]).get()
        guard case .run(let configuration) = parsed, case let (settings, poolSize)? = configuration.storage.postgres else {
            Issue.record("expected run with postgres storage")
            return
        }
        #expect(settings.conninfo == "host=/tmp/pg port=5433 dbname=claims sslmode=disable")
        #expect(poolSize == 3)
        #expect(configuration.latency == 0.025)
        guard case .run(let fromEnvironment) = try ServerCommandLine.parse(["--postgres", "env"]).get(),
            case let (environment, defaultSize)? = fromEnvironment.storage.postgres
        else {
            Issue.record("expected postgres storage from the environment")
            return
        }
        #expect(environment.conninfo.isEmpty, "libpq reads the PG* variables")
        #expect(defaultSize == ServerCommandLine.defaultPoolSize)
    }

    @Test func theEndsOfEachRangeAreAccepted() throws {
        for (arguments, poolSize, latency) in [
            (["--postgres", "env", "--pool-size", "1", "--latency-ms", "0"], 1, 0.0),
            (["--postgres", "env", "--pool-size", "1000", "--latency-ms", "60000"], 1000, 60.0),
        ] {
            guard case .run(let configuration) = try ServerCommandLine.parse(arguments).get(),
                case let (_, size)? = configuration.storage.postgres
            else {
                Issue.record("expected postgres storage for \(arguments)")
                continue
            }
            #expect(size == poolSize)
            #expect(configuration.latency == latency)
        }
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

    /// Each bad command line, and the words its message must hold.
    @Test(arguments: [
        (["--postgres", "nonsense"], "--postgres: "),
        (["--postgres", "env:OUTBOX_NO_SUCH_VARIABLE"], "the environment variable OUTBOX_NO_SUCH_VARIABLE is not set"),
        (["--pool-size", "4"], "--pool-size applies to --postgres storage only"),
        (["--postgres", "env", "--pool-size", "0"], "--pool-size expects a whole number from 1 to 1000, not '0'"),
        (["--postgres", "env", "--pool-size", "1001"], "--pool-size expects a whole number from 1 to 1000"),
        (["--postgres", "env", "--data-dir", "/tmp/x"], "--postgres and --data-dir choose two storages"),
        (["--latency-ms", "-1"], "--latency-ms expects a whole number from 0 to 60000, not '-1'"),
        (["--latency-ms", "60001"], "--latency-ms expects a whole number from 0 to 60000"),
        (["--latency-ms", "2.5"], "--latency-ms expects a whole number from 0 to 60000"),
    ] as [([String], String)])
    func badCommandLinesAreUsageErrorsSayingWhatToFix(_ arguments: [String], _ words: String) {
        guard case .failure(let error) = ServerCommandLine.parse(arguments) else {
            Issue.record("\(arguments) should not parse")
            return
        }
        #expect(error.message.contains(words), "\(error.message)")
    }
}
