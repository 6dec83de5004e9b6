import Foundation
import PostgresClaimStore

extension ServerCommandLine {
    /// PostgreSQL connections per server when `--pool-size` is not given.
    public static let defaultPoolSize = 8

    /// `env`, `env:VARIABLE` or a connection string without a password: credentials never come
    /// from a command line, which other users of the machine can read.
    static func postgresSettings(_ value: String) throws(UsageError) -> PostgresConnectionSettings {
        if value == "env" { return .environment }
        if value.hasPrefix("env:") {
            let name = String(value.dropFirst(4))
            guard let conninfo = ProcessInfo.processInfo.environment[name], !conninfo.isEmpty else {
                throw UsageError(message: "--postgres \(value): the environment variable \(name) is not set")
            }
            return PostgresConnectionSettings(conninfo: conninfo)
        }
        let keywords: [String: String]
        do {
            keywords = try PostgresConnectionSettings.parse(value)
        } catch {
            throw UsageError(message: "--postgres: \(error)")
        }
        guard keywords["password"] == nil else {
            throw UsageError(message: "--postgres: the connection string holds a password; put it in PGPASSWORD or a password file (PGPASSFILE), or pass the whole string as env:VARIABLE")
        }
        return PostgresConnectionSettings(conninfo: value)
    }
}

extension ServerCommandLine.Bounds {
    /// PostgreSQL connections per server: each is a server process on the database's side.
    public static let poolSize: ClosedRange<Int> = 1...1_000
    /// Up to a minute added before each business request.
    public static let latencyMilliseconds: ClosedRange<Int> = 0...60_000
}
