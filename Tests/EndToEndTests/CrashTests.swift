import Foundation
import Outbox
import TestHarness
import OutboxTestServer
import Testing

/// Real processes killed at random moments, as SQLite's crash tests do. A child opens a journal,
/// enqueues from up to eight writer tasks at once (so commits are shared) while draining to the
/// loopback server, sometimes compacting, and a timer in this process kills it with SIGKILL after
/// a delay drawn from the seed. Three journals in five start in a fresh directory, so that kills
/// land in their very first open; the others start from a copy of one holding 400 synced
/// operations, so that compactions are long enough for kills to land in. After each kill, every
/// enqueue a child reported as returned is in the journal, the journal verifies, and the server
/// has applied no key twice. At the end of each journal's life a child drains it: every write
/// synced and was applied exactly once.
@Suite("Crash tests with real processes", .timeLimit(.minutes(10)))
struct CrashTests {
    /// The fewest kills a run makes; `OUTBOX_CRASH_KILLS` sets more.
    static var kills: Int {
        ProcessInfo.processInfo.environment["OUTBOX_CRASH_KILLS"].flatMap(Int.init) ?? 200
    }

    /// `OUTBOX_CRASH_VERBOSE=1` prints every run: its shape, when it was killed, what it reached.
    static let verbose = ProcessInfo.processInfo.environment["OUTBOX_CRASH_VERBOSE"] != nil

    /// How many operations the journal copied into two lives in five holds.
    static let writtenOperations = (writers: 8, perWriter: 50)

    @Test func killedAtRandomMomentsNothingIsLostOrAppliedTwice() throws {
        let clock = ContinuousClock()
        let began = clock.now
        let setting = try CrashSetting(named: "outbox-crash")
        defer { setting.end() }
        let (seed, server, base) = (setting.seed, setting.server, setting.directory)
        var random = SeededRandom(seed: seed)

        var tally = CrashTally()
        var pace = CrashPace()
        var next = 0
        let written = try writeJournal(base.appendingPathComponent("written"), first: next, server: server, seed: seed)
        next += written.count
        tally.enqueuesReported += written.count

        let faultKinds: [Fault.Kind] = [.dropAfterCommit, .unavailable, .rateLimited, .serverError]
        while tally.kills < Self.kills {
            // A journal's life: a fresh directory or a copy of the written journal, a few
            // children killed in turn, then one that runs until everything is drained.
            var life = JournalLife(
                directory: base.appendingPathComponent("journal-\(tally.journals)"), seed: seed, name: "journal \(tally.journals)")
            tally.journals += 1
            if Int.random(in: 0..<5, using: &random) < 2 {
                try FileManager.default.createDirectory(at: life.directory, withIntermediateDirectories: true)
                try FileManager.default.copyItem(
                    at: base.appendingPathComponent("written/data.mdb"), to: life.directory.appendingPathComponent("data.mdb"))
                life.reported = written
                life.backlog = written.count
                life.opened = true
                tally.copiedJournals += 1
            }
            for _ in 0..<Int.random(in: 2...8, using: &random) where tally.kills < Self.kills {
                // Now and then the server misbehaves for the child's next requests.
                if Int.random(in: 0..<3, using: &random) == 0 {
                    server.addFaults((0..<Int.random(in: 1...3, using: &random)).map { _ in
                        Fault(faultKinds.randomElement(using: &random)!, retryAfterSeconds: 0)
                    })
                }
                let firstOpen = !life.opened
                // The first three children of a fresh directory aim at its first open, until one
                // has opened it.
                let aimAtFirstOpen = firstOpen && life.runs < 3
                let run = CrashRun(first: next, backlog: life.backlog, aimedAtFirstOpen: aimAtFirstOpen, using: &random)
                next += run.enqueues
                let (delay, aim) = pace.killDelay(
                    run, aimAtFirstOpen: aimAtFirstOpen, firstOpen: firstOpen, backlog: life.backlog, using: &random)
                life.runs += 1
                let child = try ChildProcess("outbox-test-child", run.arguments(directory: life.directory, server: server.baseURL))
                child.kill(after: delay)
                let report = CrashRun.Report(child.readToEnd())
                let ending = child.waitForEnding()
                if Self.verbose {
                    let reached = report.milestones.sorted { $0.value < $1.value }.map { "\($0.key) \(Int($0.value * 1000))" }
                    let shape = "\(run.writers)x\(run.perWriter) \(run.durability.rawValue)\(run.compacting ? " compacting" : "")"
                    print(
                        "crash-tests: \(life.context): \(shape), backlog \(life.backlog), aimed at \(aim.rawValue), "
                            + "kill at \(Int(delay * 1000)) ms, ended \(ending) in \(report.phase.rawValue); \(reached.joined(separator: ", "))")
                }
                pace.observe(report, of: run, firstOpen: firstOpen, backlog: life.backlog, endedAt: delay)
                tally.count(run, report)
                life.reported += report.enqueued
                life.opened = life.opened || report.opened
                if run.compacting && report.milestones["compacted"] != nil { life.backlog = 0 }
                life.backlog += report.enqueued.count
                #expect(report.unexpected.isEmpty, "\(life.context): unexpected lines \(report.unexpected)")
                switch ending {
                case .signalled(SIGKILL):
                    tally.countKill(report.phase, firstOpen: firstOpen)
                case .exited(0) where report.finished:
                    tally.completed += 1
                default:
                    tally.failures += 1
                    Issue.record("\(life.context): the child ended \(ending) in \(report.phase.rawValue): \(child.errorOutput)")
                }
                switch checkAfterKill(life, server: server) {
                case .checked: break
                case .noJournalYet: tally.noJournalYet += 1
                case .unreadable: tally.unreadable += 1
                }
            }
            try settle(life, server: server)
            try? FileManager.default.removeItem(at: life.directory)
        }

        let applied = try server.appliedCounts()
        #expect(applied.values.allSatisfy { $0 == 1 }, "seed \(seed): keys applied more than once: \(applied.filter { $0.value > 1 })")
        tally.keysApplied = applied.count
        print("crash-tests: seed \(seed), \(tally.summary), \(String(format: "%.1f", (clock.now - began) / .seconds(1))) s")
    }

