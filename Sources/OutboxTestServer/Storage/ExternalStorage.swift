package import IdempotencyClaims

/// A ``TestServer/Configuration/Storage`` that another module of this package opens:
/// PostgreSQL's, made by `.postgres(_:poolSize:)` in `OutboxTestServerPostgres`.
///
/// The server reaches such a storage through ``ServerStorageOpener`` alone, so this module names
/// no database client: an app that starts a ``TestServer`` in memory or in LMDB links no libpq.
public struct ExternalStorage: Sendable {
    /// What opens the storage; its module reads its own settings back from it.
    package let opener: any ServerStorageOpener

    package init(_ opener: any ServerStorageOpener) {
        self.opener = opener
    }
}

/// Opens a ``ServerStorage`` this module does not know, when a ``TestServer`` starts on it.
package protocol ServerStorageOpener: Sendable {
    /// Opens the storage (creating or migrating what it needs), its claims kept by `policy`
    /// and timed by `clock`.
    func open(policy: ClaimPolicy, clock: any ClaimClock) throws -> any ServerStorage
}
