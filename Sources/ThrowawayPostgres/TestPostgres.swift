import Foundation
public import PostgresClaimStore

/// The PostgreSQL the tests use: the database named by `OUTBOX_TEST_POSTGRES` (a libpq
/// connection string) when it is set, otherwise one ``TemporaryPostgresCluster`` per test
/// process, started by the first test that asks and stopped when the process ends.
///
/// Each test works in a schema of its own (``freshSchema(_:)``), so tests run in parallel
/// without seeing each other's rows.
///
/// ```swift
/// let schema = try TestPostgres.freshSchema("claims")
/// defer { schema.drop() }
/// let store = try PostgresClaimStore(pool: PostgresConnectionPool(settings: schema.settings, size: 4))
/// ```
public enum TestPostgres {
    /// The environment variable naming an external database for the tests.
    public static let environmentVariable = "OUTBOX_TEST_POSTGRES"

    /// Started on first use, once per process, whatever the number of suites.
    private static let server: Result<PostgresConnectionSettings, any Error> = Result {
        if let given = ProcessInfo.processInfo.environment[environmentVariable], !given.isEmpty {
            return PostgresConnectionSettings(conninfo: given)
        }
        return try TemporaryPostgresCluster.start().settings
    }

    /// How to reach the tests' database (its default schema).
    public static func settings() throws -> PostgresConnectionSettings {
        try server.get()
    }

    /// A new, empty schema for one test.
    /// - Parameter label: a readable prefix for the schema's name (letters, digits, `_`).
    public static func freshSchema(_ label: String = "test") throws -> TestSchema {
        let base = try settings()
        let safe = String(label.lowercased().unicodeScalars.filter { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }.prefix(30))
        let name = "\(safe.isEmpty ? "test" : safe)_\(UUID().uuidString.prefix(8).lowercased())"
        let connection = try PostgresConnection(base)
        defer { connection.close() }
        try connection.execute("CREATE SCHEMA \(name)")
        return TestSchema(name: name, base: base)
    }
}

/// One test's schema in the tests' database.
public struct TestSchema: Sendable {
    /// The schema's name.
    public let name: String
    /// Settings whose `search_path` is this schema: every table a store creates lands in it.
    public let settings: PostgresConnectionSettings
    private let base: PostgresConnectionSettings

    init(name: String, base: PostgresConnectionSettings) {
        self.name = name
        self.base = base
        settings = base.inSchema(name)
    }

    /// Removes the schema and everything in it; failures are ignored (the cluster goes anyway).
    public func drop() {
        guard let connection = try? PostgresConnection(base) else { return }
        defer { connection.close() }
        _ = try? connection.execute("DROP SCHEMA IF EXISTS \(name) CASCADE")
    }

    /// Runs one statement in the schema, on a connection of its own: for tests that look at rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        let connection = try PostgresConnection(settings)
        defer { connection.close() }
        return try connection.execute(sql, parameters)
    }
}
