import Dispatch

/// How long each phase of one open took, in nanoseconds of the monotonic clock: a launch's
/// breakdown, for the benchmark. Every open fills it; reading the clock a few times costs some
/// tens of nanoseconds each.
package struct OpenPhases: Sendable, Equatable, Codable {
    /// The directory, the process lock, and a new journal's creation.
    package var preparing: UInt64 = 0
    /// The data file's check against its meta pages, and `mdb_env_open`.
    package var mapping: UInt64 = 0
    /// The journal's databases opened (`mdb_dbi_open`).
    package var databases: UInt64 = 0
    /// The checks of `meta`: format and projection versions, account, key check (and a rebuild,
    /// for projections of another layout).
    package var meta: UInt64 = 0
    /// The opening recorded: handed, with its abandonments, to the writer's queue, which
    /// commits it while the app reads (the open waits for no commit).
    package var recording: UInt64 = 0
    /// The whole open, from the configuration's check to the engine ready.
    package var total: UInt64 = 0

    package init() {}

    /// Now, in nanoseconds of the monotonic clock.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body`, adding its duration to `phase`.
    mutating func time<R, E: Error>(_ phase: WritableKeyPath<OpenPhases, UInt64>, _ body: () throws(E) -> R) throws(E) -> R {
        let started = Self.now()
        defer { self[keyPath: phase] += Self.now() - started }
        return try body()
    }
}
