import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTestServer
import TestHarness
import Testing

/// The member's records through real processes killed between the durable steps of a record
/// write. A child (`outbox-test-child record-worker`) edits a few products with their writes,
/// writes local drafts, revises and resolves what the server refused or found changed elsewhere,
/// and acknowledges rollbacks, while the worker sends to the loopback server, which misbehaves at
/// random. Nine children in ten end by SIGKILL inside a durable step they were told to stop at,
/// the steps aimed at in turn, each until a child reached it (the enqueue's commit, `attemptStarted`, the answer back before its
/// outcome, the outcome's commit, a revision's commit, a local write, an acknowledgement), and
/// the abandonment at open whenever the last child left an attempt in flight; the tenth runs to
/// its end. A default run kills at every step, the same way on every machine; the soak
/// (`OUTBOX_SOAK=1`) also kills three in ten by a timer at a random moment, after which the same
/// checks hold wherever it landed. After every child the journal is reopened and checked: every
/// reported write is there with its change and every change with its write, each record shows
/// what its writes and base say, the base never moves back and always has its trail, every
/// reported local write is durable, and the journal verifies.
@Suite("Record writes killed between their durable steps", .timeLimit(.minutes(5)))
struct RecordCrashTests {
    /// The kills a run makes: 32 by default (four at each step in turn); the soak's 100, or
    /// `OUTBOX_RECORD_CRASH_KILLS`.
    static var kills: Int { SoakSize.count("OUTBOX_RECORD_CRASH_KILLS", quick: 32, soak: 100) }

    /// `OUTBOX_CRASH_VERBOSE=1` prints every run: its script, how it was to end, how it ended.
    static let verbose = SoakSize.verbose

