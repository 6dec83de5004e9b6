import Foundation
import PostgresClaimStore

extension ServerCommandLine {
    /// PostgreSQL connections per server when `--pool-size` is not given.
    public static let defaultPoolSize = 8

    /// `env`, `env:VARIABLE` or a connection string without a password: credentials never come
    /// from a command line, which other users of the machine can read.
    static func postgresSettings(_ value: String) -> Result<PostgresConnectionSettings, UsageError> {
        if value == "env" { return .success(.environment) }
        if value.hasPrefix("env:") {
            let name = String(value.dropFirst(4))
            guard let conninfo = ProcessInfo.processInfo.environment[name], !conninfo.isEmpty else {
                return .failure(UsageError(message: "--postgres \(value): the environment variable \(name) is not set"))
            }
            return .success(PostgresConnectionSettings(conninfo: conninfo))
        }
        do {
            if try PostgresConnectionSettings.parse(value)["password"] != nil {
                return .failure(UsageError(message: "--postgres: the connection string holds a password; put it in PGPASSWORD or a password file (PGPASSFILE), or pass the whole string as env:VARIABLE"))
            }
        } catch {
            return .failure(UsageError(message: "--postgres: \(error)"))
        }
        return .success(PostgresConnectionSettings(conninfo: value))
    }
}
