import Foundation
import PostgresTesting

/// One `outbox-test-server` process, started and listening (its first line names its port);
/// stopped with SIGTERM when dropped.
final class ServerProcess: Sendable {
    let process: Process
    let port: UInt16

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
        if process.isRunning {
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
    /// Not through `Process.waitUntilExit()`: on Linux it can miss the end of a child killed
    /// while another test's children come and go, and spin forever beside a zombie. The kernel
    /// is asked instead: a process that is gone or a zombie has ended (its sockets are closed).
    func kill() {
        let pid = process.processIdentifier
        if process.isRunning { _ = Foundation.kill(pid, SIGKILL) }
        // Polls the process table, not a clock: each look is a fact about the child.
        while process.isRunning, !Self.hasEnded(pid) { usleep(5_000) }
    }

    /// Whether `pid` is gone or a zombie, from `/proc/<pid>/stat` (its state is the field after
    /// the parenthesized name).
    private static func hasEnded(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first == "Z"
    }
}
