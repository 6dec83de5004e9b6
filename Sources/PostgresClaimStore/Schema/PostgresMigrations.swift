/// The versioned schema of one component: each version a list of statements, applied once, in
/// order, by whichever server gets there first.
///
/// Versions are kept per component in `outbox_schema_versions` of the connection's schema (its
/// `search_path`). ``migrate(_:)`` runs in one transaction under a transaction-scoped advisory
/// lock (`pg_advisory_xact_lock`, keyed by the schema): servers starting together
/// take turns, the first applies what is missing, the others find it done. DDL is
/// transactional in PostgreSQL, so a failed version leaves nothing behind.
///
/// ```swift
/// let migrations = PostgresMigrations(component: "products", versions: [
///     ["CREATE TABLE products (id text PRIMARY KEY, body bytea NOT NULL)"],
/// ])
/// try migrations.migrate(pool)
/// ```
public struct PostgresMigrations: Sendable {
    /// Names the component's row in `outbox_schema_versions`.
    public var component: String
    /// Version n's statements are `versions[n - 1]`.
    public var versions: [[String]]

    public init(component: String, versions: [[String]]) {
        self.component = component
        self.versions = versions
    }

    /// The advisory lock's first key, shared by every component: `'OBX'`.
    static let lockClass: Int32 = 0x4F_4258

    /// Brings the schema to the latest version.
    /// - Returns: the version the schema is at now.
    /// - Throws: ``PostgresError/Kind/configuration`` when the database is at a newer version
    ///   than this build knows (a newer server migrated it: upgrade this one), or when the
    ///   connection's schema does not exist; the server's errors.
    @discardableResult
    public func migrate(_ pool: PostgresConnectionPool) throws -> Int {
        try pool.transaction { connection in
            let row = try connection.execute("SELECT current_schema()::text").first
            guard let row, let schema = try row.optional(0, row.text) else {
                throw PostgresError(.configuration, message: "no schema of the search_path exists to create the \(component) tables in; create it first")
            }
            // One lock per schema, not per component: components share the versions table, and
            // two `CREATE TABLE IF NOT EXISTS` of one table at once may still collide.
            try connection.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", [.int32(Self.lockClass), .text(schema)])
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS outbox_schema_versions (
                    component   text        PRIMARY KEY,
                    version     integer     NOT NULL,
                    migrated_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let stored = try connection.execute("SELECT version FROM outbox_schema_versions WHERE component = $1", [.text(component)])
            let current = Int(try stored.first?.int32(0) ?? 0)
            guard current <= versions.count else {
                throw PostgresError(.configuration, message: "the \(component) schema in \(schema) is at version \(current), newer than this build knows (\(versions.count)): upgrade this server")
            }
            guard current < versions.count else { return current }
            for version in (current + 1)...versions.count {
                for statement in versions[version - 1] { try connection.execute(statement) }
            }
            try connection.execute("""
                INSERT INTO outbox_schema_versions (component, version) VALUES ($1, $2)
                ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()
                """, [.text(component), .int32(Int32(versions.count))])
            return versions.count
        }
    }
}
