import Foundation
public import OutboxTestServer
import PostgresClaimStore

/// The `outbox-test-server` command line, parsed without running anything.
///
/// ```text
/// outbox-test-server [--port N] [--data-dir PATH] [--max-body-bytes N] [--max-connections N]
///                    [--max-batch-operations N] [--read-timeout SECONDS] [--retention-days DAYS]
///                    [--postgres CONNINFO|env|env:VARIABLE] [--pool-size N] [--latency-ms MS]
///                    [--swift-storage-url URL --swift-auth-token env:VAR --swift-temp-url-key env:VAR
///                     --swift-container NAME [--segment-bytes N] [--grant-lifetime S] [--max-upload-bytes N]]
/// ```
///
/// Every number is range-checked here, so a value the server cannot hold (a timeout that
/// overflows milliseconds, a retention that overflows a date) is a usage error, never a trap.
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

    /// The values each numeric option accepts.
    public enum Bounds {
        /// Any port; 0 lets the system pick one.
        public static let port: ClosedRange<Int> = 0...Int(UInt16.max)
        /// Up to 1 GiB: a request is held in memory whole.
        public static let maxBodyBytes: ClosedRange<Int> = 0...(1 << 30)
        /// Each connection holds a thread and a descriptor.
        public static let maxConnections: ClosedRange<Int> = 1...4_096
        /// At least one operation a batch; at most what a body of a few MiB holds.
        public static let maxBatchOperations: ClosedRange<Int> = 1...10_000
        /// More than 0, at most one day: the timeout becomes milliseconds for `poll`.
        public static let maxReadTimeoutSeconds: Double = 86_400
        /// More than 0, at most 100 years of 86,400 s.
        public static let maxRetentionDays: Double = 36_500
        /// At least one change a page; at most what a page of a few MiB holds.
        public static let maxPageChanges: ClosedRange<Int> = 1...100_000
    }

    public static let usage = """
        usage: outbox-test-server [options]

        A loopback HTTP test server with idempotency claims and fault injection.
        Prints "listening on 127.0.0.1:PORT" on its first line, then serves until
        SIGINT or SIGTERM.

        options (each value after a space or an '=': --port 8080, --port=8080):
          --port N                 port on 127.0.0.1, 0 to 65535 (default 0: the system picks one)
          --data-dir PATH          keep claims and records in LMDB at PATH (default: memory): a
                                   directory, created if missing inside an existing directory
          --max-body-bytes N       largest request body, 0 to 1073741824 (default 1048576)
          --max-connections N      connections served at once, 1 to 4096 (default 64)
          --max-batch-operations N most operations in one POST /sync/batch, 1 to 10000
                                   (default 100; more are answered 413)
          --read-timeout SECONDS   longest a request may take to arrive, over 0 and at most
                                   86400 (default 10)
          --retention-days DAYS    how long claims replay, over 0 and at most 36500 (default 30)
          --postgres WHERE         keep claims and records in PostgreSQL, shared by every server
                                   started on the same database: a libpq connection string
                                   without a password ("host=db dbname=claims sslmode=require"),
                                   env (the PG* variables), or env:VARIABLE (a connection string
                                   in VARIABLE, which may hold a password)
          --pool-size N            PostgreSQL connections at most, 1 to 1000 (default 8)
          --latency-ms MS          added before each business request, 0 to 60000 (default 0)
          --max-page-changes N     most changes in one GET /sync/changes page, 1 to 100000
                                   (default 1000; a larger limit is clamped)
          --tombstone-retention-days DAYS
                                   how long the feed keeps tombstones, as it publishes in each
                                   page, over 0 and at most 36500 (default: --retention-days)

        the upload endpoints (POST /uploads, POST /uploads/ID/complete), on an OpenStack Swift
        account; the token and the key come from the environment only:
          --swift-storage-url URL  the account's storage URL (http://127.0.0.1:8080/v1/AUTH_test)
          --swift-auth-token env:VARIABLE
                                   the account's token, in that environment variable
          --swift-temp-url-key env:VARIABLE
                                   the account's Temp-URL-Key, which signs the segment URLs
          --swift-container NAME   the container the objects go in (it must exist)
          --segment-bytes N        every segment's size but the last, 1 to 5368709120
                                   (default 8388608)
          --grant-lifetime SECONDS how long a grant's URLs last, over 0 and at most 604800
                                   (default 900; POST /_control/uploads changes it)
          --max-upload-bytes N     the largest file granted, 0 to 1099511627776
                                   (default 268435456; more is answered 413)
          -h, --help               show this help
        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) -> Result<Command, UsageError> {
        var configuration = TestServer.Configuration()
        var postgres: PostgresConnectionSettings?
        var poolSize: Int?
        var tombstoneDays: Double?
        var uploads = UploadOptions()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            // `--port 0` and `--port=0` alike; an option is known before its value is taken.
            let (option, attached) = split(argument)
            if option == "-h" || option == "--help" {
                guard attached == nil else { return .failure(UsageError(message: "\(option) takes no value, not '\(argument)'")) }
                return .success(.help)
            }
            guard option.hasPrefix("-") else { return .failure(UsageError(message: "unexpected argument '\(argument)'")) }
            guard valueOptions.contains(option) else { return .failure(UsageError(message: "unknown option '\(option)'")) }
            guard let value = attached ?? remaining.popFirst() else {
                return .failure(UsageError(message: "\(option) needs a value"))
            }
            do throws(UsageError) {
                switch option {
                case "--port":
                    configuration.port = UInt16(try wholeNumber(option, value, in: Bounds.port))
                case "--data-dir":
                    guard !value.isEmpty else { throw UsageError(message: "\(option) needs a directory path, not ''") }
                    let directory = URL(fileURLWithPath: value, isDirectory: true)
                    if let problem = DataDirectory.problem(directory) { throw UsageError(message: "\(option) \(problem)") }
                    configuration.storage = .lmdb(directory: directory)
                case "--max-body-bytes":
                    configuration.maxBodyBytes = try wholeNumber(option, value, in: Bounds.maxBodyBytes)
                case "--max-connections":
                    configuration.maxConnections = try wholeNumber(option, value, in: Bounds.maxConnections)
                case "--max-batch-operations":
                    configuration.maxBatchOperations = try wholeNumber(option, value, in: Bounds.maxBatchOperations)
                case "--read-timeout":
                    configuration.readTimeout = try positiveNumber(option, value, atMost: Bounds.maxReadTimeoutSeconds, unit: "seconds")
                case "--retention-days":
                    let days = try positiveNumber(option, value, atMost: Bounds.maxRetentionDays, unit: "days")
                    configuration.claimPolicy.retention = days * 86_400
                case "--postgres":
                    postgres = try postgresSettings(value)
                case "--pool-size":
                    poolSize = try wholeNumber(option, value, in: Bounds.poolSize)
                case "--latency-ms":
                    configuration.latency = Double(try wholeNumber(option, value, in: Bounds.latencyMilliseconds)) / 1000
                case "--max-page-changes":
                    configuration.feedLimits.maxLimit = try wholeNumber(option, value, in: Bounds.maxPageChanges)
                case "--tombstone-retention-days":
                    tombstoneDays = try positiveNumber(option, value, atMost: Bounds.maxRetentionDays, unit: "days")
                default:
                    guard try uploads.take(option, value) else { throw UsageError(message: "unknown option '\(option)'") }
                }
            } catch {
                return .failure(error)
            }
        }
        // Tombstones live as long as claims unless told otherwise: a phone offline that long
        // still pulls without a snapshot.
        configuration.feedLimits.tombstoneRetentionSeconds = Int(((tombstoneDays ?? configuration.claimPolicy.retention / 86_400) * 86_400).rounded())
        do throws(UsageError) {
            configuration.uploads = try uploads.store()
        } catch {
            return .failure(error)
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

    /// The options that take a value.
    static let valueOptions = Set<String>([
        "--port", "--data-dir", "--max-body-bytes", "--max-connections", "--max-batch-operations", "--read-timeout",
        "--retention-days", "--postgres", "--pool-size", "--latency-ms", "--max-page-changes", "--tombstone-retention-days",
    ]).union(UploadOptions.names)

    /// `--name=value` as the option and its value; any other argument as itself and `nil`.
    private static func split(_ argument: String) -> (option: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// A decimal integer within `range`.
    static func wholeNumber(_ option: String, _ value: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let number = Int(value), range.contains(number) else {
            throw UsageError(message: "\(option) expects a whole number from \(range.lowerBound) to \(range.upperBound), not '\(value)'")
        }
        return number
    }

    /// A number more than 0 and at most `upperBound` (never NaN or infinite).
    static func positiveNumber(_ option: String, _ value: String, atMost upperBound: Double, unit: String) throws(UsageError) -> Double {
        guard let number = Double(value), number > 0, number <= upperBound else {
            throw UsageError(message: "\(option) expects \(unit) over 0 and at most \(Int(upperBound)), not '\(value)'")
        }
        return number
    }
}
