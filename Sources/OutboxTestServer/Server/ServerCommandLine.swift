import Foundation

/// The `outbox-test-server` command line, parsed without running anything.
///
/// ```text
/// outbox-test-server [--port N] [--data-dir PATH] [--max-body-bytes N] [--max-connections N]
///                    [--read-timeout SECONDS] [--retention-days DAYS]
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
          -h, --help               show this help
        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) -> Result<Command, UsageError> {
        var configuration = TestServer.Configuration()
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
            default:
                return .failure(UsageError(message: "unknown option '\(option)'"))
            }
        }
        return .success(.run(configuration))
    }

    private static func invalid(_ option: String, _ value: String, _ expected: String) -> UsageError {
        UsageError(message: "\(option) expects \(expected), not '\(value)'")
    }
}