    /// Writes the journal copied into two lives in five: a child that is not killed enqueues
    /// ``writtenOperations`` and another drains them, so that all of them are settled, ready to
    /// be compacted.
    /// - Returns: the operations, every one reported and synced.
    private func writeJournal(_ directory: URL, first: Int, server: TestServer, seed: UInt64) throws -> [OperationID] {
        let run = CrashRun(first: first, writers: Self.writtenOperations.writers, perWriter: Self.writtenOperations.perWriter)
        let child = try ChildProcess("outbox-test-child", run.arguments(directory: directory, server: server.baseURL))
        let report = CrashRun.Report(child.readToEnd())
        let ending = child.waitForEnding()
        try #require(ending == .exited(0) && report.finished, "seed \(seed): writing the journal to copy: \(ending), \(child.errorOutput)")
        try #require(report.enqueued.count == run.enqueues)
        let life = JournalLife(directory: directory, seed: seed, name: "the journal to copy", reported: report.enqueued)
        try settle(life, server: server)
        return report.enqueued
    }

    /// What a check after a kill found.
    enum Check {
        case checked
        /// No journal yet (`notAJournal`), while nothing was reported.
        case noJournalYet
        /// The journal could not be read: recorded as an issue.
        case unreadable
    }

    /// After a kill: every reported enqueue is there, the journal verifies clean, and the server
    /// applied no key twice. A directory holds no journal yet only while nothing was reported.
    private func checkAfterKill(_ life: JournalLife, server: TestServer) -> Check {
        do {
            let reader = try JournalReader(directory: life.directory)
            defer { reader.close() }
            for id in life.reported {
                #expect(try reader.operation(id) != nil, "\(life.context): the returned enqueue \(id) is lost")
            }
            let report = try reader.verify()
            #expect(report.isClean, "\(life.context): \(report.findings.prefix(3))")
            let twice = try server.appliedCounts().filter { $0.value > 1 }
            #expect(twice.isEmpty, "\(life.context): applied twice: \(twice)")
            return .checked
        } catch OutboxError.notAJournal(_, let reason) where life.reported.isEmpty {
            if Self.verbose { print("crash-tests: \(life.context): no journal yet: \(reason)") }
            return .noJournalYet
        } catch {
            Issue.record("\(life.context): the journal cannot be read: \(error) (\(life.files))")
            return .unreadable
        }
    }

