import Foundation
import Outbox
import OutboxAudit
import TestHarness
import OutboxStorage
import Synchronization
import Testing

/// Damage fuzzing: copies of a busy journal cut short at every page boundary, and copies with
/// seeded random byte flips (single bytes and short bursts, anywhere in the file). Each copy is
/// checked in-process by the engine's open-time check (which only reads with `pread`, so cannot
/// fault), then read by every journal-inspect command through the real binary, two at a time.
///
/// Whatever the damage: no signal ever reaches the caller, nothing hangs, every exit code is a
/// documented one for its command, every failure says why on standard error, a file the check
/// refuses is refused alike by every command, and a journal one command cannot open (66) no
/// command can. `OUTBOX_SEED` replays the flips (the journal differs slightly from run to run,
/// so a failing copy is kept and its path printed); `OUTBOX_FUZZ_FLIPS` sets how many flipped
/// copies (default ``defaultFlips``), `OUTBOX_FUZZ_OPERATIONS` how many operations.
@Suite("Damage fuzzing", .hangGuard)
struct DamageFuzzTests {
    /// Sized to stay under two minutes within a whole `swift test` run on two shared cores (see
    /// Docs/testing.md).
    static let defaultFlips = 40
    /// Operations in the journal damaged: a few hundred events.
    static let operations = Int(ProcessInfo.processInfo.environment["OUTBOX_FUZZ_OPERATIONS"] ?? "") ?? 40

    /// One damaged copy of the data file.
    enum Damage: Sendable, CustomStringConvertible {
        /// The file cut to this many bytes.
        case truncated(Int)
        /// These bytes XORed with these masks, from `offset` on.
        case flipped(offset: Int, masks: [UInt8])

        func apply(to original: [UInt8]) -> [UInt8] {
            switch self {
            case .truncated(let size):
                return Array(original.prefix(size))
            case .flipped(let offset, let masks):
                var bytes = original
                for (index, mask) in masks.enumerated() where offset + index < bytes.count { bytes[offset + index] ^= mask }
                return bytes
            }
        }

        var description: String {
            switch self {
            case .truncated(let size): "cut to \(size) bytes"
            case .flipped(let offset, let masks):
                "bytes at \(offset) XOR \(masks.map { String(format: "%02x", $0) }.joined(separator: " "))"
            }
        }
    }

    /// A command and the exit codes it may end with on a damaged journal.
    struct Command: Sendable {
        var name: String
        var arguments: [String]
        var allowed: Set<Int32>
    }

    /// What one run found wrong, to report with the seed.
    struct Problem: Sendable, CustomStringConvertible {
        var damage: Damage
        var command: String
        var what: String
        var description: String { "\(damage), \(command): \(what)" }
    }

    /// The tally, shared by the two workers.
    struct Tally: Sendable {
        var commandsRun = 0
        var exitCodes: [Int32: Int] = [:]
        var containedFaults = 0
        var refusedByCheck = 0
        var problems: [Problem] = []
    }

