import Foundation
import Outbox
import OutboxAudit
import TestHarness
import OutboxTestServer
import Testing

/// Real processes killed at each durable step of the engine's work, as SQLite's crash tests do.
/// A child opens a journal, enqueues from up to eight writer tasks at once (so commits are
/// shared) while draining to the loopback server, sometimes compacting, and kills itself with
/// SIGKILL at the step it was told: before the open, the opening's commit, an enqueue's commit,
/// `attemptStarted`, the server's answer before its outcome, the outcome's commit, a
/// compaction's last commit, after the last enqueue, after close. The steps are aimed at in turn,
/// so a default run kills at every one of them three times, the same way on every machine. Three
/// journals in five start in a fresh directory, so that kills land in their very first open; the
/// others start from a copy of one holding 400 synced operations, so that compactions have work
/// to do. After each kill, every enqueue a child reported as returned is in the journal, the
/// journal verifies, and the server has applied no key twice. At the end of each journal's life
/// a child drains it: every write synced and was applied exactly once. The soak
/// (`OUTBOX_SOAK=1`) also kills one child in four by a timer at a random moment, after which the
/// same checks hold wherever it landed.
@Suite("Crash tests with real processes", .timeLimit(.minutes(10)))
struct CrashTests {
    /// The kills a run makes: three at each step by default; the soak's 200, or
    /// `OUTBOX_CRASH_KILLS`.
    static var kills: Int { SoakSize.count("OUTBOX_CRASH_KILLS", quick: 3 * CrashRun.Step.allCases.count, soak: 200) }

    /// `OUTBOX_CRASH_VERBOSE=1` prints every run: its shape, how it was to end, what it reached.
    static let verbose = SoakSize.verbose

    /// How many operations the journal copied into two lives in five holds.
    static let writtenOperations = (writers: 8, perWriter: 50)

