import Foundation
import Synchronization
import PostgresTesting

/// One `outbox-test-server` process, started and listening (its first line names its port);
/// stopped with SIGTERM when dropped.
final class ServerProcess: Sendable {
    let process: Process
    let port: UInt16
    /// Set once ``kill()`` has reaped the child.
    private let killed = Atomic<Bool>(false)

    /// Starts the executable with `arguments` (and `environment` added) and reads its port.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let (process, output, _) = try OutboxTestServerBinaryTests.launch(arguments, environment: environment)
        self.process = process
        do {
            port = try OutboxTestServerBinaryTests.port(from: output)
        } catch {
            process.terminate()
            throw error
        }
    }

    /// Several servers on one schema of the tests' PostgreSQL: `--postgres env:VARIABLE` with the
    /// database's connection string in VARIABLE and the schema in `PGOPTIONS`.
    static func onPostgres(_ count: Int, schema: TestSchema, _ arguments: [String] = []) throws -> [ServerProcess] {
        let base = try TestPostgres.settings()
        let environment = ["OUTBOX_TEST_SERVER_POSTGRES": base.conninfo, "PGOPTIONS": "-c search_path=\(schema.name)"]
        var started: [ServerProcess] = []
        for _ in 0..<count {
            started.append(try ServerProcess(
                ["--postgres", "env:OUTBOX_TEST_SERVER_POSTGRES", "--pool-size", "4", "--read-timeout", "2"] + arguments,
                environment: environment))
        }
        return started
    }

    deinit {
        // A child reaped by ``kill()`` may still read as running to `Process`.
        if !killed.load(ordering: .acquiring), process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    var baseURL: URL {
        // A literal address and a number always make a URL.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Kills the process with SIGKILL, as a crash would, and waits for it to end.
    ///
    /// Not through `Process.waitUntilExit()`: on Linux it can miss the end of a child killed while
    /// other tests' children come and go, and spin forever beside a zombie. `waitpid` blocks until
    /// the kernel has the child's end; `ECHILD` means Foundation reaped it first, which is an end too.
    func kill() {
        let pid = process.processIdentifier
        guard process.isRunning else { return }
        _ = Foundation.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        killed.store(true, ordering: .releasing)
    }
}
