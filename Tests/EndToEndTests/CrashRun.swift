import Foundation
import Outbox
import TestHarness

/// One run of `outbox-test-child crash-worker`, drawn from the seed: how many writer tasks
/// enqueue at once, how many products each, with which durability, and whether it compacts.
struct CrashRun {
    var first: Int
    var writers: Int
    var perWriter: Int
    var durability: Durability
    var compacting: Bool

    var enqueues: Int { writers * perWriter }

    /// - Parameters:
    ///   - backlog: operations reported since the journal was last compacted. A child compacts
    ///     more often when there is much to compact: a longer compaction, for kills to land in.
    ///   - aimedAtFirstOpen: whether the kill will aim at the journal's first open, which lasts
    ///     longer with `.full` durability (it flushes): then `.full` three times in four.
    init(first: Int, backlog: Int, aimedAtFirstOpen: Bool, using random: inout SeededRandom) {
        self.first = first
        writers = Int.random(in: 1...8, using: &random)
        perWriter = Int.random(in: 1...6, using: &random)
        durability = Int.random(in: 0..<4, using: &random) < (aimedAtFirstOpen ? 3 : 2) ? .full : .processCrash
        compacting = Int.random(in: 0..<4, using: &random) < (backlog >= 40 ? 3 : 1)
    }

    /// A run that writes without compacting, with `.processCrash` durability.
    init(first: Int, writers: Int, perWriter: Int) {
        self.first = first
        self.writers = writers
        self.perWriter = perWriter
        durability = .processCrash
        compacting = false
    }

