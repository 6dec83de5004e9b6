public import Foundation
import TestHarness
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An OpenStack Swift object store of its own for one test process: one replica on one device
/// (a plain directory) in a fresh temporary directory, its proxy, account, container and object
/// servers and a memcached listening on 127.0.0.1 only, stopped and removed when the process ends.
///
/// The proxy runs `tempauth` with one user (``accountName``:``userName``, an account admin),
/// `tempurl` (HMAC-SHA256 and SHA-512 signatures), and static and dynamic large objects. Each
/// server is one process of Debian's packages (`swift-proxy-server` and its siblings, run in the
/// foreground with `workers = 0`), run as the user the tests run as.
///
/// Ports are chosen by the kernel and held until the server listens on them (a `RefusingPort`
/// shared with the server that binds it); a start whose server still met a clash (it exited) is
/// started again on fresh ports. A small shell keeps the store, as `TemporaryPostgresCluster`'s
/// does: it holds a pipe only this process writes to, and when the process ends, however it
/// ends, it kills the servers and removes the directory. ``stop()`` does the same at once.
///
/// ```swift
/// let store = try TemporarySwiftStore.start()
/// try store.setTempURLKey("secret")
/// try store.createContainer("photos")
/// let path = store.objectPath(container: "photos", object: "p-1")
/// let query = SwiftTempURL.query(method: "PUT", path: path, expiresUnixSeconds: now + 300, key: "secret")
/// ```
public final class TemporarySwiftStore: Sendable {
    /// The tempauth account, user and password.
    public static let accountName = "test"
    public static let userName = "tester"
    public static let password = "testing"

    /// The proxy: `http://127.0.0.1:<port>`.
    public let proxyURL: URL
    /// The account's storage URL, as tempauth gives it: `http://127.0.0.1:<port>/v1/AUTH_test`.
    public let storageURL: URL
    /// The account's path from `/v1/` on (`/v1/AUTH_test`): what a TempURL signature covers
    /// comes after it.
    public let accountPath: String
    /// A token for the account, from tempauth's `/auth/v1.0`; sent as `X-Auth-Token`. It lasts a
    /// day, longer than any test process.
    public let authToken: String
    /// The store's directory: configurations, rings, the device, each server's log.
    public let directory: String
    /// How long ``start()`` took, from finding the programs to the first object stored: a figure
    /// for the docs, which no test judges.
    public let startDuration: Duration
    private let processes: StoreProcesses

    /// Why the store could not start, with what to do about it.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Why a call to the store failed: the request and the status it was answered.
    public struct RequestError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts a store; returns once the proxy has answered a token and stored an object through
    /// every server.
    /// - Throws: ``StartError`` naming what is missing (run `bash .ci/setup`) or what each
    ///   server said.
    public static func start() throws -> TemporarySwiftStore {
        let started = ContinuousClock.now
        let programs = try Programs.find()
        guard FileManager.default.fileExists(atPath: swiftConfigurationFile) else {
            throw StartError(description: "\(swiftConfigurationFile) is missing: Debian's swift package installs it (bash .ci/setup)")
        }
        // A clash is a server that exited before the store was ready: its port was taken after
        // all (see RefusingPort), or it failed for good, and then every start fails the same way.
        var failures: [String] = []
        for _ in 1...3 {
            do {
                return try startOnce(programs, started: started)
            } catch let clash as ServerEnded {
                failures.append(clash.description)
            }
        }
        throw StartError(description: "the test Swift store did not start in three tries: " + failures.joined(separator: "; "))
    }

    private init(proxyURL: URL, storageURL: URL, accountPath: String, authToken: String, startDuration: Duration, processes: StoreProcesses) {
        self.proxyURL = proxyURL
        self.storageURL = storageURL
        self.accountPath = accountPath
        self.authToken = authToken
        self.directory = processes.directory
        self.startDuration = startDuration
        self.processes = processes
    }

    deinit {
        processes.stop()
    }

    /// Kills every server and memcached and removes the directory; returns once done. Stopping
    /// twice does nothing.
    public func stop() {
        processes.stop()
    }

    /// The path of `object` in `container` from `/v1/` on, as a TempURL signature covers it:
    /// `/v1/AUTH_test/photos/p-1`.
    public func objectPath(container: String, object: String) -> String {
        "\(accountPath)/\(container)/\(object)"
    }

    /// The URL of `object` in `container`, with `query` (a TempURL's, say) after a `?` when given.
    public func objectURL(container: String, object: String, query: String? = nil) -> URL {
        let path = "\(container)/\(object)".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "\(container)/\(object)"
        var text = storageURL.absoluteString + "/" + path
        if let query { text += "?" + query }
        return URL(string: text)!
    }