    @Test func killedBetweenTheDurableStepsOfRecordWritesEveryChangeStaysWithItsWrite() throws {
        let clock = ContinuousClock()
        let began = clock.now
        let setting = try CrashSetting(named: "outbox-record-crash")
        defer { setting.end() }
        let (seed, server, base) = (setting.seed, setting.server, setting.directory)
        var random = SeededRandom(seed: seed)

        var tally = RecordCrashTally()
        var pace = RandomKillPace()
        var next = 0
        let kills = Self.kills
        // Bounded, should the children stop reaching a step at all: the check of every step fails then.
        while tally.kills < kills && tally.checks < 4 * kills {
            var life = RecordLife(
                directory: base.appendingPathComponent("journal-\(tally.journals)"), tag: "j\(tally.journals)",
                keys: random.int(in: 2..<5), seed: seed)
            tally.journals += 1
            for _ in 0..<random.int(in: 3..<9) where tally.kills < kills && tally.checks < 4 * kills {
                // Now and then another device changes a product the server holds (both drawn every
                // time: a seed makes the same draws whatever the children did).
                let (changeElsewhere, which) = (random.chance(20), random.int(in: 0..<1000))
                let held = try server.records().filter { $0.id.hasPrefix(life.tag + "-") }.sorted { $0.id < $1.id }
                if changeElsewhere, !held.isEmpty {
                    _ = try server.changeRecord(
                        type: "product", id: held[which % held.count].id, businessID: RecordCrashRun.business,
                        patch: Data(#"{"name":"Changed elsewhere"}"#.utf8))
                }
                let run = RecordCrashRun(
                    tag: life.tag, first: next, keys: life.keys, interrupted: life.interrupted, aimed: tally.aimed, pace: pace, using: &random)
                next += run.numbers
                server.addFaults(run.faults)
                life.runs += 1
                let started = clock.now
                let child = try ChildProcess("outbox-test-child", run.arguments(directory: life.directory, server: server.baseURL))
                if case .timer(let seconds) = run.ending { child.kill(after: seconds) } else { child.kill(after: SoakSize.hangGuardSeconds) }
                let report = RecordCrashRun.Report(child.readToEnd())
                let ending = child.waitForEnding()
                tally.childSeconds += (clock.now - started) / .seconds(1)
                if Self.verbose {
                    print("record-crash: \(life.context): \(run.script.joined(separator: ",")) \(run.durability.rawValue), "
                        + "to end \(run.ending), ended \(ending) in \(report.phase.rawValue)\(report.stopped.map { " at \($0.rawValue)" } ?? ""), "
                        + "\(report.steps.count) steps")
                }
                pace.observe(openedAt: report.openedAt, doneAt: report.doneAt)
                tally.count(report)
                life.absorb(report)
                #expect(report.unexpected.isEmpty, "\(life.context): unexpected lines \(report.unexpected)")
                switch (ending, run.ending) {
                case (.signalled(SIGKILL), .atStep(let step, _)) where report.stopped == step:
                    tally.killsAtStep[step, default: 0] += 1
                    // The turn moves on once its step was reached; a child that ended before
                    // reaching it (the worker held its writes, a fault went elsewhere) leaves the
                    // step to the next child.
                    if run.aimsInTurn { tally.aimed += 1 }
                case (.signalled(SIGKILL), .timer) where report.stopped == nil:
                    tally.timerKills[report.phase, default: 0] += 1
                case (.exited(0), _) where report.finished:
                    tally.completed += 1
                    if case .atStep = run.ending { tally.stepNotReached += 1 }
                default:
                    tally.failures += 1
                    Issue.record("\(life.context): the child ended \(ending) in \(report.phase.rawValue): \(child.errorOutput)")
                }
                // A run that stopped at or after a start without its outcome left an attempt to
                // abandon; one killed before it opened the journal left what it found, unless it
                // was killed right after the opening's commit abandoned it.
                life.interrupted = report.leftAttemptInterrupted || (life.interrupted && report.openedAt == nil && report.stopped != .abandon)
                tally.checks += 1
                let checking = clock.now
                if check(&life, server: server) == .noJournalYet { tally.noJournalYet += 1 }
                tally.checkSeconds += (clock.now - checking) / .seconds(1)
            }
            try settle(&life, server: server)
            tally.highestRevision = max(tally.highestRevision, life.highestRevision.values.max() ?? 0)
            try? FileManager.default.removeItem(at: life.directory)
        }
        let twice = try server.appliedCounts().filter { $0.value > 1 }
        #expect(twice.isEmpty, "seed \(seed): keys applied more than once: \(twice)")
        #expect(tally.failures == 0)
        if kills >= 4 * RecordCrashRun.Step.allCases.count {
            let missed = RecordCrashRun.Step.allCases.filter { tally.killsAtStep[$0, default: 0] == 0 }
            #expect(missed.isEmpty, "seed \(seed): no kill at \(missed.map(\.rawValue))")
        }
        print("record-crash-tests: seed \(seed), \(tally.summary), \(String(format: "%.1f", (clock.now - began) / .seconds(1))) s")
    }

    enum Check: Equatable {
        case checked, noJournalYet, unreadable
    }

    /// Reopens the journal and checks everything `life`'s children reported against it.
    private func check(_ life: inout RecordLife, server: TestServer, settled: Bool = false) -> Check {
        do {
            let reader = try JournalReader(directory: life.directory)
            defer { reader.close() }
            let journal = try RecordJournal(reader)
            let context = life.context + (settled ? ", settled" : "")
            checkJournalVerifies(reader, context: context)
            checkWritesCarryTheirChanges(journal, context: context)
            checkReported(life, journal, context: context)
            for key in life.productKeys {
                try checkRecord(key, journal, reader, &life, server: server, settled: settled, context: context)
            }
            try checkLocalWrites(life, journal, reader, context: context)
            let twice = try server.appliedCounts().filter { $0.value > 1 }
            #expect(twice.isEmpty, "\(context): applied twice: \(twice)")
            return .checked
        } catch OutboxError.notAJournal(_, let reason) where life.nothingReported {
            if Self.verbose { print("record-crash: \(life.context): no journal yet: \(reason)") }
            return .noJournalYet
        } catch {
            Issue.record("\(life.context): the journal cannot be read: \(error)")
            return .unreadable
        }
    }

    /// `verify` is clean and the stored projections equal a rebuild from the events.
    private func checkJournalVerifies(_ reader: JournalReader, context: String) {
        do {
            let report = try reader.verify()
            #expect(report.isClean, "\(context): \(report.findings.prefix(3))")
            #expect(report.projectionsCompared, "\(context): \(report.projectionsNote ?? "")")
            let mismatches = try reader.store.compareProjectionsWithRebuild()
            #expect(mismatches.isEmpty, "\(context): \(mismatches.prefix(3))")
        } catch {
            Issue.record("\(context): verify: \(error)")
        }
    }

    /// No write without its change: every write changes exactly the product its payload names,
    /// with its payload as the value, or with the change of the write it replaces.
    private func checkWritesCarryTheirChanges(_ journal: RecordJournal, context: String) {
        for (id, enqueued) in journal.enqueued {
            guard let change = enqueued.changes.first, enqueued.changes.count == 1 else {
                Issue.record("\(context): write \(id) carries \(enqueued.changes.count) record changes, not its one")
                continue
            }
            let named = (try? JSONSerialization.jsonObject(with: enqueued.request.payload) as? [String: Any])?["id"] as? String
            #expect(change.key == RecordCrashRun.product(named ?? "?"), "\(context): write \(id) for \(named ?? "?") changes \(change.key)")
            #expect(journal.states[id]?.records == [change.key], "\(context): write \(id)'s state names \(journal.states[id]?.records ?? [])")
            let moved = enqueued.supersedes.flatMap { journal.enqueued[$0.operation]?.changes.first }
            #expect(change.valueHash == SHA256Digest(of: enqueued.request.payload) || (moved != nil && change == moved),
                    "\(context): write \(id)'s change is neither its payload nor the change of the write it replaces")
        }
    }

    /// Everything the children reported as returned or committed is in the journal, as reported.
    private func checkReported(_ life: RecordLife, _ journal: RecordJournal, context: String) {
        for change in life.enqueued {
            guard let written = journal.enqueued[change.operation]?.changes.first else {
                Issue.record("\(context): the returned enqueue \(change.operation) is lost")
                continue
            }
            #expect(written.key == RecordCrashRun.product(change.recordID) && written.valueHash?.hex == change.hash,
                    "\(context): \(change.operation) carries \(written.key) \(written.valueHash?.hex ?? "-"), not the change it returned with")
        }
        for id in life.committed where journal.states[id] == nil {
            Issue.record("\(context): \(id), whose enqueue committed, is lost")
        }
        for (old, new) in life.revised {
            guard let written = journal.enqueued[new.operation] else {
                Issue.record("\(context): the returned revision \(new.operation) of \(old) is lost")
                continue
            }
            #expect(written.supersedes?.operation == old && journal.states[old]?.status == .superseded,
                    "\(context): \(new.operation) does not replace \(old) (\(journal.states[old]?.status.rawValue ?? "lost"))")
            let expected = new.hash ?? journal.enqueued[old]?.changes.first?.valueHash?.hex
            #expect(written.changes.first?.valueHash?.hex == expected, "\(context): \(new.operation)'s change did not move or was not kept")
        }
        for id in life.discarded {
            #expect(journal.states[id]?.status == .discarded, "\(context): the discarded \(id) is \(journal.states[id]?.status.rawValue ?? "lost")")
        }
        for id in life.retried {
            #expect(journal.events[id]?.contains { $0.kind == .requeued } == true, "\(context): the retry of \(id) is lost")
        }
        // Each step's commit is in the journal.
        for (id, sent) in life.started {
            guard let state = journal.states[id] else {
                Issue.record("\(context): \(id), whose attemptStarted committed, is lost")
                continue
            }
            // A write whose If-Match comes from its record's base records the revision sent on
            // attemptStarted; another sends the base revision it was made with.
            let recorded = state.revisionFrom == nil
                ? [journal.enqueued[id]?.request.baseRevision ?? "-"]
                : journal.events[id]?.compactMap { if case .attemptStarted(let s) = $0.body { s.sentRevision ?? "-" } else { nil } } ?? []
            #expect(recorded.contains(sent), "\(context): \(id) was sent with If-Match \(sent); the journal says \(recorded)")
        }
        for (id, count) in life.outcomes {
            let finished = journal.events[id]?.filter { $0.kind == .attemptFinished }.count ?? 0
            #expect(finished >= count, "\(context): \(id) has \(finished) outcomes, \(count) committed")
        }
        for id in life.abandoned {
            #expect(journal.events[id]?.contains { $0.kind == .attemptAbandoned } == true, "\(context): \(id)'s abandonment is lost")
        }
        for recordID in life.acknowledged {
            let acknowledged = journal.events.values.joined().contains { event in
                if case .rollbackAcknowledged(let body) = event.body { body.key == RecordCrashRun.product(recordID) } else { false }
            }
            #expect(acknowledged, "\(context): the acknowledgement of \(recordID)'s rollback is lost")
        }
    }

    /// One product: no change without its write, the member's view as its writes and base say,
    /// the base at least as new as ever, with its trail, and never newer than the server's.
    private func checkRecord(
        _ key: RecordKey, _ journal: RecordJournal, _ reader: JournalReader, _ life: inout RecordLife, server: TestServer, settled: Bool,
        context: String
    ) throws {
        let context = "\(context), \(key.id)"
        let writes = journal.writes(of: key)
        let record = try reader.record(key)
        guard let record else {
            // Nothing to show and nothing to say: every write of it was replaced, or discarded
            // and its rollback acknowledged, and no answer brought a base.
            #expect(writes.allSatisfy { [.superseded, .withdrawn, .discarded].contains($0.status) },
                    "\(context): no record, and writes \(writes.map { "\($0.id) \($0.status)" })")
            return
        }
        #expect(!writes.isEmpty, "\(context): a record no write changed")
        func isHeld(_ state: OperationState) -> Bool { state.heldOn != nil }
        let live = writes.filter { [.queued, .syncing, .pendingApproval, .conflicted].contains($0.status) }
        let pending = live.filter { !isHeld($0) }
        let said = record.sync.pending.map { "\($0.operation) \($0.status)" }
        #expect(said == pending.map { "\($0.id) \($0.status)" }, "\(context): pending \(said), the journal's \(pending.map { "\($0.id) \($0.status)" })")
        #expect(record.sync.held == live.filter(isHeld).map(\.id), "\(context): held \(record.sync.held)")
        // Every answer to a write of these products names a revision: nothing waits for the server's value.
        #expect(record.sync.confirmed.isEmpty, "\(context): confirmed \(record.sync.confirmed)")
        let shown = pending.last.flatMap { journal.enqueued[$0.id]?.changes.first?.value } ?? record.server?.value
        #expect(record.value == shown, "\(context): shows \(text(record.value)), its writes and base say \(text(shown))")
        if settled {
            #expect(live.isEmpty && record.value == record.server?.value, "\(context): \(live.count) writes left, shows \(text(record.value))")
        }
        if let rolledBack = record.sync.rolledBack {
            let state = journal.states[rolledBack.operation]
            #expect(state.map { [.failed, .blocked, .discarded].contains($0.status) && $0.records == [key] } == true,
                    "\(context): says \(rolledBack.operation) was rolled back, which is \(state?.status.rawValue ?? "not a write of it")")
        }

        guard let base = record.server else {
            #expect(life.highestRevision[key] == nil, "\(context): the base at revision \(life.highestRevision[key] ?? 0) is gone")
            #expect(!writes.contains { $0.status == .synced }, "\(context): a write synced, and no base")
            return
        }
        // The base never moves back.
        #expect(base.revision >= life.highestRevision[key] ?? 0,
                "\(context): the base went back to revision \(base.revision) from \(life.highestRevision[key] ?? 0)")
        life.highestRevision[key] = max(base.revision, life.highestRevision[key] ?? 0)
        // Its trail: the event it names confirmed this revision and value, for a write of it.
        let trail = try reader.events(from: base.seq, limit: 1).first
        let confirmed = trail.flatMap { event -> RecordConfirmation? in
            guard case .attemptFinished(let finished) = event.body, event.seq == base.seq,
                let id = event.operationID, writes.contains(where: { $0.id == id })
            else { return nil }
            return finished.confirmations.first { $0.key == key }
        }
        #expect(confirmed?.revision == base.revision && confirmed?.valueHash == base.value.map { SHA256Digest(of: $0) },
                "\(context): the base at revision \(base.revision) has no trail at seq \(base.seq)")
        for write in writes where write.status == .synced {
            let revision = journal.events[write.id]?.compactMap { event -> UInt64? in
                if case .attemptFinished(let finished) = event.body { finished.confirmations.first { $0.key == key }?.revision } else { nil }
            }.last
            #expect(revision.map { $0 <= base.revision } == true,
                    "\(context): \(write.id) synced at revision \(revision.map(String.init) ?? "none"), the base is at \(base.revision)")
        }
        // The server holds that revision or a newer one; at the same revision, the same value.
        let onServer = try server.records().first { $0.type == "product" && $0.businessID == RecordCrashRun.business && $0.id == key.id }
        guard let held = onServer else {
            Issue.record("\(context): the base is at revision \(base.revision), and the server holds nothing of it")
            return
        }
        #expect(base.revision <= UInt64(held.revision), "\(context): the base is at revision \(base.revision), the server at \(held.revision)")
        if base.revision == UInt64(held.revision) {
            #expect(Self.sameRecord(base.value, held.body),
                    "\(context): at revision \(base.revision) the base holds \(text(base.value)), the server \(text(held.body))")
        }
    }

    /// Local writes: each reported one, or a later one, is what the record holds, and the value
    /// has its `recordsWritten` trail.
    private func checkLocalWrites(_ life: RecordLife, _ journal: RecordJournal, _ reader: JournalReader, context: String) throws {
        for index in 0..<2 {
            let key = RecordCrashRun.draft("\(life.tag)-d\(index)")
            let record = try reader.record(key, policy: .localOnly)
            let trail = Set(journal.localWrites.filter { $0.key == key }.compactMap(\.valueHash))
            guard let reported = life.local[key.id] else {
                #expect((record == nil) == trail.isEmpty, "\(context), \(key.id): \(trail.count) local writes, record \(text(record?.value))")
                continue
            }
            let number = record?.value.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }?["n"] as? Int
            #expect(number.map { $0 >= reported.number } == true, "\(context), \(key.id): holds \(text(record?.value)), written \(reported.number)")
            #expect(record?.value.map { trail.contains(SHA256Digest(of: $0)) } == true, "\(context), \(key.id): its value has no trail")
            #expect(record?.isLocalOnly == true && record?.server == nil)
        }
    }

    /// The member decides everything left and the network is sound: every write ends, and the
    /// journal still checks, with nothing pending.
    private func settle(_ life: inout RecordLife, server: TestServer) throws {
        let settle = try ChildProcess("outbox-test-child", ["record-settle", life.directory.path, server.baseURL.absoluteString])
        // Settling takes well under a second: the guard fires only on a child that is stuck.
        settle.kill(after: SoakSize.hangGuardSeconds)
        let lines = settle.readToEnd().map(\.text)
        let ending = settle.waitForEnding()
        #expect(ending == .exited(0), "\(life.context): the settling child ended \(ending): \(settle.errorOutput)")
        #expect(lines.count == 1 && lines[0].hasPrefix("settled ") && lines[0].hasSuffix(" 0"), "\(life.context): \(lines)")
        _ = check(&life, server: server, settled: true)
    }

    /// Whether the base's value and the server's record are the same record, the revision the
    /// server adds to its answers aside.
    static func sameRecord(_ value: Data?, _ body: Data) -> Bool {
        func object(_ data: Data?) -> NSDictionary? {
            guard let data, var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
            object["revision"] = nil
            return object as NSDictionary
        }
        return object(value).map { $0.isEqual(object(body)) } ?? false
    }

    private func text(_ value: Data?) -> String { value.map { String(decoding: $0, as: UTF8.self) } ?? "nothing" }
}