    func arguments(directory: URL, server: URL) -> [String] {
        [
            "crash-worker", directory.path, server.absoluteString, String(first), String(writers), String(perWriter),
            durability.rawValue, compacting ? "compact" : "write",
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

/// When to kill a child: how long each part of its work takes, so that the kills spread over
/// all of it rather than falling where the child spends the most time.
///
/// The starting figures are the child's own, measured on this two-core Linux machine
/// (milliseconds): 15 to 35 from its start to opening the journal; a first open 45 to 70 with
/// `.full` durability and 3 to 11 with `.processCrash`, a later open about 6; compacting what
/// earlier children left settled, 5 + 0.12 per operation; writing, per enqueue a writer waits
/// on in turn and per enqueue, 5 and 2 (`.full`) or 4 and 3 (`.processCrash`), 10 and 5 or 6
/// and 4.5 when compacting; closing 3 + 3 per enqueue not yet drained, 5 + 5 when compacting.
/// Every run updates them from the moments the child reached, so the kills keep their spread
/// on a faster or a busier machine.
struct CrashPace {
    /// The part of the child's work a kill is aimed at; where it lands is read from the child.
    enum Aim: String {
        case firstOpen, opening, compaction, writing, closing
    }

    /// Seconds from a child's start to its opening the journal.
    private(set) var starting = 0.030
    /// Seconds a first open takes, by durability.
    private(set) var firstOpen: [Durability: Double] = [.full: 0.050, .processCrash: 0.005]
    /// Seconds a later open takes.
    private(set) var reopen = 0.006
    /// How much slower than the model each part runs lately (1: as measured).
    private(set) var compactionScale = 1.0
    private(set) var workScale = 1.0
    private(set) var closingScale = 1.0

    /// The model's seconds for compacting `backlog` settled operations.
    private static func compaction(backlog: Int) -> Double {
        0.005 + 0.00012 * Double(backlog)
    }

    /// The model's seconds from open (or the first compaction) to the writers' last enqueue.
    private static func writing(_ run: CrashRun) -> Double {
        let (inTurn, each) =
            switch (run.durability, run.compacting) {
            case (.full, false): (0.005, 0.002)
            case (.full, true): (0.010, 0.005)
            case (.processCrash, false): (0.004, 0.003)
            case (.processCrash, true): (0.006, 0.0045)
            }
        return inTurn * Double(run.perWriter) + each * Double(run.enqueues)
    }

    /// The model's seconds from the writers' last enqueue to the child's end. Each writer drains
    /// after every second enqueue; the last drain sends the rest.
    private static func closing(_ run: CrashRun) -> Double {
        let undrained = Double(run.writers * (run.perWriter % 2))
        return run.compacting ? 0.005 + 0.005 * undrained : 0.003 + 0.003 * undrained
    }

    /// The moment to kill the child, in seconds after its start, and the part of its work aimed
    /// at: the journal's first open when asked to. Otherwise the seed picks a part (writing 35 %,
    /// closing 25 %, opening 15 %, and compaction 25 % when the child compacts, else writing)
    /// and a moment inside it, widened by a fifth of its length each side, as the child's timing
    /// varies: so that many kills land in the short parts too, and some runs complete.
    /// - Parameters:
    ///   - aimAtFirstOpen: whether to aim at the journal's first open.
    ///   - firstOpen: whether no child has yet reported the journal open.
    ///   - backlog: operations reported since the last compaction of this journal.
    func killDelay(
        _ run: CrashRun, aimAtFirstOpen: Bool, firstOpen isFirst: Bool, backlog: Int, using random: inout SeededRandom
    ) -> (seconds: Double, aim: Aim) {
        // The same draws every time, so that a seed makes the same choices whatever the timing.
        var pick = Int.random(in: 0..<100, using: &random)
        let fraction = Double.random(in: 0...1, using: &random)
        func moment(in window: ClosedRange<Double>) -> Double {
            window.lowerBound + fraction * (window.upperBound - window.lowerBound)
        }
        let opened = starting + (isFirst ? firstOpen[run.durability]! : reopen)
        if aimAtFirstOpen {
            return (moment(in: starting * 0.8...opened * 1.3), .firstOpen)
        }
        let compacted = opened + (run.compacting ? compactionScale * Self.compaction(backlog: backlog) : 0)
        let written = compacted + workScale * Self.writing(run)
        let done = written + closingScale * Self.closing(run)
        var aims: [(Aim, Int, ClosedRange<Double>)] = [
            (.writing, run.compacting ? 35 : 60, compacted...written),
            (.closing, 25, written...done),
            (.opening, 15, starting...opened),
        ]
        if run.compacting { aims.append((.compaction, 25, opened...compacted)) }
        let (aim, _, window) = aims.first { pick -= $0.1; return pick < 0 }!
        let margin = (window.upperBound - window.lowerBound) / 5
        return (moment(in: window.lowerBound - margin...window.upperBound + margin), aim)
    }

    /// Updates the figures from the moments the child reached before it ended at `ended`
    /// seconds (killed or not).
    mutating func observe(_ report: CrashRun.Report, of run: CrashRun, firstOpen isFirst: Bool, backlog: Int, endedAt ended: Double) {
        func blend(_ old: Double, _ new: Double) -> Double { 0.8 * old + 0.2 * new }
        /// A scale, kept within reason whatever one odd run shows.
        func blendScale(_ old: Double, _ new: Double) -> Double { min(10, max(0.1, blend(old, new))) }
        let reached = report.milestones
        guard let opening = reached["opening"] else { return }
        starting = blend(starting, opening)
        guard let opened = reached["opened"] else { return }
        if isFirst {
            firstOpen[run.durability] = blend(firstOpen[run.durability]!, opened - opening)
        } else {
            reopen = blend(reopen, opened - opening)
        }
        var writing = opened
        if run.compacting {
            guard let compacting = reached["compacting"], let compacted = reached["compacted"] else { return }
            compactionScale = blendScale(compactionScale, (compacted - compacting) / Self.compaction(backlog: backlog))
            writing = compacted
        }
        guard let written = reached["written"] else {
            // Killed while writing: the writing would have taken longer than it was given.
            // Counting these too keeps the scale from learning only from the quicker runs.
            let atLeast = (ended - writing) / Self.writing(run)
            if atLeast > workScale { workScale = blendScale(workScale, atLeast) }
            return
        }
        workScale = blendScale(workScale, (written - writing) / Self.writing(run))
        if let done = reached["done"] {
            closingScale = blendScale(closingScale, (done - written) / Self.closing(run))
        } else {
            let atLeast = (ended - written) / Self.closing(run)
            if atLeast > closingScale { closingScale = blendScale(closingScale, atLeast) }
        }
    }
}
