import Foundation
import TestHarness
import ThrowawayPostgres

/// One `outbox-test-server` process, started and listening (its first line names its port);
/// stopped with SIGTERM when dropped.
final class ServerProcess: Sendable {
    let process: SpawnedProcess
    let port: UInt16

    /// Starts the executable with `arguments` (and `environment` added) and reads its port.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process = try OutboxTestServerBinaryTests.launch(arguments, environment: environment)
        do {
            port = try OutboxTestServerBinaryTests.port(from: process)
        } catch {
            process.signal(SIGTERM)
            throw error
        }
    }

    /// Several servers on one schema of the tests' PostgreSQL: `--postgres env:VARIABLE` with the
    /// database's connection string in VARIABLE and the schema in `PGOPTIONS`.
    static func onPostgres(_ count: Int, schema: TestSchema, _ arguments: [String] = []) throws -> [ServerProcess] {
        try onPostgres(count, conninfo: try TestPostgres.settings().conninfo, environment: ["PGOPTIONS": "-c search_path=\(schema.name)"], arguments)
    }

    /// Several servers on the database `conninfo` names, with `environment` besides.
    static func onPostgres(_ count: Int, conninfo: String, environment extra: [String: String] = [:], _ arguments: [String] = []) throws -> [ServerProcess] {
        let environment = extra.merging(["OUTBOX_TEST_SERVER_POSTGRES": conninfo]) { $1 }
        var started: [ServerProcess] = []
        for _ in 0..<count {
            started.append(try ServerProcess(
                ["--postgres", "env:OUTBOX_TEST_SERVER_POSTGRES", "--pool-size", "4", "--read-timeout", "2"] + arguments,
                environment: environment))
        }
        return started
    }

    deinit {
        if process.signal(SIGTERM) { _ = process.wait() }
    }

    var baseURL: URL {
        // A literal address and a number always make a URL.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Kills the process with SIGKILL, as a crash would, and waits for it to end.
    func kill() {
        process.kill()
        _ = process.wait()
    }
}
