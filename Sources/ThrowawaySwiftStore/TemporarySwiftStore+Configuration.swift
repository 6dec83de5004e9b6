import Foundation

extension TemporarySwiftStore {
    /// The loopback ports of one start: each server's, and memcached's for the proxy's tokens.
    struct Ports {
        var proxy: Int
        var account: Int
        var container: Int
        var object: Int
        var memcached: Int
    }

    /// The programs the store runs, from Debian's `swift-proxy`, `swift-account`,
    /// `swift-container`, `swift-object` and `memcached` (`bash .ci/setup` installs them).
    struct Programs: Sendable {
        /// `swift-ring-builder`'s interpreter, from its `#!` line: the rings are built in one run
        /// of it (see ``ringsScript``).
        var python: [String]
        var accountServer: String
        var containerServer: String
        var objectServer: String
        var proxyServer: String
        var memcached: String

        static func find() throws -> Programs {
            let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            let directories = path + ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/usr/local/sbin"]
            func find(_ name: String) throws -> String {
                for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                    return "\(directory)/\(name)"
                }
                throw StartError(description: "\(name) is not installed (searched PATH and /usr/bin): run bash .ci/setup, which installs Debian's swift-proxy, swift-account, swift-container, swift-object and memcached")
            }
            let ringBuilder = try find("swift-ring-builder")
            let firstLine = (try? String(contentsOfFile: ringBuilder, encoding: .utf8))?.split(separator: "\n").first ?? ""
            let python = firstLine.hasPrefix("#!") ? firstLine.dropFirst(2).split(separator: " ").map(String.init) : []
            guard let interpreter = python.first, FileManager.default.isExecutableFile(atPath: interpreter) else {
                throw StartError(description: "\(ringBuilder) does not name a Python interpreter on its first line (\(firstLine))")
            }
            return Programs(
                python: python,
                accountServer: try find("swift-account-server"),
                containerServer: try find("swift-container-server"),
                objectServer: try find("swift-object-server"),
                proxyServer: try find("swift-proxy-server"),
                memcached: try find("memcached"))
        }
    }

    /// Swift's servers read the hash path prefix and suffix, and the storage policies, from this
    /// file and from no other (`swift_dir` moves the rings, not it); Debian's `swift` package
    /// installs it.
    static let swiftConfigurationFile = "/etc/swift/swift.conf"

    /// The environment every program of the store runs in: nothing of the test process's (a
    /// `PYTHONPATH` or a pyenv of its own must not reach Debian's Python).
    static func environment() -> [String: String] {
        ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8", "HOME": "/tmp"]
    }

    /// Builds the account, container and object rings in `$1`, each with one replica, 16
    /// partitions and the one device `d1` on 127.0.0.1 at the port given after it (`$2` to `$4`).
    ///
    /// These are `swift-ring-builder`'s own commands (`create 4 1 1`, `add`, `rebalance`), run
    /// through its `main` in one interpreter: nine runs of the program cost about 6.5 s on two
    /// cores, almost all of it Python importing Swift nine times; one run costs 0.6 s.
    static let ringsScript = #"""
        import sys
        from swift.cli.ringbuilder import main
        directory, ports = sys.argv[1], sys.argv[2:]
        for ring, port in zip(("account", "container", "object"), ports):
            builder = "%s/%s.builder" % (directory, ring)
            for command in (["create", "4", "1", "1"], ["add", "r1z1-127.0.0.1:%s/d1" % port, "1"], ["rebalance"]):
                try:
                    main(["swift-ring-builder", builder] + command)
                except SystemExit as end:
                    if end.code not in (None, 0):
                        sys.exit("swift-ring-builder %s %s failed: %s" % (builder, " ".join(command), end.code))
        """#

    /// The configuration shared by every server: loopback only, one process (`workers = 0`, so
    /// that killing the pid ends the server), run as `user` (Swift drops privileges to it, and
    /// the Debian default, `swift`, cannot write the temporary directory).
    static func commonSection(directory: String, port: Int, user: String) -> String {
        """
        [DEFAULT]
        bind_ip = 127.0.0.1
        bind_port = \(port)
        bind_timeout = 2
        workers = 0
        user = \(user)
        swift_dir = \(directory)
        devices = \(directory)/devices
        mount_check = false
        disable_fallocate = true
        fallocate_reserve = 0
        log_level = WARNING

        """
    }

    /// An account, container or object server's configuration (`kind` is one of the three).
    static func storageServerConfiguration(_ kind: String, directory: String, port: Int, user: String) -> String {
        commonSection(directory: directory, port: port, user: user) + """
        [pipeline:main]
        pipeline = healthcheck \(kind)-server

        [app:\(kind)-server]
        use = egg:swift#\(kind)

        [filter:healthcheck]
        use = egg:swift#healthcheck

        """
    }

    /// The proxy's configuration: tempauth with the one user, TempURLs signed with SHA-256 or
    /// SHA-512, static and dynamic large objects, memcached for tempauth's tokens.
    ///
    /// Every timeout is a hang guard in minutes, and no server is ever error-limited: Swift's
    /// defaults (a 0.5 s connect timeout to a server, a server shunned for a minute after ten
    /// errors, a 0.3 s connect timeout to memcached) would turn a busy machine into 503s and 401s.
    static func proxyConfiguration(directory: String, ports: Ports, user: String) -> String {
        commonSection(directory: directory, port: ports.proxy, user: user) + """
        [pipeline:main]
        pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats tempurl tempauth copy slo dlo proxy-logging proxy-server

        [app:proxy-server]
        use = egg:swift#proxy
        account_autocreate = true
        conn_timeout = 60
        node_timeout = 120
        recoverable_node_timeout = 120
        client_timeout = 120
        error_suppression_limit = 1000000

        [filter:tempauth]
        use = egg:swift#tempauth
        user_\(accountName)_\(userName) = \(password) .admin

        [filter:tempurl]
        use = egg:swift#tempurl
        allowed_digests = sha256 sha512

        [filter:slo]
        use = egg:swift#slo

        [filter:dlo]
        use = egg:swift#dlo

        [filter:copy]
        use = egg:swift#copy

        [filter:cache]
        use = egg:swift#memcache
        memcache_servers = 127.0.0.1:\(ports.memcached)
        memcache_max_connections = 8
        connect_timeout = 60
        pool_timeout = 60
        io_timeout = 120
        tries = 3
        error_suppression_limit = 1000000

        [filter:catch_errors]
        use = egg:swift#catch_errors

        [filter:gatekeeper]
        use = egg:swift#gatekeeper

        [filter:healthcheck]
        use = egg:swift#healthcheck

        [filter:listing_formats]
        use = egg:swift#listing_formats

        [filter:proxy-logging]
        use = egg:swift#proxy_logging

        """
    }

    /// The shell that keeps the store: `$1` its directory. It reads the pid of each process the
    /// store starts, one a line, until its standard input closes (``stop()``, or the test process
    /// ending however it ends); then it kills each that is still one of the store's (its command
    /// line names the directory: a pid the kernel gave to another process is left alone), waits
    /// for them to go, and removes the directory.
    static let keeperScript = #"""
        set -u
        dir="$1"
        pids=""
        while read -r pid; do pids="$pids $pid"; done
        ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$dir"; }
        running() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }
        for pid in $pids; do ours "$pid" && kill -9 "$pid" 2>/dev/null; done
        for pid in $pids; do
            tries=0
            while running "$pid" && ours "$pid" && [ "$tries" -lt 600 ]; do sleep 0.05; tries=$((tries + 1)); done
        done
        rm -rf "$dir" 2>/dev/null || { sleep 0.2; rm -rf "$dir"; }
        """#
}