/// What one journal holds, read once per check: each write's state, `enqueued` and events.
struct RecordJournal {
    var states: [OperationID: OperationState] = [:]
    var enqueued: [OperationID: Enqueued] = [:]
    var events: [OperationID: [JournalEvent]] = [:]
    /// Every local write's change, in journal order.
    var localWrites: [RecordWrite] = []

    init(_ reader: JournalReader) throws {
        for state in try reader.operationStates(matching: OperationQuery(limit: .max)).states {
            states[state.id] = state
            let history = try reader.journalEvents(of: state.id)
            events[state.id] = history
            if case .enqueued(let body)? = history.first?.body { enqueued[state.id] = body }
        }
        let local = try reader.events(matching: EventQuery(kinds: [.recordsWritten], limit: 100_000)).events
        localWrites = local.flatMap { event -> [RecordWrite] in if case .recordsWritten(let body) = event.body { body.writes } else { [] } }
    }

    /// The writes that changed `key`, in the order the member made them (a correction in the
    /// place of the write it replaced).
    func writes(of key: RecordKey) -> [OperationState] {
        states.values.filter { $0.records.contains(key) }.sorted { ($0.laneSeq, $0.firstSeq) < ($1.laneSeq, $1.firstSeq) }
    }
}

/// One journal directory through its children, and what they reported.
struct RecordLife {
    var directory: URL
    /// Its products are `<tag>-k<n>`, its drafts `<tag>-d<n>`.
    var tag: String
    var keys: Int
    var seed: UInt64
    var runs = 0
    /// Whether the last child may have left an attempt interrupted.
    var interrupted = false