    @Test func noDamagedCopyKillsHangsOrConfusesTheTool() async throws {
        let environment = ProcessInfo.processInfo.environment
        // A fixed seed unless asked: the same flips every run (the journal's ids still differ).
        let seed = environment["OUTBOX_SEED"].flatMap(UInt64.init) ?? 44
        let flipCount = Soak.size("OUTBOX_FUZZ_FLIPS", quick: Self.defaultFlips, soak: 10 * Self.defaultFlips)
        let started = Date()

        let scratch = TemporaryDirectory("journal-inspect-fuzz")
        let source = scratch.path("source")
        let ids = try await writeBusyJournal(into: source, operations: Self.operations)
        let eventCount = try {
            let reader = try JournalReader(directory: source)
            defer { reader.close() }
            return try reader.summary().eventCount
        }()
        let original = Array(try Data(contentsOf: source.appendingPathComponent("data.mdb")))
        let pageSize = try DataFilePages(source.appendingPathComponent("data.mdb")).pageSize

        var damages: [Damage] = stride(from: 0, to: original.count, by: pageSize).map { .truncated($0) }
        let truncations = damages.count
        var random = SeededRandom(seed: seed)
        for _ in 0..<flipCount {
            let length = random.chance(50) ? 1 : random.int(in: 2..<17)
            let offset = random.int(in: 0..<original.count)
            damages.append(.flipped(offset: offset, masks: (0..<length).map { _ in UInt8(random.int(in: 1..<256)) }))
        }

        let queued = try #require(ids.last).idempotencyKey
        let damagedCodes: Set<Int32> = [0, 65, 66]
        let commands: [Command] = [
            Command(name: "summary", arguments: ["summary"], allowed: damagedCodes),
            Command(name: "ops", arguments: ["ops"], allowed: damagedCodes),
            // An operation the damage hides from the projections is an unknown id: 64.
            Command(name: "timeline", arguments: ["timeline", queued], allowed: damagedCodes.union([64])),
            Command(name: "events", arguments: ["events"], allowed: damagedCodes),
            Command(name: "ledger", arguments: ["ledger"], allowed: damagedCodes),
            Command(name: "verify", arguments: ["verify"], allowed: damagedCodes.union([1])),
            Command(name: "export --all", arguments: ["export", "--all"], allowed: damagedCodes),
            Command(name: "report --html", arguments: ["report", "--html"], allowed: damagedCodes),
        ]

        let tally = Mutex(Tally())
        let next = Atomic<Int>(0)
        let cases = damages
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                DispatchQueue.concurrentPerform(iterations: 2) { worker in
                    while true {
                        let index = next.add(1, ordering: .relaxed).oldValue
                        guard index < cases.count else { break }
                        let found = Self.run(cases[index], original: original, commands: commands,
                                             directory: scratch.path("case-\(index)"), report: scratch.path("report-\(worker).html"))
                        tally.withLock { $0.merge(found) }
                    }
                }
                done.resume()
            }
        }

        let result = tally.withLock { $0 }
        let histogram = result.exitCodes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        print("""
            damage fuzzer (seed \(seed); replay with OUTBOX_SEED=\(seed)): \(truncations) truncations and \(flipCount) flipped \
            copies of a \(original.count)-byte journal (\(ids.count) operations, \(eventCount) events); \(result.refusedByCheck) refused by the \
            open-time check; \(result.commandsRun) commands run; exit codes {\(histogram)}; \(result.containedFaults) \
            contained faults; \(String(format: "%.1f", Date().timeIntervalSince(started))) s
            """)
        for problem in result.problems.prefix(20) {
            Issue.record("seed \(seed): \(problem)")
        }
        #expect(result.problems.isEmpty, "seed \(seed): \(result.problems.count) problems")
        #expect(result.commandsRun == cases.count * commands.count)
    }

    /// Writes one damaged copy, checks it in-process, runs every command on it.
    private static func run(_ damage: Damage, original: [UInt8], commands: [Command], directory: URL, report: URL) -> Tally {
        var tally = Tally()
        func problem(_ command: String, _ what: String) {
            // The journal differs from run to run (the worker's timing): keep the damaged copy to replay.
            let kept = FileManager.default.temporaryDirectory
                .appendingPathComponent("journal-inspect-fuzz-failures/\(directory.lastPathComponent)-\(UUID().uuidString.prefix(8))")
            try? FileManager.default.createDirectory(at: kept.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? FileManager.default.copyItem(at: directory, to: kept)
            tally.problems.append(Problem(damage: damage, command: command, what: "\(what) (copy kept in \(kept.path))"))
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let data = directory.appendingPathComponent("data.mdb")
            try Data(damage.apply(to: original)).write(to: data)

            // The check only reads with pread: it answers, whatever the bytes.
            var refusal: Int32?
            do {
                _ = try LMDBDataFile.check(path: data.path)
            } catch {
                tally.refusedByCheck += 1
                switch error.kind {
                case .truncated, .damaged: refusal = 65
                case .notLMDB, .unsupportedVersion, .empty, .notRegularFile, .inaccessible: refusal = 66
                }
            }

            var statuses: [Int32] = []
            for command in commands {
                var arguments = [directory.path] + command.arguments
                if command.name == "report --html" { arguments += [report.path, "--force"] }
                let result = try runBinary(arguments, keepOutput: false)
                tally.commandsRun += 1
                tally.exitCodes[result.status, default: 0] += result.signal == nil ? 1 : 0
                if result.timedOut {
                    problem(command.name, "did not end within the hang guard (\(Int(hangGuardSeconds)) s)")
                } else if let signal = result.signal {
                    problem(command.name, "the tool died of signal \(signal): \(result.errors.suffix(400))")
                } else if !command.allowed.contains(result.status) {
                    problem(command.name, "exit \(result.status), not one of \(command.allowed.sorted()): \(result.errors.suffix(400))")
                } else if result.status != 0 && result.errors.isEmpty {
                    problem(command.name, "exit \(result.status) with nothing on standard error")
                } else if let refusal, result.status != refusal {
                    problem(command.name, "exit \(result.status), but the open-time check refused the file (\(refusal))")
                }
                if result.errors.contains("reading it failed at the operating-system level") { tally.containedFaults += 1 }
                statuses.append(result.status)
            }
            // Opening is the same for every command: a journal one cannot open, none can.
            if statuses.contains(66) && Set(statuses) != [66] {
                problem("(all)", "some commands could not open the journal (66) and others could: \(statuses)")
            }
        } catch {
            problem("(setup)", "\(error)")
        }
        return tally
    }
}

extension DamageFuzzTests.Tally {
    mutating func merge(_ other: Self) {
        commandsRun += other.commandsRun
        for (code, count) in other.exitCodes { exitCodes[code, default: 0] += count }
        containedFaults += other.containedFaults
        refusedByCheck += other.refusedByCheck
        problems += other.problems
    }
}
