public import Foundation
public import PostgresClaimStore
import TestHarness
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster of its own for one test or benchmark process: created with `initdb` in a
/// fresh temporary directory, listening on a Unix socket in that directory only (no TCP), with
/// trust authentication for the local user, stopped and removed when the process ends.
///
/// The cluster is kept by a small shell that holds the read end of a pipe whose write end only
/// this process has: when the process exits (or is killed), the pipe closes and the shell stops
/// the server and removes the directory. ``stop()`` does the same at once.
///
/// The binaries come from `pg_config --bindir`, then Debian's `/usr/lib/postgresql/<version>/bin`,
/// then `PATH`. Run as root (as CI is), the cluster runs as the `postgres` user, since PostgreSQL
/// refuses to run as root.
///
/// ```swift
/// let cluster = try TemporaryPostgresCluster.start()
/// let pool = PostgresConnectionPool(settings: cluster.settings, size: 4)
/// ```
public final class TemporaryPostgresCluster: Sendable {
    /// How to reach the cluster's `postgres` database as its superuser `postgres`.
    public let settings: PostgresConnectionSettings
    /// The directory holding the socket (and, unless given a parent, the data).
    public let socketDirectory: String
    /// The PostgreSQL binaries used.
    public let binDirectory: String
    /// The keeping shell; its standard input is the lifeline.
    private let keeper: SpawnedProcess

    /// Why a cluster could not start, with what to do about it.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates and starts a cluster; returns once it accepts connections.
    /// - Parameters:
    ///   - durable: `false` (for tests) turns off `fsync`, `synchronous_commit` and full-page
    ///     writes, which a throwaway cluster does not need; `true` (for benchmarks) keeps the
    ///     server's defaults, so each commit is flushed as in production.
    ///   - dataParent: where the data directory goes (by default beside the socket, in the
    ///     temporary directory); a benchmark puts it on the disk it measures. Run as root, this
    ///     directory is made searchable by others so that the `postgres` user can reach its own
    ///     directory inside; its ancestors must already be.
    public static func start(durable: Bool = false, dataParent: URL? = nil) throws -> TemporaryPostgresCluster {
        let bin = try findBinDirectory()
        let runAsPostgres = geteuid() == 0
        let parent = try prepareParent(dataParent, forPostgresUser: runAsPostgres)
        var command = ["/bin/sh", "-c", keeperScript, "outbox-postgres", bin, parent, durable ? "durable" : "fast"]
        if runAsPostgres {
            guard getpwnam("postgres") != nil else {
                throw StartError(description: "running as root, the test cluster runs as the 'postgres' user, which does not exist: install postgresql (bash .ci/setup), or run as another user")
            }
            guard let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: FileManager.default.isExecutableFile) else {
                throw StartError(description: "running as root, runuser (util-linux) is needed to start the test cluster as 'postgres'")
            }
            command = [runuser, "-u", "postgres", "--"] + command
        }