    var enqueued: [RecordCrashRun.Report.Change] = []
    var committed: Set<OperationID> = []
    var revised: [(old: OperationID, new: RecordCrashRun.Report.Change)] = []
    var discarded: [OperationID] = []
    var retried: [OperationID] = []
    /// The `If-Match` each write was sent with (`-`: none).
    var started: [(OperationID, String)] = []
    /// Outcomes committed, per write.
    var outcomes: [OperationID: Int] = [:]
    var abandoned: [OperationID] = []
    var acknowledged: [String] = []
    /// The latest local write reported, per record.
    var local: [String: (number: Int, hash: String)] = [:]
    /// The highest revision the base of each record held at a check.
    var highestRevision: [RecordKey: UInt64] = [:]

    init(directory: URL, tag: String, keys: Int, seed: UInt64) {
        self.directory = directory
        self.tag = tag
        self.keys = keys
        self.seed = seed
    }

    var productKeys: [RecordKey] { (0..<keys).map { RecordCrashRun.product("\(tag)-k\($0)") } }

    var nothingReported: Bool { committed.isEmpty && enqueued.isEmpty && local.isEmpty }

    var context: String { "seed \(seed), \(tag), run \(runs)" }

    mutating func absorb(_ report: RecordCrashRun.Report) {
        enqueued += report.enqueued
        revised += report.revised
        discarded += report.discarded + report.resolvedTheirs
        retried += report.retried
        committed.formUnion(report.operations(at: .enqueue).map(\.0))
        started += report.operations(at: .start).map { ($0.0, $0.1.first ?? "-") }
        for (id, _) in report.operations(at: .outcome) { outcomes[id, default: 0] += 1 }
        abandoned += report.operations(at: .abandon).map(\.0)
        acknowledged += report.acknowledged
        for write in report.local where write.number >= local[write.recordID]?.number ?? .min {
            local[write.recordID] = (write.number, write.hash)
        }
    }
}
