import Foundation
import Outbox
import OutboxAudit

/// Reads an operation's facts from the journal: its timeline, and the journal's events around it
/// that explain it. Only `JournalReader`'s reads: its public ones, and its list of states (which
/// reads no event).
struct FactsReader {
    let reader: JournalReader
    /// The moment the output reads as now.
    let now: Date
    /// The engine's state, read once.
    let engine: EngineState
    /// The journal's last event, read once.
    let lastEvent: JournalEvent?
    /// Every `journalOpened` event of the range the operations span, with the event before each.
    private let restarts: [Restart]
    /// For a list, every operation's state as the projections hold it, by id: a list reads no
    /// event (a record it does not show may be damaged, and a read of it may fault).
    private let listed: [OperationID: OperationState]?

    /// Reads what every operation of `timelines` needs, in a few scans of the range they span.
    init(reader: JournalReader, now: Date, spanning timelines: [OperationTimeline]) throws {
        self.reader = reader
        self.now = now
        engine = try reader.engineState()
        lastEvent = try reader.events(matching: EventQuery(order: .newestFirst, limit: 1)).events.first
        let seqs = timelines.flatMap { $0.events.map(\.seq) }
        var restarts: [Restart] = []
        if let first = seqs.min(), let last = seqs.max(), first < last {
            let opened = try reader.events(matching: EventQuery(seqFrom: first, seqThrough: last, kinds: [.journalOpened], limit: .max)).events
            for event in opened {
                let before = try reader.events(matching: EventQuery(after: event.seq, order: .newestFirst, limit: 1)).events.first
                restarts.append(Restart(opened: event, lastBefore: before))
            }
        }
        self.restarts = restarts
        listed = nil
    }

    /// Reads the projections only, for what a list (`ops`) says of its queued rows.
    init(projectionsOf reader: JournalReader, now: Date) throws {
        self.reader = reader
        self.now = now
        engine = try reader.engineState()
        lastEvent = nil
        restarts = []
        listed = Dictionary(try reader.operationStates(matching: OperationQuery(limit: .max)).states.map { ($0.id, $0) },
                            uniquingKeysWith: { first, _ in first })
    }

    /// The facts of the operation whose timeline is `timeline`.
    func facts(of timeline: OperationTimeline) throws -> OperationFacts {
        var facts = OperationFacts(timeline: timeline, engine: engine, journalLastEvent: lastEvent, now: now)
        if let first = timeline.events.first?.seq, let last = timeline.events.last?.seq {
            facts.restarts = restarts.filter { first < $0.opened.seq && $0.opened.seq < last }
        }
        guard let state = timeline.state else { return facts }
        if state.compactedAt != nil {
            // A compacted operation's history is the `compacted` event that removed it.
            facts.compaction = (try? reader.journalEvents(of: timeline.id))?.first { $0.kind == .compacted }
        }
        if state.status == .queued {
            facts.waiting = try waiting(for: state)
        }
        return facts
    }

    /// What a queued row waits for. The engine answers from its stored indexes; a journal whose
    /// projections are of another layout has none, so the same rules are applied here to the
    /// folded states. A schedule is judged against the output's now, not the clock's.
    func waiting(for state: OperationState) throws -> Waiting? {
        var on: OperationSnapshot.WaitingOn?
        // The engine's snapshot reads the payload too: a damaged `enqueued` record leaves the
        // rules applied here.
        if listed == nil, reader.projectionsAreCurrent, let snapshot = try? reader.operation(state.id) {
            on = snapshot.waitingOn
        } else {
            on = try foldedWaiting(for: state)
        }
        switch on {
        case .scheduled?, nil:
            on = state.nextAttemptAt.flatMap { $0 > now ? .scheduled($0) : nil }
        default:
            break
        }
        guard let on else { return nil }
        switch on {
        case .laneHead(let other, _), .dependency(let other, _), .recordWrite(let other, _):
            return Waiting(on: on, other: currentState(of: other))
        case .sessionPaused:
            return Waiting(on: on, other: engine.pausedBy.flatMap(currentState(of:)))
        case .noSession, .otherAccount, .otherInstallation, .scheduled, .attachment:
            return Waiting(on: on)
        }
    }

    /// Another operation's state, as the journal holds it; `nil` when it holds nothing readable
    /// of it (what the verdict names then reads without it).
    private func currentState(of id: OperationID) -> OperationState? {
        if let listed { return listed[id] }
        if let snapshot = try? reader.operation(id) { return snapshot.state }
        return (try? reader.timeline(of: id))?.state
    }

    /// The engine's rule for what holds a queued row (`Eligibility`, the one the worker and
    /// the Sync tab ask), over folded states: the facts are gathered here, the rule decides. Its
    /// schedule is judged by the caller against the output's now.
    private func foldedWaiting(for state: OperationState) throws -> OperationSnapshot.WaitingOn? {
        let recorded = Eligibility.Engine(engine)
        var facts = Eligibility.Facts(id: state.id, status: state.status, dueAt: nil, engine: recorded, now: now)
        facts.dependencies = state.dependsOn.map { dependency in
            var current = currentState(of: dependency)
            var hops = 0
            while let replaced = current, let by = replaced.supersededBy, hops < 100 {
                current = currentState(of: by)
                hops += 1
            }
            return Eligibility.Row(id: current?.id ?? dependency, status: current?.status)
        }
        if state.entityID != nil {
            let unsettledStatuses: Set<OutboxStatus> = [.queued, .syncing, .pendingApproval, .failed, .blocked, .conflicted]
            let unsettled = try listed.map { Array($0.values.filter { unsettledStatuses.contains($0.status) }) }
                ?? reader.operationStates(matching: OperationQuery(statuses: unsettledStatuses, limit: .max)).states
            if let head = unsettled.filter({ $0.lane == state.lane }).min(by: { $0.laneSeq < $1.laneSeq }), head.id != state.id {
                facts.laneHead = Eligibility.Row(id: head.id, status: head.status)
            }
        }
        return Eligibility.verdict(facts).waitingOn
    }
}