    @Test func killedAtEveryDurableStepNothingIsLostOrAppliedTwice() throws {
        let clock = ContinuousClock()
        let began = clock.now
        let setting = try CrashSetting(named: "outbox-crash")
        defer { setting.end() }
        let (seed, server, base) = (setting.seed, setting.server, setting.directory)
        var random = SeededRandom(seed: seed)

        var tally = CrashTally()
        var pace = RandomKillPace()
        var next = 0
        let written = try writeJournal(base.appendingPathComponent("written"), first: next, server: server, seed: seed)
        next += written.count
        tally.enqueuesReported += written.count

        let faultKinds: [Fault.Kind] = [.dropAfterCommit, .unavailable, .rateLimited, .serverError]
        let kills = Self.kills
        while tally.ended < kills {
            // A journal's life: a fresh directory or a copy of the written journal, a few
            // children killed in turn, then one that runs until everything is drained.
            var life = JournalLife(
                directory: base.appendingPathComponent("journal-\(tally.journals)"), seed: seed, name: "journal \(tally.journals)")
            tally.journals += 1
            if random.int(in: 0..<5) < 2 {
                try FileManager.default.createDirectory(at: life.directory, withIntermediateDirectories: true)
                try FileManager.default.copyItem(
                    at: base.appendingPathComponent("written/data.mdb"), to: life.directory.appendingPathComponent("data.mdb"))
                life.reported = written
                life.backlog = written.count
                life.opened = true
                tally.copiedJournals += 1
            }
            for _ in 0..<random.int(in: 2..<9) where tally.ended < kills {
                // Now and then the server misbehaves for the child's next requests.
                if random.chance(33) {
                    server.addFaults((0..<random.int(in: 1..<4)).map { _ in
                        Fault(random.pick(faultKinds)!, retryAfterSeconds: 0)
                    })
                }
                let firstOpen = !life.opened
                // The next step in turn; in the soak, one child in four at a random moment instead.
                let atRandom = random.chance(25) && SoakSize.soaking
                let step = atRandom ? nil : CrashRun.Step.allCases[tally.aimed % CrashRun.Step.allCases.count]
                if step != nil { tally.aimed += 1 }
                let run = CrashRun(first: next, backlog: life.backlog, step: step, pace: pace, using: &random)
                next += run.enqueues
                life.runs += 1
                let child = try ChildProcess("outbox-test-child", run.arguments(directory: life.directory, server: server.baseURL))
                if case .timer(let seconds) = run.ending { child.kill(after: seconds) } else { child.kill(after: SoakSize.hangGuardSeconds) }
                let report = CrashRun.Report(child.readToEnd())
                let ending = child.waitForEnding()
                if Self.verbose {
                    let reached = report.milestones.sorted { $0.value < $1.value }.map { "\($0.key) \(Int($0.value * 1000))" }
                    let shape = "\(run.writers)x\(run.perWriter) \(run.durability.rawValue)\(run.compacting ? " compacting" : "")"
                    print(
                        "crash-tests: \(life.context): \(shape), backlog \(life.backlog), to end \(run.ending), "
                            + "ended \(ending) in \(report.phase.rawValue)\(report.stopped.map { " at \($0.rawValue)" } ?? ""); "
                            + reached.joined(separator: ", "))
                }
                pace.observe(openedAt: report.milestones["opened"], doneAt: report.milestones["done"])
                tally.count(run, report)
                life.reported += report.enqueued
                life.opened = life.opened || report.opened
                if run.compacting && report.milestones["compacted"] != nil { life.backlog = 0 }
                life.backlog += report.enqueued.count
                #expect(report.unexpected.isEmpty, "\(life.context): unexpected lines \(report.unexpected)")
                switch (ending, run.ending) {
                case (.signalled(SIGKILL), .atStep(let step, _)) where report.stopped == step:
                    tally.countKill(at: step, firstOpen: firstOpen)
                case (.signalled(SIGKILL), .timer) where report.stopped == nil:
                    tally.countRandomKill(report.phase)
                case (.exited(0), .timer) where report.finished:
                    tally.completed += 1
                default:
                    // A child told a step reaches it: one that ends otherwise fails the test.
                    tally.failures += 1
                    Issue.record("\(life.context): to end \(run.ending), the child ended \(ending) in \(report.phase.rawValue): \(child.errorOutput)")
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
        if tally.aimed >= CrashRun.Step.allCases.count {
            let missed = CrashRun.Step.allCases.filter { tally.killsAtStep[$0, default: 0] == 0 }
            #expect(missed.isEmpty, "seed \(seed): no kill at \(missed.map(\.rawValue))")
        }
        #expect(tally.failures == 0)
        print("crash-tests: seed \(seed), \(tally.summary), \(String(format: "%.1f", (clock.now - began) / .seconds(1))) s")
    }

    /// Writes the journal copied into two lives in five: a child that is not killed enqueues
    /// ``writtenOperations`` and another drains them, so that all of them are settled, ready to
    /// be compacted.
    /// - Returns: the operations, every one reported and synced.
    private func writeJournal(_ directory: URL, first: Int, server: TestServer, seed: UInt64) throws -> [OperationID] {
        let run = CrashRun(first: first, writers: Self.writtenOperations.writers, perWriter: Self.writtenOperations.perWriter)
        let child = try ChildProcess("outbox-test-child", run.arguments(directory: directory, server: server.baseURL))
        child.kill(after: SoakSize.hangGuardSeconds)
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
        // Settling takes well under a second: the guard fires only on a child that is stuck.
        settle.kill(after: SoakSize.hangGuardSeconds)
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

/// What every crash test runs in: a seed (``SoakSize/seed``: a fixed one, or `OUTBOX_SEED`'s), the
/// loopback server its children send to, and a directory of its own for their journals.
struct CrashSetting {
    let seed: UInt64
    let server: TestServer
    let directory: URL

    /// - Parameter name: how the directory's name begins, to tell whose it is.
    init(named name: String) throws {
        seed = SoakSize.seed
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
    /// Children told a step to stop at.
    var aimed = 0
    var killsAtStep: [CrashRun.Step: Int] = [:]
    /// The soak's kills at random moments, by where they landed.
    var randomKills: [CrashRun.Phase: Int] = [:]
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

    var kills: Int { killsAtStep.values.reduce(0, +) + randomKills.values.reduce(0, +) }
    /// Kills and failures: what a run counts up to its size (a child that fails is not retried).
    var ended: Int { kills + failures }

    mutating func count(_ run: CrashRun, _ report: CrashRun.Report) {
        runsByWriters[run.writers, default: 0] += 1
        enqueuesReported += report.enqueued.count
        if run.compacting { compactingRuns += 1 }
    }

    /// A kill at the step the child was told, in a journal no child had opened yet or not.
    mutating func countKill(at step: CrashRun.Step, firstOpen: Bool) {
        killsAtStep[step, default: 0] += 1
        if firstOpen && [.opening, .opened].contains(step) { killsInFirstOpen += 1 }
    }

    mutating func countRandomKill(_ phase: CrashRun.Phase) {
        randomKills[phase, default: 0] += 1
    }

    var summary: String {
        let steps = CrashRun.Step.allCases.map { "\($0.rawValue) \(killsAtStep[$0, default: 0])" }.joined(separator: ", ")
        let phases = CrashRun.Phase.allCases.map { "\($0.rawValue) \(randomKills[$0, default: 0])" }.joined(separator: ", ")
        let writers = runsByWriters.keys.sorted().map { "\($0):\(runsByWriters[$0]!)" }.joined(separator: " ")
        return "\(kills) kills (at a step: \(steps); \(killsInFirstOpen) in a journal's first open; at random: \(phases)), "
            + "\(completed) runs completed, \(failures) failed, "
            + "\(journals) journals (\(copiedJournals) copied; \(noJournalYet) checks found no journal yet, \(unreadable) could not read one), "
            + "\(compactingRuns) runs compacting, \(enqueuesReported) enqueues reported, \(keysApplied) keys applied once each, "
            + "runs by writer tasks \(writers)"
    }
}
