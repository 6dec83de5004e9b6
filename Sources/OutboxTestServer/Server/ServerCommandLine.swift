import Foundation
import PostgresClaimStore

/// The `outbox-test-server` command line, parsed without running anything.
///
/// ```text
/// outbox-test-server [--port N] [--data-dir PATH] [--max-body-bytes N] [--max-connections N]
///                    [--read-timeout SECONDS] [--retention-days DAYS]
///                    [--postgres CONNINFO|env|env:VARIABLE] [--pool-size N] [--latency-ms MS]
/// ```
public enum ServerCommandLine {
    /// What the command line asks for.
    public enum Command: Sendable {
        case run(TestServer.Configuration)
        case help
    }

    /// A command line that cannot be run: exit 64 with this message.
    public struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public static let usage = """
        usage: outbox-test-server [options]

        A loopback HTTP test server with idempotency claims and fault injection.
        Prints "listening on 127.0.0.1:PORT" on its first line, then serves until
        SIGINT or SIGTERM.

        options:
          --port N                 port on 127.0.0.1 (default 0: the system picks one)
          --data-dir PATH          keep claims and records in LMDB at PATH (default: memory)
          --max-body-bytes N       largest request body (default 1048576)
          --max-connections N      connections served at once (default 64)
          --read-timeout SECONDS   longest a request may take to arrive (default 10)
          --retention-days DAYS    how long claims replay (default 30)
          --postgres WHERE         keep claims and records in PostgreSQL, shared by every server
                                   started on the same database: a libpq connection string
                                   without a password ("host=db dbname=claims sslmode=require"),
                                   env (the PG* variables), or env:VARIABLE (a connection string
                                   in VARIABLE, which may hold a password)
          --pool-size N            PostgreSQL connections at most, 1 to 1000 (default 8)
          --latency-ms MS          added before each business request, 0 to 60000 (default 0)
          -h, --help               show this help
        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) -> Result<Command, UsageError> {
        var configuration = TestServer.Configuration()
        var postgres: PostgresConnectionSettings?
        var poolSize: Int?
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            if option == "-h" || option == "--help" { return .success(.help) }
            guard let value = remaining.popFirst() else {
                return .failure(UsageError(message: option.hasPrefix("-") ? "\(option) needs a value" : "unexpected argument '\(option)'"))
            }
            switch option {
            case "--port":
                guard let port = UInt16(value) else { return .failure(invalid(option, value, "a port number")) }
                configuration.port = port
            case "--data-dir":
                configuration.storage = .lmdb(directory: URL(fileURLWithPath: value, isDirectory: true))
            case "--max-body-bytes":
                guard let bytes = Int(value), bytes >= 0 else { return .failure(invalid(option, value, "a byte count")) }
                configuration.maxBodyBytes = bytes
            case "--max-connections":
                guard let count = Int(value), count > 0 else { return .failure(invalid(option, value, "a positive count")) }
                configuration.maxConnections = count
            case "--read-timeout":
                guard let seconds = TimeInterval(value), seconds > 0, seconds.isFinite else {
                    return .failure(invalid(option, value, "a positive number of seconds"))
                }
                configuration.readTimeout = seconds
            case "--retention-days":
                guard let days = Double(value), days > 0, days.isFinite else {
                    return .failure(invalid(option, value, "a positive number of days"))
                }
                configuration.claimPolicy.retention = days * 86_400
            case "--postgres":
                switch postgresSettings(value) {
                case .success(let settings): postgres = settings
                case .failure(let error): return .failure(error)
                }
            case "--pool-size":
                guard let count = Int(value), (1...1000).contains(count) else {
                    return .failure(invalid(option, value, "a count from 1 to 1000"))
                }
                poolSize = count
            case "--latency-ms":
                guard let milliseconds = Double(value), milliseconds.isFinite, (0...60_000).contains(milliseconds) else {
                    return .failure(invalid(option, value, "milliseconds from 0 to 60000"))
                }
                configuration.latency = milliseconds / 1000
            default:
                return .failure(UsageError(message: "unknown option '\(option)'"))
            }
        }
        if let postgres {
            if case .lmdb = configuration.storage {
                return .failure(UsageError(message: "--postgres and --data-dir choose two storages; give one"))
            }
            configuration.storage = .postgres(postgres, poolSize: poolSize ?? defaultPoolSize)
        } else if poolSize != nil {
            return .failure(UsageError(message: "--pool-size applies to --postgres storage only"))
        }
        return .success(.run(configuration))
    }

    private static func invalid(_ option: String, _ value: String, _ expected: String) -> UsageError {
        UsageError(message: "\(option) expects \(expected), not '\(value)'")
    }
}
