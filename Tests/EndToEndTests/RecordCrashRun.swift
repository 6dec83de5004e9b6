import Foundation
import Outbox
import OutboxAudit
import OutboxTestServer
import TestHarness

/// One run of `outbox-test-child record-worker`, drawn from the seed: the member's actions, the
/// durability, the server's faults, and where the run ends: killed by the child itself at the
/// n-th pass of a durable step (nine runs in ten; the soak's three in five), by this process's
/// timer at a random moment (the soak's three in ten), or left to finish (one in ten).
struct RecordCrashRun {
    /// The durable steps of a record write, as the child names them.
    enum Step: String, CaseIterable {
        /// The enqueue's commit: the write and its record change.
        case enqueue
        /// `attemptStarted` durable (with the revision sent), the request not yet sent.
        case start
        /// The server's answer back (the server committed), its outcome not yet committed.
        case answer
        /// The outcome's commit: the base and the overlay moved.
        case outcome
        /// A revision's or a resolution's commit: the overlay moved to the new write.
        case supersede
        /// At open, an interrupted attempt's abandonment committed.
        case abandon
        /// A local-only record written.
        case local
        /// A rollback acknowledged.
        case acknowledge
    }

    /// The steps aimed at in turn; the abandonment is aimed at when there is one to make.
    static let aimedInTurn = Step.allCases.filter { $0 != .abandon }

    /// Whether the run aims at the next step in turn (the abandonment is not in the turn).
    var aimsInTurn: Bool {
        if case .atStep(let step, _) = ending { step != .abandon } else { false }
    }

    /// How the run is to end.
    enum Ending: Equatable {
        /// The child kills itself with SIGKILL inside the `occurrence`-th pass of `step`.
        case atStep(Step, occurrence: Int)
        /// This process kills it with SIGKILL `seconds` after its start (the soak's random kills).
        case timer(seconds: Double)
        /// It runs to its end.
        case none
    }

    /// The business the child's records belong to, and their keys (as the child makes them).
    static let business = "crash-records"
    static func product(_ id: String) -> RecordKey { RecordKey(business: business, type: "product", id: id) }
    static func draft(_ id: String) -> RecordKey { RecordKey(business: business, type: "draft", id: id) }

    var tag: String
    var first: Int
    var script: [String]
    var durability: OutboxConfiguration.Durability
    var ending: Ending
    /// Faults the server meets on the child's next requests.
    var faults: [Fault]

    /// The values each action numbers from `first` on.
    var numbers: Int { script.count }