        // The lifeline is the keeper's standard input; like every pipe of SpawnedProcess, this
        // process's end is close-on-exec, so children started later (servers under test) never
        // hold it and cannot keep the cluster alive after this process ends.
        let keeper = try SpawnedProcess(command[0], Array(command.dropFirst()), input: .pipe, output: .pipe, errors: .pipe)
        // Its errors are read as they come, so that a keeper with much to say never blocks.
        let errors = keeper.errors!.collect()
        var lines = LineReader(keeper.output!)
        let line = (lines.next() ?? lines.rest).trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix("ready "), let socket = line.split(separator: " ").dropFirst().first.map(String.init) else {
            keeper.input!.close()
            _ = keeper.wait()
            throw StartError(description: "the test PostgreSQL cluster did not start (binaries in \(bin)): \(errors.text.suffix(2000))")
        }
        keepers.withLock { $0[keeper.pid] = keeper }
        return TemporaryPostgresCluster(
            settings: PostgresConnectionSettings(conninfo: "host=\(socket) port=\(port) dbname=postgres user=postgres"),
            socketDirectory: socket, binDirectory: bin, keeper: keeper)
    }

    private init(settings: PostgresConnectionSettings, socketDirectory: String, binDirectory: String, keeper: SpawnedProcess) {
        self.settings = settings
        self.socketDirectory = socketDirectory
        self.binDirectory = binDirectory
        self.keeper = keeper
    }

    /// Stops the server and removes its directories; returns once done.
    public func stop() {
        // The keeper was started with its standard input piped: closing it is the lifeline's end.
        keeper.input!.close()
        _ = keeper.wait()
        Self.keepers.withLock { $0[keeper.pid] = nil }
    }

    /// Every keeper not stopped, so that its lifeline stays open until this process ends even
    /// when the cluster is no longer referenced (``TestPostgres`` keeps only the settings).
    private static let keepers = Mutex<[pid_t: SpawnedProcess]>([:])

    /// The port names the socket file (`.s.PGSQL.5432`); nothing listens on TCP.
    static let port = 5432

    /// The shell that keeps the cluster: `$1` the binaries, `$2` the data's parent, `$3` durable
    /// or fast. Prints `ready <socket directory>` once the server accepts connections, then
    /// waits for its standard input to close and stops and removes everything.
    static let keeperScript = #"""
        set -u
        bin="$1"; parent="$2"; mode="$3"
        cd /tmp || cd /   # the caller's directory may be closed to the postgres user
        sock=$(mktemp -d /tmp/outbox-pg.XXXXXX) || exit 1
        data=$(mktemp -d "$parent/outbox-pg-data.XXXXXX") || { rm -rf "$sock"; exit 1; }
        cleanup() { "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$sock" "$data"; }
        if ! "$bin/initdb" -D "$data" -U postgres --auth=trust --no-locale -E UTF8 -N >"$sock/initdb.log" 2>&1; then
            cat "$sock/initdb.log" >&2; rm -rf "$sock" "$data"; exit 1
        fi
        {
            echo "listen_addresses = ''"
            echo "unix_socket_directories = '$sock'"
            echo "port = 5432"
            echo "max_connections = 300"
            echo "log_min_messages = fatal"
            if [ "$mode" = fast ]; then
                echo "fsync = off"
                echo "synchronous_commit = off"
                echo "full_page_writes = off"
            fi
        } >>"$data/postgresql.conf"
        # -t: a guard against a server that never starts, never a timing: several clusters start
        # at once beside the other tests, and on a loaded machine one may take over a minute.
        if ! "$bin/pg_ctl" -D "$data" -l "$sock/server.log" -w -t 300 start >/dev/null 2>&1; then
            cat "$sock/server.log" >&2; cleanup; exit 1
        fi
        echo "ready $sock"
        cat >/dev/null
        cleanup
        """#

    private static func findBinDirectory() throws -> String {
        func hasInitdb(_ directory: String) -> Bool {
            FileManager.default.isExecutableFile(atPath: directory + "/initdb") && FileManager.default.isExecutableFile(atPath: directory + "/pg_ctl")
        }
        if let configured = run(["pg_config", "--bindir"])?.trimmingCharacters(in: .whitespacesAndNewlines), hasInitdb(configured) {
            return configured
        }
        let debian = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? []).compactMap(Int.init).sorted(by: >)
        if let version = versions.first(where: { hasInitdb("\(debian)/\($0)/bin") }) {
            return "\(debian)/\(version)/bin"
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) where hasInitdb(directory) {
            return directory
        }
        throw StartError(description: "no PostgreSQL server binaries (initdb, pg_ctl) found through pg_config, /usr/lib/postgresql or PATH: run bash .ci/setup (it installs postgresql), or set OUTBOX_TEST_POSTGRES to a database's connection string")
    }

    /// The directory the data goes under, writable by the user the cluster runs as.
    private static func prepareParent(_ parent: URL?, forPostgresUser: Bool) throws -> String {
        guard let parent else { return "/tmp" }
        let directory = parent.appendingPathComponent("postgres-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if forPostgresUser, let user = getpwnam("postgres") {
            guard chown(directory.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw StartError(description: "cannot give \(directory.path) to the postgres user: errno \(errno)")
            }
            // The postgres user must pass through the parent (search, not list) to reach it.
            var status = stat()
            if stat(parent.path, &status) == 0 { _ = chmod(parent.path, status.st_mode | 0o011) }
        }
        return directory.path
    }

    /// The standard output of a command found on `PATH`, or `nil` when it cannot run or fails.
    private static func run(_ arguments: [String]) -> String? {
        guard let finished = try? SpawnedProcess.run("/usr/bin/env", arguments), finished.termination == .exited(0) else {
            return nil
        }
        return finished.outputText
    }
}
