import Foundation
import Outbox
import OutboxAudit
import TestHarness

/// One run of `outbox-test-child crash-worker`, drawn from the seed: how many writer tasks
/// enqueue at once, how many products each, with which durability, whether it compacts, and
/// where it is killed: at the n-th pass of a durable step it is told, where it kills itself, or
/// (the soak's only) by this process's timer at a random moment.
struct CrashRun {
    /// The child's durable steps, as it names them (see outbox-test-child's Steps.swift).
    enum Step: String, CaseIterable {
        /// Before the engine opens the journal: in a fresh directory, before there is one.
        case opening
        /// The opening's commit (its `journalOpened`, and the abandonment of what the last child
        /// left in flight).
        case opened
        /// An enqueue's commit, before the enqueue returns (so not yet reported).
        case enqueue
        /// `attemptStarted` durable, the request not yet sent.
        case start
        /// The server's answer back (the server committed), its outcome not yet committed.
        case answer
        /// The outcome's commit.
        case outcome
        /// A compaction's last commit, before it returns.
        case compact
        /// The writers' last enqueue returned; the last drain and compaction not begun.
        case written
        /// `close` returned, the process not yet ended.
        case closed
    }

    /// How the run is to end.
    enum Ending: Equatable {
        /// The child kills itself with SIGKILL at the `occurrence`-th pass of `step`.
        case atStep(Step, occurrence: Int)
        /// This process kills it with SIGKILL `seconds` after its start (the soak's random kills).
        case timer(seconds: Double)
        /// It runs to its end.
        case none
    }

    var first: Int
    var writers: Int
    var perWriter: Int
    var durability: OutboxConfiguration.Durability
    var compacting: Bool
    var ending: Ending

    var enqueues: Int { writers * perWriter }

    /// - Parameters:
    ///   - backlog: operations reported since the journal was last compacted. A child compacts
    ///     more often when there is much to compact (and always when killed at a compaction).
    ///   - step: the step to kill it at; `nil` for a kill at a random moment from `pace`. The
    ///     step's pass is one the child is sure to reach: the only pass of the opening, the
    ///     opening's commit, `written` and `closed`; one of its own enqueues; one of the first
    ///     three sends of its enqueues (each is sent at least once before it ends), with their
    ///     answers and outcomes; one of the two compactions every compacting child makes.
    init(first: Int, backlog: Int, step: Step?, pace: RandomKillPace, using random: inout SeededRandom) {
        self.first = first
        writers = random.int(in: 1..<9)
        perWriter = random.int(in: 1..<7)
        durability = random.chance(50) ? .full : .processCrash
        let compacts = random.int(in: 0..<4) < (backlog >= 40 ? 3 : 1)
        compacting = compacts || step == .compact
        // Drawn every time, so that a seed makes the same draws whatever the step.
        let (enqueueDraw, sendDraw, compactionDraw) = (random.int(in: 0..<1000), random.int(in: 0..<3), random.int(in: 0..<2))
        let delay = pace.killDelay(using: &random)
        let enqueues = writers * perWriter
        ending =
            switch step {
            case nil: .timer(seconds: delay)
            case .enqueue?: .atStep(.enqueue, occurrence: 1 + enqueueDraw % enqueues)
            case let send? where [.start, .answer, .outcome].contains(send): .atStep(send, occurrence: 1 + sendDraw % min(3, enqueues))
            case .compact?: .atStep(.compact, occurrence: 1 + compactionDraw)
            case let once?: .atStep(once, occurrence: 1)
            }
    }

    /// A run that writes without compacting, with `.processCrash` durability, to its end.
    init(first: Int, writers: Int, perWriter: Int) {
        self.first = first
        self.writers = writers
        self.perWriter = perWriter
        durability = .processCrash
        compacting = false
        ending = .none
    }

    func arguments(directory: URL, server: URL) -> [String] {
        let stop = if case .atStep(let step, let occurrence) = ending { "\(step.rawValue):\(occurrence)" } else { "none" }
        return [
            "crash-worker", directory.path, server.absoluteString, String(first), String(writers), String(perWriter),
            durability.rawValue, compacting ? "compact" : "write", stop,
        ]
    }

    /// Where the child was in its work when it ended, read from the lines it printed.
    enum Phase: String, CaseIterable {
        /// Started, not yet opening the journal.
        case starting
        /// Opening the journal.
        case opening
        /// Between open and the writers' last enqueue: enqueueing, sending, committing.
        case writing
        /// Between announcing a compaction and reporting it done (while writing or closing).
        case compacting
        /// After the writers' last enqueue: the last drain and compaction, closing, exiting.
        case closing
    }

    /// What the child printed before it ended.
    struct Report {
        /// The enqueues it reported as returned.
        var enqueued: [OperationID] = []
        var phase = Phase.starting
        /// Whether it reported its journal open.
        var opened = false
        var finished = false
        /// The step it killed itself at.
        var stopped: Step?
        /// When it reached each milestone ("opening", "opened", its first "compacting" and
        /// "compacted", "written", "done"), in seconds after it started.
        var milestones: [String: Double] = [:]
        /// Lines it should not have printed.
        var unexpected: [String] = []

        init(_ lines: [ChildProcess.Line]) {
            var compactionsUnderway = 0
            var phase = Phase.starting
            for line in lines {
                let parts = line.text.split(separator: " ")
                switch parts.first {
                case "opening":
                    phase = .opening
                    milestones["opening"] = line.seconds
                case "opened":
                    phase = .writing
                    opened = true
                    milestones["opened"] = line.seconds
                case "enqueued":
                    if parts.count == 3, let id = OperationID(String(parts[1])) {
                        enqueued.append(id)
                    } else {
                        unexpected.append(line.text)
                    }
                case "compacting":
                    compactionsUnderway += 1
                    if milestones["compacting"] == nil { milestones["compacting"] = line.seconds }
                case "compacted":
                    compactionsUnderway -= 1
                    if milestones["compacted"] == nil { milestones["compacted"] = line.seconds }
                case "written":
                    phase = .closing
                    milestones["written"] = line.seconds
                case "stop" where parts.count == 3: stopped = Step(rawValue: String(parts[1]))
                case "drained", "closed": break
                case "done":
                    finished = true
                    milestones["done"] = line.seconds
                default: unexpected.append(line.text)
                }
            }
            self.phase = compactionsUnderway > 0 ? .compacting : phase
        }
    }
}
