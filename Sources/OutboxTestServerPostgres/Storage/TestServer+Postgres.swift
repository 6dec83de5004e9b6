public import OutboxTestServer
public import PostgresClaimStore
import IdempotencyClaims

extension TestServer.Configuration.Storage {
    /// A PostgreSQL database, through a pool of at most `poolSize` connections: several servers
    /// on one database share their claims and records, and behave as one server.
    ///
    /// ```swift
    /// let server = try TestServer(.init(storage: .postgres(cluster.settings, poolSize: 4)))
    /// ```
    ///
    /// This module adds it, not `OutboxTestServer`: a server in memory or in LMDB links no libpq.
    public static func postgres(_ settings: PostgresConnectionSettings, poolSize: Int) -> Self {
        .external(ExternalStorage(PostgresStorageOpener(settings: settings, poolSize: poolSize)))
    }

    /// The database and pool size of ``postgres(_:poolSize:)``; `nil` for another storage.
    public var postgres: (settings: PostgresConnectionSettings, poolSize: Int)? {
        guard case .external(let external) = self, let opener = external.opener as? PostgresStorageOpener else { return nil }
        return (opener.settings, opener.poolSize)
    }
}

/// Opens ``PostgresServerStorage`` when the server starts.
struct PostgresStorageOpener: ServerStorageOpener {
    let settings: PostgresConnectionSettings
    let poolSize: Int

    func open(policy: ClaimPolicy, clock: any ClaimClock) throws -> any ServerStorage {
        try PostgresServerStorage(settings: settings, poolSize: poolSize, policy: policy, clock: clock)
    }
}
