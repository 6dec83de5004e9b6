import Foundation
import Outbox
import OutboxSimulation
import OutboxTestServer
import Testing

/// Real processes killed at random moments, as SQLite's crash tests do: a child enqueues and
/// drains against the loopback server, and is killed with SIGKILL. After each kill, every
/// enqueue it reported as returned is in the journal, the journal verifies, and the server has
/// applied no key twice. At the end the queue drains and every write was applied exactly once.
@Suite("Crash tests with real processes", .timeLimit(.minutes(5)))
struct CrashTests {
    static var kills: Int {
        ProcessInfo.processInfo.environment["OUTBOX_CRASH_KILLS"].flatMap(Int.init) ?? 100
    }

    @Test func killedAtRandomMomentsNothingIsLostOrAppliedTwice() throws {
        let seed = ProcessInfo.processInfo.environment["OUTBOX_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        let server = try TestServer(.init(readTimeout: 5))
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }

        var reported: [OperationID] = []
        var kills = 0
        var completed = 0
        var next = 0
        let faultKinds: [Fault.Kind] = [.dropAfterCommit, .unavailable, .rateLimited, .serverError]
        while kills < Self.kills {
            // Now and then the server misbehaves for the child's next requests.
            if Int.random(in: 0..<3, using: &random) == 0 {
                server.addFaults((0..<Int.random(in: 1...3, using: &random)).map { _ in
                    Fault(faultKinds.randomElement(using: &random)!, retryAfterSeconds: 0)
                })
            }
            let count = 6
            let durability = Bool.random(using: &random) ? "full" : "processCrash"
            let child = try ChildProcess("outbox-test-child", [
                "crash-worker", directory.path, server.baseURL.absoluteString, String(next), String(count), durability,
            ])
            next += count
            // Kill after a random number of the child's lines: it is enqueueing, sending and
            // committing all the while, so the kill lands anywhere in that work.
            let linesBeforeKill = Int.random(in: 0...count, using: &random)
            var finished = false
            for _ in 0..<linesBeforeKill {
                guard let line = try? child.readLine() else { break }
                if line == "done" {
                    finished = true
                    break
                }
                let parts = line.split(separator: " ")
                if parts.count == 3, parts[0] == "enqueued", let id = OperationID(String(parts[1])) { reported.append(id) }
            }
            if finished {
                completed += 1
            } else if child.kill() {
                kills += 1
            }
            child.wait()
            try checkJournal(directory, reported: reported, server: server, seed: seed, after: kills)
        }

        // The network is sound again and the app runs to the end: everything drains, once.
        let settle = try ChildProcess("outbox-test-child", ["settle", directory.path, server.baseURL.absoluteString])
        let line = try settle.readLine()
        #expect(settle.wait() == 0)
        #expect(line.hasPrefix("settled "), "seed \(seed): \(line)")
        try checkJournal(directory, reported: reported, server: server, seed: seed, after: kills)
        let applied = try server.appliedCounts()
        let reader = try JournalReader(directory: directory)
        defer { reader.close() }
        for id in reported {
            #expect(try reader.operation(id)?.status == .synced, "seed \(seed): \(id) did not sync")
            #expect(applied[id.idempotencyKey] == 1, "seed \(seed): \(id) applied \(applied[id.idempotencyKey] ?? 0) times")
        }
        print("crash-tests: seed \(seed), \(kills) kills, \(completed) runs completed, \(reported.count) enqueues reported, \(applied.count) keys applied once each")
    }

    /// Every reported enqueue is there, the journal verifies clean, no key applied twice.
    private func checkJournal(_ directory: URL, reported: [OperationID], server: TestServer, seed: UInt64, after kills: Int) throws {
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
            #expect(reported.isEmpty, "seed \(seed): the journal is gone")
            return
        }
        let reader = try JournalReader(directory: directory)
        defer { reader.close() }
        for id in reported {
            #expect(try reader.operation(id) != nil, "seed \(seed), kill \(kills): a returned enqueue is lost")
        }
        let report = try reader.verify()
        #expect(report.isClean, "seed \(seed), kill \(kills): \(report.findings.prefix(3))")
        let twice = try server.appliedCounts().filter { $0.value > 1 }
        #expect(twice.isEmpty, "seed \(seed), kill \(kills): applied twice: \(twice)")
    }
}
