import Foundation
import OutboxSimulation
import PostgresTesting

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One `outbox-test-server` process, started and listening (its first line names its port);
/// stopped with SIGTERM when dropped.
final class ServerProcess: @unchecked Sendable {
    // Why unchecked: `child` buffers its output and is read only while starting, on one thread;
    // afterwards only its process is signalled and waited for, which Process allows from any thread.
    let child: ChildProcess
    let port: UInt16

    enum StartError: Error {
        case noPortLine(String)
    }

    /// Starts the executable with `arguments` (and `environment` added) and reads its port.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        child = try ChildProcess("outbox-test-server", arguments, environment: environment)
        let line = try child.readLine()
        let prefix = "listening on 127.0.0.1:"
        guard line.hasPrefix(prefix), let port = UInt16(line.dropFirst(prefix.count)) else {
            child.kill()
            throw StartError.noPortLine(line)
        }
        self.port = port
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
        if child.process.isRunning {
            child.process.terminate()
            child.wait()
        }
    }

    var baseURL: URL {
        // A literal address and a number always make a URL.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Stops the process with SIGTERM and answers its exit status.
    func terminate() -> Int32 {
        child.process.terminate()
        return child.wait()
    }

    /// Kills the process with SIGKILL, as a crash would, and waits for it to end.
    func kill() {
        child.kill()
        child.wait()
    }
}