    /// The network is sound again and the app runs to the end: everything in the journal is
    /// synced, and was applied exactly once.
    private func settle(_ life: JournalLife, server: TestServer) throws {
        let settle = try ChildProcess("outbox-test-child", ["settle", life.directory.path, server.baseURL.absoluteString])
        // Settling takes well under a second; a child still busy after a minute is stuck.
        settle.kill(after: 60)
        let lines = settle.readToEnd().map(\.text)
        let ending = settle.waitForEnding()
        #expect(ending == .exited(0), "\(life.context): the settling child ended \(ending): \(settle.errorOutput)")
        #expect(lines.count == 1 && lines[0].hasPrefix("settled ") && lines[0].hasSuffix(" 0"), "\(life.context): \(lines)")
        do {
            let reader = try JournalReader(directory: life.directory)
            defer { reader.close() }
            let report = try reader.verify()
            #expect(report.isClean, "\(life.context), settled: \(report.findings.prefix(3))")
            let applied = try server.appliedCounts()
            for id in life.reported {
                #expect(try reader.operation(id)?.status == .synced, "\(life.context): \(id) did not sync")
            }
            for operation in try reader.operations(matching: OperationQuery(limit: .max)).operations {
                #expect(operation.status == .synced, "\(life.context): \(operation.id) is \(operation.status)")
                let times = applied[operation.id.idempotencyKey] ?? 0
                #expect(times == 1, "\(life.context): \(operation.id) applied \(times) times")
            }
        } catch {
            Issue.record("\(life.context), settled: the journal cannot be read: \(error)")
        }
    }
}

/// What every crash test runs in: a seed (`OUTBOX_SEED`'s, to replay a run, else a fresh one), the
/// loopback server its children send to, and a directory of its own for their journals.
struct CrashSetting {
    let seed: UInt64
    let server: TestServer
    let directory: URL

    /// - Parameter name: how the directory's name begins, to tell whose it is.
    init(named name: String) throws {
        seed = ProcessInfo.processInfo.environment["OUTBOX_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        server = try TestServer(.init(readTimeout: 5))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }

    /// Stops the server and removes the journals.
    func end() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One journal directory, from its first open to its settling.
struct JournalLife {
    var directory: URL
    var seed: UInt64
    var name: String
    /// Children run against it so far.
    var runs = 0
    /// Every enqueue a child reported as returned.
    var reported: [OperationID] = []
    /// Whether a child has reported the journal open.
    var opened = false
    /// Enqueues reported since a child last compacted it.
    var backlog = 0

    init(directory: URL, seed: UInt64, name: String, reported: [OperationID] = []) {
        self.directory = directory
        self.seed = seed
        self.name = name
        self.reported = reported
    }

    /// The directory's files and their sizes, to tell what a kill left.
    var files: String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[.size]) as? Int
            return "\(name) \(size.map(String.init) ?? "?") bytes"
        }.joined(separator: ", ")
    }

    /// Where a failure happened, to find it again with `OUTBOX_SEED`.
    var context: String { "seed \(seed), \(name), run \(runs)" }
}

/// What the crash tests did, for the line they print.
struct CrashTally {
    var kills = 0
    var killsByPhase: [CrashRun.Phase: Int] = [:]
    var killsInFirstOpen = 0
    var completed = 0
    var failures = 0
    var journals = 0
    var copiedJournals = 0
    var noJournalYet = 0
    var unreadable = 0
    var enqueuesReported = 0
    var keysApplied = 0
    var runsByWriters: [Int: Int] = [:]
    var compactingRuns = 0

    mutating func count(_ run: CrashRun, _ report: CrashRun.Report) {
        runsByWriters[run.writers, default: 0] += 1
        enqueuesReported += report.enqueued.count
        if run.compacting { compactingRuns += 1 }
    }

    mutating func countKill(_ phase: CrashRun.Phase, firstOpen: Bool) {
        kills += 1
        killsByPhase[phase, default: 0] += 1
        if phase == .opening && firstOpen { killsInFirstOpen += 1 }
    }

    var summary: String {
        let phases = CrashRun.Phase.allCases.map { "\($0.rawValue) \(killsByPhase[$0, default: 0])" }.joined(separator: ", ")
        let writers = runsByWriters.keys.sorted().map { "\($0):\(runsByWriters[$0]!)" }.joined(separator: " ")
        return "\(kills) kills (\(phases); \(killsInFirstOpen) in a journal's first open), "
            + "\(completed) runs completed, \(failures) failed, "
            + "\(journals) journals (\(copiedJournals) copied; \(noJournalYet) checks found no journal yet, \(unreadable) could not read one), "
            + "\(compactingRuns) runs compacting, \(enqueuesReported) enqueues reported, \(keysApplied) keys applied once each, "
            + "runs by writer tasks \(writers)"
    }
}