    /// Answers that roll a write back: 422 (failed) and 403 (blocked).
    static let refusals = [Fault(.validationFailed, message: "Price must be positive"), Fault(.forbidden, message: "Only owners may change prices")]
    /// Another device's change just before an update arrives: 412, conflicted.
    static let changedElsewhere = Fault(.changeRecord, patch: Data(#"{"name":"Changed elsewhere"}"#.utf8))
    static let faultKinds = refusals + [changedElsewhere, Fault(.dropAfterCommit), Fault(.unavailable, retryAfterSeconds: 0), Fault(.serverError)]

    /// - Parameters:
    ///   - keys: how many products the journal's life edits.
    ///   - interrupted: whether the last child may have left an attempt interrupted: then the
    ///     run aims at the abandonment at open.
    ///   - aimed: how many runs were killed at the step they aimed at in turn so far: this one
    ///     aims at the next of those steps (the same again when the last child did not reach it).
    ///   - pace: the moments runs reached so far, for the soak's timer.
    init(tag: String, first: Int, keys: Int, interrupted: Bool, aimed: Int, pace: RandomKillPace, using random: inout SeededRandom) {
        self.tag = tag
        self.first = first
        durability = random.chance(50) ? .full : .processCrash
        let pick = random.int(in: 0..<100)
        // The step and how often to pass it, and the timer's moment, all drawn every time: a
        // seed makes the same draws whatever the children did.
        let others = Self.aimedInTurn
        let other = others[aimed % others.count]
        let occurrence = random.int(in: 1..<([.enqueue, .start, .answer, .outcome].contains(other) ? 4 : 3))
        let delay = pace.killDelay(using: &random)
        let stepped = pick < (SoakSize.soaking ? 60 : 90)
        if stepped {
            // The abandonment at open whenever the last child left an attempt to abandon.
            ending = interrupted ? .atStep(.abandon, occurrence: 1) : .atStep(other, occurrence: occurrence)
        } else if pick < 90 {
            ending = .timer(seconds: delay)
        } else {
            ending = .none
        }
        // The member's actions: edits mostly, with local writes, drains and decisions.
        var script: [String] = []
        let weighted: [(String, Int)] = [
            ("e", 45), ("l", 10), ("d", 12), ("v", 6), ("V", 5), ("m", 5), ("M", 4), ("t", 3), ("r", 3), ("x", 3), ("a", 4),
        ]
        for _ in 0..<random.int(in: 3..<11) {
            var draw = random.int(in: 0..<100)
            let action = weighted.first { draw -= $0.1; return draw < 0 }!.0
            switch action {
            case "e": script.append("e\(random.int(in: 0..<keys))")
            case "l": script.append("l\(random.int(in: 0..<2))")
            default: script.append(action)
            }
        }
        // Enough of what the drawn step needs for it to be passed as often as asked (kept when
        // the abandonment is aimed at instead): an edit per enqueue, send and outcome; a local
        // write; for a revision or an acknowledgement, an edit the server refuses or finds
        // changed elsewhere, a drain, then the decision.
        var faults: [Fault] = []
        if stepped {
            for _ in 0..<occurrence {
                let place = random.int(in: 0..<(script.count + 1))
                switch other {
                case .enqueue, .start, .answer, .outcome: script.insert("e\(random.int(in: 0..<keys))", at: place)
                case .local: script.insert("l\(random.int(in: 0..<2))", at: place)
                case .supersede, .acknowledge:
                    // A refusal rolls back (to acknowledge, or revise); a conflict is revised or resolved.
                    let conflict = other == .supersede && random.chance(50)
                    faults.append(conflict ? Self.changedElsewhere : Self.refusals[random.int(in: 0..<2)])
                    let decisions = other == .acknowledge ? ["a"] : conflict ? ["v", "V", "m", "M"] : ["v", "V"]
                    script.insert(contentsOf: ["e\(random.int(in: 0..<keys))", "d", decisions[random.int(in: 0..<decisions.count)]], at: place)
                case .abandon: break
                }
            }
        }
        if random.chance(50) {
            for _ in 0..<random.int(in: 1..<4) { faults.append(Self.faultKinds[random.int(in: 0..<Self.faultKinds.count)]) }
        }
        self.script = script
        self.faults = faults
    }

    func arguments(directory: URL, server: URL) -> [String] {
        let stop = if case .atStep(let step, let occurrence) = ending { "\(step.rawValue):\(occurrence)" } else { "none" }
        return ["record-worker", directory.path, server.absoluteString, tag, String(first), script.joined(separator: ","), durability.rawValue, stop]
    }

    /// Where the child was when it ended, read from its lines.
    enum Phase: String, CaseIterable {
        case starting, opening, working, closing
    }

    /// What the child printed before it ended.
    struct Report {
        /// A change a returned call reported: the write, its record's id and the value's SHA-256
        /// (`nil`: moved from the write it replaces).
        struct Change {
            var operation: OperationID
            var recordID: String
            var hash: String?
        }

        /// Writes whose enqueue returned.
        var enqueued: [Change] = []
        /// Revisions and resolutions as the member's that returned: the write replaced and the change of the new one.
        var revised: [(old: OperationID, new: Change)] = []
        /// Conflicted writes resolved as the server's.
        var resolvedTheirs: [OperationID] = []
        var retried: [OperationID] = []
        var discarded: [OperationID] = []
        /// Local writes that returned: the record's id, the number its value holds, its SHA-256.
        var local: [(recordID: String, number: Int, hash: String)] = []
        var acknowledged: [String] = []
        /// Each durable step passed, in order, with its line's words after the step's name.
        var steps: [(step: Step, words: [String])] = []
        /// Where the child stopped itself.
        var stopped: Step?
        var phase = Phase.starting
        var finished = false
        /// When it printed "opened" and "done", in seconds after its start.
        var openedAt: Double?
        var doneAt: Double?
        var unexpected: [String] = []

        init(_ lines: [ChildProcess.Line]) {
            for line in lines {
                let words = line.text.split(separator: " ").map(String.init)
                let rest = Array(words.dropFirst())
                func id(_ index: Int) -> OperationID? { index < rest.count ? OperationID(rest[index]) : nil }
                switch words.first {
                case "opening": phase = .opening
                case "opened":
                    phase = .working
                    openedAt = line.seconds
                case "written": phase = .closing
                case "done":
                    finished = true
                    doneAt = line.seconds
                case "enqueued" where rest.count == 3 && id(0) != nil:
                    enqueued.append(Change(operation: id(0)!, recordID: rest[1], hash: rest[2]))
                case "revised" where rest.count == 4 && id(0) != nil && id(1) != nil:
                    revised.append((id(0)!, Change(operation: id(1)!, recordID: rest[2], hash: rest[3] == "moved" ? nil : rest[3])))
                case "resolved" where rest.count == 3 && id(0) != nil: resolvedTheirs.append(id(0)!)
                case "retried" where id(0) != nil: retried.append(id(0)!)
                case "discarded" where id(0) != nil: discarded.append(id(0)!)
                case "step" where !rest.isEmpty && Step(rawValue: rest[0]) != nil:
                    let step = Step(rawValue: rest[0])!
                    let detail = Array(rest.dropFirst())
                    steps.append((step, detail))
                    if step == .local, detail.count == 3, let number = Int(detail[1]) {
                        local.append((detail[0], number, detail[2]))
                    }
                    if step == .acknowledge, let key = detail.first { acknowledged.append(key) }
                case "stop" where rest.count == 2: stopped = Step(rawValue: rest[0])
                case "skipped", "refused", "drained", "closed": break
                default: unexpected.append(line.text)
                }
            }
        }

        /// The writes the steps name, by the step: each one's commit (or the server's) happened.
        func operations(at step: Step) -> [(OperationID, [String])] {
            steps.filter { $0.step == step }.compactMap { entry in
                entry.words.first.flatMap(OperationID.init).map { ($0, Array(entry.words.dropFirst())) }
            }
        }

        /// Whether an attempt was sent (or about to be) without its outcome committed: the
        /// next open abandons it.
        var leftAttemptInterrupted: Bool {
            var open = Set<OperationID>()
            for (step, words) in steps {
                guard let id = words.first.flatMap(OperationID.init) else { continue }
                if step == .start { open.insert(id) }
                if step == .outcome { open.remove(id) }
            }
            return !open.isEmpty
        }
    }
}

/// What a record crash run did, for the line it prints.
struct RecordCrashTally {
    /// Runs killed at the step they aimed at in turn.
    var aimed = 0
    var killsAtStep: [RecordCrashRun.Step: Int] = [:]
    var timerKills: [RecordCrashRun.Phase: Int] = [:]
    var completed = 0
    /// Runs that finished before passing their stop step as often as asked.
    var stepNotReached = 0
    var failures = 0
    var journals = 0
    var checks = 0
    var noJournalYet = 0
    var enqueuesReported = 0
    var revisionsReported = 0
    var localReported = 0
    var acknowledgedReported = 0
    var stepsPassed: [RecordCrashRun.Step: Int] = [:]
    var highestRevision: UInt64 = 0
    /// Where the time went: in the children (killed or not) and in the checks after them.
    var childSeconds = 0.0
    var checkSeconds = 0.0

    var kills: Int { killsAtStep.values.reduce(0, +) + timerKills.values.reduce(0, +) }

    mutating func count(_ report: RecordCrashRun.Report) {
        enqueuesReported += report.enqueued.count
        revisionsReported += report.revised.count
        localReported += report.local.count
        acknowledgedReported += report.acknowledged.count
        for (step, _) in report.steps { stepsPassed[step, default: 0] += 1 }
    }

    var summary: String {
        let steps = RecordCrashRun.Step.allCases.map { "\($0.rawValue) \(killsAtStep[$0, default: 0])" }.joined(separator: ", ")
        let phases = RecordCrashRun.Phase.allCases.map { "\($0.rawValue) \(timerKills[$0, default: 0])" }.joined(separator: ", ")
        let passed = RecordCrashRun.Step.allCases.map { "\($0.rawValue) \(stepsPassed[$0, default: 0])" }.joined(separator: ", ")
        return "\(kills) kills (at a step: \(steps); by the timer: \(phases)), \(completed) runs completed "
            + "(\(stepNotReached) before their stop step), \(failures) failed, \(journals) journals, \(checks) checks "
            + "(\(noJournalYet) found no journal yet); reported: \(enqueuesReported) enqueues, \(revisionsReported) revisions, "
            + "\(localReported) local writes, \(acknowledgedReported) acknowledgements; steps passed: \(passed); "
            + "highest revision \(highestRevision); \(String(format: "%.1f", childSeconds)) s in children, "
            + "\(String(format: "%.1f", checkSeconds)) s in checks"
    }
}