    /// Creates `container` in the account (a container that exists is left as it is).
    /// - Throws: ``RequestError`` unless the store answers 201 or 202.
    public func createContainer(_ container: String) throws {
        let url = storageURL.appendingPathComponent(container)
        let answer = try LoopbackHTTP.send("PUT", url, headers: ["X-Auth-Token": authToken])
        guard answer.status == 201 || answer.status == 202 else {
            throw RequestError(description: "PUT \(url.path) was answered \(answer.status)")
        }
    }

    /// Sets the account's `X-Account-Meta-Temp-URL-Key`, the key every TempURL of the account is
    /// signed with.
    /// - Throws: ``RequestError`` unless the store answers 204.
    public func setTempURLKey(_ key: String) throws {
        let answer = try LoopbackHTTP.send("POST", storageURL, headers: ["X-Auth-Token": authToken, "X-Account-Meta-Temp-URL-Key": key])
        guard answer.status == 204 else {
            throw RequestError(description: "POST \(storageURL.path) (the temp URL key) was answered \(answer.status)")
        }
    }

    /// One start on fresh ports; every process it started is stopped when it throws.
    private static func startOnce(_ programs: Programs, started: ContinuousClock.Instant) throws -> TemporarySwiftStore {
        let processes = try StoreProcesses(directory: makeDirectory())
        do {
            return try startServers(programs, processes, started: started)
        } catch {
            processes.stop()
            throw error
        }
    }

    private static func startServers(_ programs: Programs, _ processes: StoreProcesses, started: ContinuousClock.Instant) throws -> TemporarySwiftStore {
        let directory = processes.directory
        let user = try processUserName()
        for subdirectory in ["devices/d1", "logs"] {
            try FileManager.default.createDirectory(atPath: "\(directory)/\(subdirectory)", withIntermediateDirectories: true)
        }
        let held = try (0..<5).map { _ in try RefusingPort(sharing: .withReusingServer) }
        let ports = Ports(proxy: Int(held[0].port), account: Int(held[1].port), container: Int(held[2].port),
                          object: Int(held[3].port), memcached: Int(held[4].port))

        let rings = try SpawnedProcess.run(
            programs.python[0], Array(programs.python.dropFirst()) + ["-c", ringsScript, directory, "\(ports.account)", "\(ports.container)", "\(ports.object)"],
            environment: environment(), workingDirectory: directory)
        guard rings.termination == .exited(0) else {
            throw StartError(description: "building the rings failed (\(rings.termination)): \(rings.errorText.suffix(2000))")
        }
        let configurations = [
            ("account", storageServerConfiguration("account", directory: directory, port: ports.account, user: user)),
            ("container", storageServerConfiguration("container", directory: directory, port: ports.container, user: user)),
            ("object", storageServerConfiguration("object", directory: directory, port: ports.object, user: user)),
            ("proxy", proxyConfiguration(directory: directory, ports: ports, user: user)),
        ]
        for (name, text) in configurations {
            try text.write(toFile: "\(directory)/\(name)-server.conf", atomically: true, encoding: .utf8)
        }

        // memcached's pid file is never written (it is written only with -d): the option puts the
        // directory on its command line, which is how the keeper knows the process is the store's.
        try processes.launch("memcached", programs.memcached, [
            "-u", user, "-l", "127.0.0.1", "-p", "\(ports.memcached)", "-U", "0", "-t", "2", "-P", "\(directory)/memcached.pid",
        ])
        for (name, program) in [("account", programs.accountServer), ("container", programs.containerServer),
                                ("object", programs.objectServer), ("proxy", programs.proxyServer)] {
            // -v: warnings and errors to standard error too, which goes to logs/<name>.err.
            try processes.launch(name, program, ["\(directory)/\(name)-server.conf", "-v"])
        }

        let proxyURL = URL(string: "http://127.0.0.1:\(ports.proxy)")!
        let readiness = StoreReadiness(proxyURL: proxyURL, storagePorts: [ports.account, ports.container, ports.object])
        // The ports are held until every server listens, then let go: the servers keep them.
        let ready = try withExtendedLifetime(held) { try readiness.wait(for: processes) }
        return TemporarySwiftStore(
            proxyURL: proxyURL, storageURL: ready.storageURL, accountPath: ready.storageURL.path, authToken: ready.token,
            startDuration: ContinuousClock.now - started, processes: processes)
    }

    /// A fresh directory under the system's temporary directory (`/tmp`).
    private static func makeDirectory() throws -> String {
        let parent = FileManager.default.temporaryDirectory.path
        var template = Array("\(parent)/outbox-swift.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) != nil }) else {
            throw StartError(description: "cannot create a directory under \(parent): errno \(errno)")
        }
        // mkdtemp wrote the name in place of the Xs.
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The name of the user this process runs as, which the servers run as too.
    private static func processUserName() throws -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else {
            throw StartError(description: "the user \(geteuid()) this process runs as has no name (getpwuid)")
        }
        return String(cString: name)
    }
}

/// A server of the store that ended before the store was ready.
struct ServerEnded: Error, CustomStringConvertible {
    var description: String
}
