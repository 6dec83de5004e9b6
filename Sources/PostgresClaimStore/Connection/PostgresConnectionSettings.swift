import CLibPQ
import Foundation

/// Where and how to connect: a libpq connection string, and parameters added to it.
///
/// Everything libpq reads applies: host, port, dbname, user, `sslmode` and `sslrootcert` for TLS,
/// `connect_timeout`, keepalives, `options='-c statement_timeout=5s'`, and the standard `PG*`
/// environment variables (`PGHOST`, `PGSSLMODE`, `PGPASSWORD`, ...) for whatever the string
/// leaves out. Passwords belong in `PGPASSWORD`, a password file (`PGPASSFILE`, `~/.pgpass`) or an
/// environment variable holding the whole string, never on a command line.
///
/// ```swift
/// let settings = PostgresConnectionSettings(conninfo: "host=db.example.com dbname=shop sslmode=verify-full")
/// let fromEnvironment = PostgresConnectionSettings.environment   // PGHOST, PGDATABASE, ...
/// ```
public struct PostgresConnectionSettings: Hashable, Sendable, CustomStringConvertible {
    /// A `key=value` string or a `postgresql://` URI; empty: the `PG*` environment variables alone.
    public var conninfo: String
    /// Parameters that override the string's, in order, e.g. `("options", "-c search_path=s1")`.
    public var overrides: [Parameter]

    public struct Parameter: Hashable, Sendable {
        public var keyword: String
        public var value: String

        public init(_ keyword: String, _ value: String) {
            self.keyword = keyword
            self.value = value
        }
    }

    public init(conninfo: String, overrides: [Parameter] = []) {
        self.conninfo = conninfo
        self.overrides = overrides
    }

    /// The `PG*` environment variables alone.
    public static let environment = PostgresConnectionSettings(conninfo: "")

    /// These settings with `keyword` set to `value`, over what the string says.
    public func setting(_ keyword: String, to value: String) -> PostgresConnectionSettings {
        var copy = self
        copy.overrides.append(Parameter(keyword, value))
        return copy
    }

    /// The settings with every object the store creates or reads in schema `name` (its
    /// `search_path`), e.g. one schema per test or per tenant.
    public func inSchema(_ name: String) -> PostgresConnectionSettings {
        setting("options", to: "-c search_path=\(name)")
    }

    /// The keywords the string sets, parsed by libpq.
    /// - Throws: ``PostgresError/Kind/configuration`` with libpq's reason when it cannot be parsed.
    public static func parse(_ conninfo: String) throws -> [String: String] {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            let reason = error.map { String(cString: $0) } ?? "out of memory"
            if let error { PQfreemem(error) }
            throw PostgresError(.configuration, message: "cannot parse the connection string: \(reason.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        defer { PQconninfoFree(options) }
        var parsed: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { parsed[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return parsed
    }

    /// Where the settings point, without a password: for messages.
    public var description: String {
        let parsed = (try? Self.parse(conninfo)) ?? [:]
        let shown = ["host", "hostaddr", "port", "dbname", "user", "sslmode"].compactMap { key in parsed[key].map { "\(key)=\($0)" } }
        let source = conninfo.isEmpty ? "the PG* environment" : shown.joined(separator: " ")
        return overrides.isEmpty ? source : source + " (+ " + overrides.map(\.keyword).joined(separator: ", ") + ")"
    }
}
