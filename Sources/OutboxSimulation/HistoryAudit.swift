// Kept in one file: the audit is one state machine with a case per event kind; its invariants read
// each other's state, and apart they would hide which rule checks what.

import Foundation
import Outbox
import OutboxAudit
import OutboxWire

/// A broken invariant, in words.
struct InvariantBroken: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a person did to one operation through the engine's API. Each must show in the journal as
/// the event it makes, and no person's event may show without one.
enum PersonAction: Hashable, Sendable {
    /// `retry`: requeued by the member.
    case retry
    /// `discard`: discarded by the member.
    case discard
    /// `resolveConflict(keeping: .theirs)`: discarded by the member, the server's version won.
    case keepTheirs
    /// `resolveConflict(keeping: .mine)`: superseded, resolved keeping the member's version.
    case keepMine
    /// `revise`: superseded by a correction.
    case revise
    /// `recordApprovalDecision`.
    case approvalDecision
    /// `acknowledgeRollback(of:)`: the record stops saying this write was rolled back.
    case acknowledgeRollback
}

/// The simulation's own reading of the journal, event by event as they come, checked against
/// what the member did, the rules the seed configured and what crossed the wire.
///
/// It folds each operation itself (status, lane place, dependencies, revision, attempts since a
/// person's retry) and refuses:
/// - a request on the wire that no recorded attempt accounts for, an answer recorded that is not
///   the one that reached the engine, or a request whose `If-Match` is not the row's revision;
/// - a row sent while a row ahead of it in its lane is still pending, or before each write it
///   depends on (or what replaced it) is synced;
/// - a conflicted row sent again, or changed, without a person's decision or its rule's (a rebase
///   against the server's revision, the server's version winning), and a rule's decision missing;
/// - a person's event the member did not ask for, or one asked for and not recorded;
/// - a row given up on within the retry policy's limits, or not given up on past them;
/// - a row blocked for a dependency that did not end, a coalesced row that was sent, and a stable
///   id enqueued twice;
/// - for the files writes carry: an upload event of a file the write does not carry, of a write
///   not queued or of a file completed already; a grant that does not cover the file; a segment
///   landed before any grant, out of the grant's range, of the wrong size, or landed again (a
///   segment the journal says landed was sent again); a completion before every segment landed
///   or of another size or hash than the file's; and a write sent before each of its files was
///   completed;
/// - for the member's records: a write sent before an earlier write of one of its records settled,
///   an `If-Match` taken from anything but the record's base as the attempt started, a confirmation
///   that is not what the answer said, a write held that no rollback in the same commit holds (or
///   one a rollback holds and the commit leaves queued), a held row changed without a person, and
///   a rollback acknowledged that the member did not ask for or that the record did not show.
///
/// From what it read it keeps each record's trail (``RecordTrail``): the base the confirmations
/// make, the writes in the member's order, every value the journal can explain. What the member's
/// view must be is computed from that (``ExpectedRecord``), apart from the engine's own view.
struct HistoryAudit {
    /// One operation as the audit folded it.
    struct Row {
        var id: OperationID
        var operationType: String
        var entityID: String?
        var lane: Lane
        /// Its place in its lane: its `enqueued` seq, or that of the row it replaced.
        var laneSeq: JournalSequence
        var status: OutboxStatus = .queued
        var dependsOn: [OperationID]
        /// The revision the next attempt must carry in `If-Match`.
        var baseRevision: String?
        var rebases = 0
        var attempts = 0
        /// The seq of its latest `attemptStarted`.
        var lastSentSeq: JournalSequence?
        /// The attempt count at the last retry a person asked for, and when the first attempt
        /// since then started: what the retry policy's limits count from.
        var epochAttempts = 0
        var epochStartedAt: DeviceMoment?
        var supersededBy: OperationID?
        var discardedBy: Requester?
        /// The dependency whose chain ended unapplied, for a row blocked by it.
        var endedDependency: OperationID?
        /// A conflicted answer no one has decided on yet: the seq of its `attemptFinished` and the
        /// server's revision it named.
        var undecidedConflict: (seq: JournalSequence, revision: String?)?
        var latestSeq: JournalSequence
        var compacted = false
        /// The files it carries, as their upload events left them, by attachment.
        var uploads: [AttachmentID: Upload] = [:]

        // The member's records.

        /// Its `enqueued` seq: after `laneSeq`, its place in each of its records' order.
        var firstSeq: JournalSequence
        /// The records it changes, as its `enqueued` event keeps them (each value's hash).
        var changes: [RecordWrite] = []
        var revisionFrom: RecordKey?
        /// The base's revision of that record when the write was made (its `enqueued` keeps it).
        var basisRevision: UInt64?
        /// The revision its latest attempt sent, taken from the record's base.
        var sentRevision: String?
        /// The rolled-back write it was held on (`heldOnRollback`).
        var heldOn: OperationID?
        /// When it was rolled back (failed, blocked, discarded, withdrawn); `nil` again once retried.
        var rolledBackSeq: JournalSequence?
        var rollbackAcknowledged = false
        /// Whether its latest outcome was a conflict: a discard then keeps the server's version.
        var lastConflicted = false
        /// The code the record says it was rolled back with.
        var rollbackCode: String?
        /// Once synced: the records its answer did not describe, and the seq it was synced at.
        var awaiting: [RecordKey] = []
        var syncedSeq: JournalSequence?
        /// Its latest 412: the seq, the server's revision, the hash of the server's record, and
        /// its attempts then.
        var conflictSeen: (seq: JournalSequence, revision: String?, valueHash: SHA256Digest?, attempts: Int)?
        /// When its rule last rebased it.
        var rebasedAt: JournalSequence?
        /// Once synced: where its answer said the feed shows it (`Outbox-Visible-At`), and the
        /// record's revision the answer gave.
        var visibleAt: FeedPosition?
        var answerRevision: UInt64?
        /// Conflicted because a pulled tombstone (or a resnapshot's swap) deleted a record it
        /// puts a value in: a person decides, never its rule.
        var deletedOnServer = false

        /// Its place in the order of its records' writes.
        var recordOrder: (JournalSequence, JournalSequence) { (laneSeq, firstSeq) }

        func change(of key: RecordKey) -> RecordWrite? { changes.first { $0.key == key } }
    }

    /// One file a write carries, as its upload events left it.
    struct Upload {
        var manifest: AttachmentManifest
        /// The segment size of its latest grant; `nil` before the first.
        var segmentSize: Int64?
        /// The segments landed under that size.
        var landed: Set<Int> = []
        var completed = false

        /// How many segments the file takes at the latest grant's size.
        var segmentCount: Int? {
            segmentSize.map { AttachmentUpload.segmentCount(size: manifest.size, segmentSize: $0) }
        }
    }

    /// The rules the seed configured the engine with.
    let scenario: SimulationScenario
    private(set) var rows: [OperationID: Row] = [:]
    private(set) var lastSeq: JournalSequence = .zero
    /// Rows per lane, in the order they were enqueued.
    private var lanes: [Lane: [OperationID]] = [:]
    /// What the member asked for and the journal has not shown yet.
    private var asked: [OperationID: [PersonAction]] = [:]
    /// Requests on the wire no recorded attempt has accounted for yet, per idempotency key.
    private var wire: [String: [WireExchange]] = [:]
    /// Inline saves: the only rows that may be withdrawn.
    private var inlineSaves: Set<OperationID> = []
    /// The revision of each record as the member learned it from the edits the server applied.
    private(set) var learnedRevisions: [String: Int] = [:]
    /// How rows are called in messages (`#7`).
    var labels: [OperationID: String] = [:]
    /// How often each decision and feature showed in the journal, for the report.
    private(set) var tally: [String: Int] = [:]
    /// Each record the journal names, as the audit folded it.
    private(set) var records: [RecordKey: RecordTrail] = [:]
    /// Records whose view an event read since the last ``takeTouchedRecords()`` may have changed.
    private var touchedRecords: Set<RecordKey> = []
    /// The 412s read since the last ``takeConflicts()``: each row and its conflicted seq.
    private var newConflicts: [(id: OperationID, seq: JournalSequence)] = []
    /// Rows a rollback holds, each with the write it is held on: owed in the rollback's commit,
    /// whose events all carry the moment `owedAt`.
    private var owedHolds: [OperationID: OperationID] = [:]
    private var owedAt: (Date, Uptime?)?
    /// Local writes the member made and the journal has not shown yet, each its keys.
    private var askedLocal: [[RecordKey]] = []
    /// Each business's feed cursor, as the pulls' events set it.
    private(set) var cursors: [String: FeedPosition] = [:]
    /// The seq of the latest page applied or resnapshot swapped in: a write sent after it may have
    /// changed the server's record past what the feed brought.
    private(set) var lastFeedSeq: JournalSequence = .zero
    /// A resnapshot staging, per business: its type, and each record staged (newest revision).
    private var staging: [String: (type: String?, position: FeedPosition, records: [RecordKey: RecordTrail.Base])] = [:]
    /// Queued writes a tombstone (pulled, or a swap's) owes `deletedOnServer`, each with the
    /// records it may name, owed in the tombstone's commit.
    private var owedDeletions: [OperationID: Set<RecordKey>] = [:]

    init(scenario: SimulationScenario) {
        self.scenario = scenario
    }

    private func label(_ id: OperationID) -> String { labels[id] ?? id.description }

    /// The member asked the engine for `action` on `id`, and the engine accepted it.
    mutating func personDid(_ action: PersonAction, to id: OperationID) {
        asked[id, default: []].append(action)
    }

    /// `id` was saved inline: a rejection withdraws it.
    mutating func savedInline(_ id: OperationID) {
        inlineSaves.insert(id)
    }

    /// The member wrote local-only records: one `recordsWritten` event must show it.
    mutating func wroteLocally(_ keys: [RecordKey]) {
        askedLocal.append(keys)
    }

    /// The records whose view may have changed since the last call.
    mutating func takeTouchedRecords() -> Set<RecordKey> {
        defer { touchedRecords = [] }
        return touchedRecords
    }

    /// The 412s read since the last call.
    mutating func takeConflicts() -> [(id: OperationID, seq: JournalSequence)] {
        defer { newConflicts = [] }
        return newConflicts
    }

    /// The values of `key` whose write was rolled back (and not retried) or is held on one.
    func rolledBackValues(of key: RecordKey) -> Set<SHA256Digest> {
        Set((records[key]?.writes ?? []).compactMap { id -> SHA256Digest? in
            guard let row = rows[id] else { return nil }
            let held = row.heldOn != nil && row.status == .conflicted
            return row.rolledBackSeq != nil || held ? row.change(of: key)?.valueHash : nil
        })
    }

    /// What `outbox.record(key)` must say now, from the events read so far.
    func expected(_ key: RecordKey, isLocalOnly: Bool) -> ExpectedRecord {
        ExpectedRecord(key, trail: records[key] ?? RecordTrail(), rows: rows, isLocalOnly: isLocalOnly, feed: cursors[key.business])
    }

    /// The row that stands for `id` now: itself, or the end of the chain of rows that replaced it.
    func standing(_ id: OperationID) -> Row? {
        var row = rows[id]
        var hops = 0
        while let next = row?.supersededBy, let replacement = rows[next], hops < 1000 {
            row = replacement
            hops += 1
        }
        return row
    }

    // MARK: Reading

    /// Reads the events appended since the last call, with the requests that crossed the wire
    /// meanwhile, checking each; then checks that nothing the engine owes is missing.
    mutating func read(_ events: [JournalEvent], exchanges: [String: [WireExchange]]) throws {
        for (key, more) in exchanges { wire[key, default: []].append(contentsOf: more) }
        for event in events {
            guard event.seq == lastSeq.next else {
                throw InvariantBroken("the journal skipped from seq \(lastSeq) to \(event.seq): events were removed before the audit read them")
            }
            lastSeq = event.seq
            if let owedAt, owedAt != (event.recordedAt, event.uptime) { try checkHoldsMade() }
            if let id = event.operationID {
                try apply(event, to: id)
            } else if case .compacted(let compacted) = event.body {
                for operation in compacted.operations {
                    guard let row = rows[operation.id], row.status.isTerminal, row.status == operation.status else {
                        throw InvariantBroken("compaction removed \(label(operation.id)) as \(operation.status), which the history left \(rows[operation.id]?.status.rawValue ?? "unknown")")
                    }
                    rows[operation.id]?.compacted = true
                    touchedRecords.formUnion(row.changes.map(\.key))
                }
            } else if case .recordsWritten(let written) = event.body {
                guard !askedLocal.isEmpty, askedLocal.removeFirst() == written.writes.map(\.key) else {
                    throw InvariantBroken("seq \(event.seq) wrote local records \(written.writes.map(\.key)) the member did not write")
                }
                for write in written.writes {
                    records[write.key, default: RecordTrail()].writeLocally(write)
                    touchedRecords.insert(write.key)
                }
                tally["local writes", default: 0] += 1
            } else if case .recordBaseDropped = event.body {
                throw InvariantBroken("seq \(event.seq) dropped a record type's base: nothing in this run changes a type's schema")
            } else {
                try applyPull(event)
            }
        }
        // The worker is at rest: every commit read is whole.
        try checkHoldsMade()
        try checkNothingOwed()
    }

    /// Every row a rollback held in its commit was held by then.
    private mutating func checkHoldsMade() throws {
        if let (id, builtOn) = owedHolds.first {
            throw InvariantBroken("\(label(builtOn)) was rolled back and \(label(id)), a later queued write of one of its records, was not held in the same commit")
        }
        if let (id, keys) = owedDeletions.first {
            throw InvariantBroken("\(keys.sorted().map(\.description)) deleted on the server (a pulled tombstone or a resnapshot's swap) and \(label(id)), a queued write putting a value in it made before, did not turn conflicted (deleted_on_server) in the same commit")
        }
        owedAt = nil
    }

    /// What the engine must have recorded by now, the worker being at rest: every person's
    /// decision, every rule's decision on a conflict, and every request sent (but the one a
    /// process died holding the answer to, until the next pass abandons it).
    private func checkNothingOwed() throws {
        if let (id, actions) = asked.first(where: { !$0.value.isEmpty }) {
            throw InvariantBroken("the member's \(actions[0]) of \(label(id)) is not in its history")
        }
        if let keys = askedLocal.first {
            throw InvariantBroken("the member's local write of \(keys) is not in the journal")
        }
        for row in rows.values {
            if let conflict = row.undecidedConflict, let owed = owedDecision(row, revision: conflict.revision) {
                throw InvariantBroken("\(label(row.id)) conflicted and its rule's decision (\(owed)) is not in its history")
            }
        }
        for (key, left) in wire where !left.isEmpty {
            let id = OperationID(key)
            let awaitingAbandonment = left == [WireExchange(ifMatch: left[0].ifMatch, answer: .lostWithTheProcess)]
                && id.flatMap { rows[$0]?.status } == .syncing
            if !awaitingAbandonment {
                throw InvariantBroken("\(left.count) request(s) under key \(key) (\(id.map(label) ?? "no operation")) crossed the wire and no attempt in the journal accounts for them: \(left.map(\.answer))")
            }
        }
    }

    /// At the end of a healed run: no request is left unaccounted for.
    func checkFinal() throws {
        if let (key, left) = wire.first(where: { !$0.value.isEmpty }) {
            throw InvariantBroken("after healing, \(left.count) request(s) under key \(key) are in no attempt of the journal")
        }
    }

    /// The decision the row's conflict rule makes by itself, in the commit of the conflicted
    /// outcome; `nil` when a person decides.
    private func owedDecision(_ row: Row, revision: String?) -> JournalEventKind? {
        guard !row.deletedOnServer else { return nil }
        return switch scenario.conflictRule(for: row.operationType) {
        case .askMember: nil
        case .serverWins: .discarded
        case .rebase(let maxTimes): row.rebases < maxTimes && revision != nil ? .rebased : nil
        }
    }

    // MARK: The pull

    /// A pull's engine event: a page applied to the base (each change only over an older
    /// revision), a resnapshot staged and swapped in, a page refused, a summary compared.
    private mutating func applyPull(_ event: JournalEvent) throws {
        func broken(_ text: String) -> InvariantBroken { InvariantBroken("seq \(event.seq) \(event.kind): \(text)") }
        switch event.body {
        case .pageApplied(let page):
            guard staging[page.business] == nil else { throw broken("a page applied while a resnapshot stages") }
            if let cursor = cursors[page.business], cursor != page.from {
                throw broken("the page was asked from \(page.from); the feed's cursor is \(cursor)")
            }
            guard page.to >= page.from else { throw broken("the cursor moved back from \(page.from) to \(page.to)") }
            var last: [RecordKey: RecordConfirmation] = [:]
            for confirmation in page.confirmations {
                if let kept = last[confirmation.key], kept.revision >= confirmation.revision { continue }
                last[confirmation.key] = confirmation
            }
            var tombstones: [(RecordKey, UInt64)] = []
            for (key, confirmation) in last.sorted(by: { $0.key < $1.key }) {
                if confirmation.valueHash == nil, records[key]?.base.map({ confirmation.revision > $0.revision }) ?? true {
                    tombstones.append((key, confirmation.revision))
                }
            }
            for confirmation in page.confirmations {
                records[confirmation.key, default: RecordTrail()].confirm(confirmation, seq: event.seq, by: nil)
                touchedRecords.insert(confirmation.key)
            }
            cursors[page.business] = page.to
            lastFeedSeq = event.seq
            tally["pages pulled", default: 0] += 1
            tally["changes pulled", default: 0] += page.confirmations.count
            oweDeletions(tombstones, seq: event.seq, at: event)
            touchSynced(business: page.business)

        case .pageRefused(let refused):
            // The model serves only good pages: what the engine refuses is a captive portal's.
            guard refused.code == "malformed" else { throw broken("refused a page of the model server's: \(refused.code): \(refused.detail)") }
            tally["pages refused (not a page)", default: 0] += 1

        case .resnapshotStarted(let started):
            guard staging[started.business] == nil else { throw broken("a resnapshot started while one stages") }
            staging[started.business] = (started.type, started.position, [:])
            tally["resnapshots started (\(started.reason))", default: 0] += 1

        case .snapshotPageStaged(let page):
            guard staging[page.business] != nil else { throw broken("a snapshot page staged with no resnapshot started") }
            for confirmation in page.confirmations {
                guard confirmation.valueHash != nil else { throw broken("staged a tombstone: a snapshot holds live records only") }
                stage(confirmation, seq: event.seq)
                records[confirmation.key, default: RecordTrail()].brought(confirmation.valueHash)
            }
            tally["snapshot pages staged", default: 0] += 1

        case .resnapshotFinished(let finished):
            guard let staged = staging.removeValue(forKey: finished.business) else { throw broken("a resnapshot swapped in with nothing staged") }
            guard staged.type == finished.type else { throw broken("swapped in type \(finished.type ?? "all"), staged \(staged.type ?? "all")") }
            let inScope = { (key: RecordKey) in key.business == finished.business && (finished.type.map { $0 == key.type } ?? true) }
            // A first pull (no cursor yet): a base answers built, of an epoch the engine knows only
            // when the answer that brought it named a position.
            let firstPull = finished.type == nil && cursors[finished.business] == nil
            let oldBases = records.filter { inScope($0.key) }.mapValues(\.base)
            // The member sees the staged generation from now on: a record it does not hold is
            // gone from the base, but one a pending write changes, deleted at its old revision.
            for key in Set(records.keys.filter(inScope)).union(staged.records.keys) {
                records[key, default: RecordTrail()].swapped(to: staged.records[key])
                touchedRecords.insert(key)
            }
            var tombstones: [(RecordKey, UInt64)] = []
            for vanished in finished.vanished {
                guard inScope(vanished.key), vanished.valueHash == nil, let before = records[vanished.key], !before.writes.isEmpty else {
                    throw broken("\(vanished.key) vanished, which no pending write of the business changes")
                }
                // Deleted at its old revision, or at 0 where the old revision means nothing against
                // the snapshot's: into a new epoch, or at a first pull whose answer named no
                // position of the snapshot's epoch.
                let oldRevision = oldBases[vanished.key]??.revision
                if firstPull, vanished.revision != 0, vanished.revision != oldRevision {
                    throw broken("\(vanished.key) vanished at a first pull at revision \(vanished.revision), neither its old revision \(oldRevision.map { "\($0)" } ?? "none") nor 0")
                }
                records[vanished.key]?.base = RecordTrail.Base(revision: vanished.revision, valueHash: nil, seq: event.seq, byOperation: nil)
                records[vanished.key]?.vanished = true
                records[vanished.key]?.vanishedUnplaced = firstPull && vanished.revision == 0 && oldRevision != 0
                tombstones.append((vanished.key, vanished.revision))
            }
            cursors[finished.business] = finished.cursor
            lastFeedSeq = event.seq
            tally["resnapshots", default: 0] += 1
            // Every pending write of the business stays (its overlay over the new base).
            tally["pending writes kept across a swap", default: 0] += rows.values.filter { row in
                [.queued, .syncing, .pendingApproval, .conflicted].contains(row.status) && row.changes.contains(where: { inScope($0.key) })
            }.count
            tally["records vanished at a swap", default: 0] += finished.vanished.count
            oweDeletions(tombstones, seq: event.seq, at: event)
            touchSynced(business: finished.business)

        case .resnapshotAbandoned(let abandoned):
            guard staging.removeValue(forKey: abandoned.business) != nil else { throw broken("abandoned a resnapshot that was not staging") }
            tally["resnapshots abandoned", default: 0] += 1

        case .summaryChecked(let checked):
            guard checked.verdict != .mismatched else {
                throw broken("the base's \(checked.type) does not match the server's summary at \(checked.position): \(checked.localCount ?? -1) records, the server's \(checked.serverCount)")
            }
            tally["summaries checked", default: 0] += 1

        default:
            break
        }
    }

    /// `confirmation` staged beside the base the member sees, when a resnapshot stages its
    /// business (by a snapshot page, or an answer landing meanwhile): only over an older revision.
    /// - Parameter id: the write whose answer brought it (`nil`: a snapshot page).
    /// - Parameter visibleAt: the answer's feed position: at or before where the snapshot began,
    ///   its pages hold the record's state from there on, and the answer is not staged.
    private mutating func stage(_ confirmation: RecordConfirmation, seq: JournalSequence, by id: OperationID? = nil, visibleAt: FeedPosition? = nil) {
        guard let scope = staging[confirmation.key.business], scope.type.map({ $0 == confirmation.key.type }) ?? true else { return }
        if let visibleAt, visibleAt.isDelivered(by: scope.position) { return }
        if let kept = scope.records[confirmation.key], kept.revision >= confirmation.revision { return }
        staging[confirmation.key.business]?.records[confirmation.key] = RecordTrail.Base(
            revision: confirmation.revision, valueHash: confirmation.valueHash, seq: seq, byOperation: id)
    }

    /// A synced write's change may stop showing once the feed moves: its records are looked at.
    private mutating func touchSynced(business: String) {
        for row in rows.values where row.status == .synced && !row.awaiting.isEmpty {
            touchedRecords.formUnion(row.awaiting.filter { $0.business == business })
        }
    }

    /// Each record deleted on the server at `seq` (a pulled tombstone newer than the base, or a
    /// swap's vanished record): every queued write putting a value in it, made before and not
    /// held, is owed `deletedOnServer` in the same commit; one on its way is asked once it is
    /// back in the queue.
    private mutating func oweDeletions(_ tombstones: [(RecordKey, UInt64)], seq: JournalSequence, at event: JournalEvent) {
        for (key, _) in tombstones {
            for id in records[key]?.writes ?? [] {
                guard let row = rows[id], row.status == .queued, row.heldOn == nil, row.firstSeq < seq,
                    let change = row.change(of: key), !change.isDelete else { continue }
                owedDeletions[id, default: []].insert(key)
                owedAt = (event.recordedAt, event.uptime)
            }
        }
    }

    /// A write back in the queue after an attempt: a record it puts a value in that a pull (or a
    /// swap) deleted after it was made owes it `deletedOnServer` now.
    private mutating func oweDeletionsAfterAttempt(_ row: Row, at event: JournalEvent) {
        for change in row.changes where !change.isDelete {
            guard let base = records[change.key]?.base, base.valueHash == nil, base.seq > row.firstSeq, base.byOperation == nil else { continue }
            owedDeletions[row.id, default: []].insert(change.key)
            owedAt = (event.recordedAt, event.uptime)
        }
    }

    // MARK: One event

    private mutating func apply(_ event: JournalEvent, to id: OperationID) throws {
        if case .enqueued(let enqueued) = event.body {
            try enqueue(enqueued, event: event, id: id)
            return
        }
        guard var row = rows[id] else {
            throw InvariantBroken("\(label(id)) has a \(event.kind) event and was never enqueued")
        }
        func broken(_ text: String) -> InvariantBroken {
            InvariantBroken("\(label(id)) (\(row.status), \(row.operationType)), \(event.kind) at seq \(event.seq): \(text)")
        }
        if let conflict = row.undecidedConflict {
            // A conflicted row waits for a decision: its rule's, in the same commit, or a person's.
            if let owed = owedDecision(row, revision: conflict.revision), event.kind != owed || event.seq != conflict.seq.next {
                throw broken("its rule owed \(owed) right after the conflict at seq \(conflict.seq)")
            }
            guard [.discarded, .superseded, .rebased].contains(event.kind) else {
                throw broken("a conflicted row changed without a decision")
            }
        }
        if row.heldOn != nil, row.status == .conflicted, event.kind != .discarded, event.kind != .superseded {
            throw broken("a row held on a rolled-back write changed without a person's decision")
        }
        let before = row.status
        if !row.changes.isEmpty { touchedRecords.formUnion(row.changes.map(\.key)) }

        switch event.body {
        case .enqueued, .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped,
            .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked, .routeChanged,
            .installationAdopted:
            throw broken("an engine event under an operation")

        case .attachmentGranted(let granted):
            var upload = try pendingUpload(granted.attachment, of: row, broken)
            guard granted.segmentSize > 0,
                granted.segmentCount == AttachmentUpload.segmentCount(size: upload.manifest.size, segmentSize: granted.segmentSize)
            else { throw broken("a grant of \(granted.segmentCount) segments of \(granted.segmentSize) bytes does not cover \(upload.manifest.size) bytes") }
            // Segments landed under another size are not this grant's.
            if upload.segmentSize != granted.segmentSize { upload.landed = [] }
            upload.segmentSize = granted.segmentSize
            row.uploads[granted.attachment] = upload
            tally["grants", default: 0] += 1

        case .segmentLanded(let landed):
            var upload = try pendingUpload(landed.attachment, of: row, broken)
            guard let size = upload.segmentSize, let count = upload.segmentCount else { throw broken("a segment landed before any grant") }
            let number = landed.segment.number
            guard (1...count).contains(number) else { throw broken("segment \(number) landed; the grant has \(count)") }
            let expected = number == count ? upload.manifest.size - Int64(count - 1) * size : size
            guard landed.segment.size == expected else { throw broken("segment \(number) landed with \(landed.segment.size) bytes, not \(expected)") }
            guard upload.landed.insert(number).inserted else {
                throw broken("segment \(number) of \(landed.attachment) landed again: a segment the journal says landed was sent again")
            }
            row.uploads[landed.attachment] = upload
            tally["segments landed", default: 0] += 1

        case .attachmentCompleted(let completed):
            var upload = try pendingUpload(completed.attachment, of: row, broken)
            guard let count = upload.segmentCount, upload.landed == Set(1...count) else {
                throw broken("\(completed.attachment) completed with segments \(upload.landed.sorted()) of \(upload.segmentCount ?? 0) landed")
            }
            guard completed.size == upload.manifest.size, completed.sha256 == upload.manifest.sha256 else {
                throw broken("\(completed.attachment) completed as \(completed.size) bytes, SHA-256 \(completed.sha256.hex.prefix(12)); the file is \(upload.manifest.size) bytes, \(upload.manifest.sha256.hex.prefix(12))")
            }
            upload.completed = true
            row.uploads[completed.attachment] = upload
            tally["attachments completed", default: 0] += 1

        case .attachmentRefused(let refused):
            _ = try pendingUpload(refused.attachment, of: row, broken)
            // The write fails holding its files; a person's retry uploads on from what landed.
            row.status = .failed
            row.rollbackCode = refused.errorCode
            tally["attachments refused (\(refused.errorCode))", default: 0] += 1

        case .deletedOnServer(let deleted):
            guard row.status == .queued, owedDeletions[id]?.contains(deleted.key) == true else {
                throw broken("deleted on the server (\(deleted.key) at \(deleted.revision)), which no pulled tombstone or swap of a record it puts a value in owes it")
            }
            guard records[deleted.key]?.base.map({ $0.valueHash == nil && $0.revision == deleted.revision }) == true else {
                throw broken("deleted on the server at revision \(deleted.revision), which is not the tombstone in \(deleted.key)'s base")
            }
            owedDeletions[id] = nil
            tally["deleted on the server", default: 0] += 1
            row.status = .conflicted
            row.deletedOnServer = true
            row.undecidedConflict = (event.seq, String(deleted.revision))
            row.conflictSeen = (event.seq, String(deleted.revision), nil, row.attempts)
            row.rollbackCode = ErrorCode.deletedOnServer

        case .heldOnRollback(let held):
            guard row.status == .queued else { throw broken("only a queued row is held on a rolled-back write") }
            guard owedHolds[id] == held.builtOn else {
                throw broken("held on \(label(held.builtOn)), whose rollback in this commit does not hold it (a later queued write of a record it changed)")
            }
            owedHolds[id] = nil
            tally["held on a rolled-back write", default: 0] += 1
            row.status = .conflicted
            row.heldOn = held.builtOn

        case .rollbackAcknowledged(let acknowledged):
            guard RecordRule.isRolledBackStatus(row.status), row.rolledBackSeq != nil, !row.rollbackAcknowledged else {
                throw broken("acknowledged a rollback the write does not have")
            }
            guard row.change(of: acknowledged.key) != nil else { throw broken("acknowledged for \(acknowledged.key), which it did not change") }
            guard take(.acknowledgeRollback, for: id) else { throw broken("a rollback acknowledged without the app asking") }
            tally["rollbacks acknowledged", default: 0] += 1
            row.rollbackAcknowledged = true

        case .attemptStarted(let started):
            guard row.status == .queued else { throw broken("only a queued row may be sent") }
            if let pending = row.uploads.values.first(where: { !$0.completed }) {
                throw broken("sent before its file \(pending.manifest.id) (\(pending.manifest.name)) was completed")
            }
            guard started.attempt.rawValue == row.attempts + 1 else { throw broken("attempt \(started.attempt) after \(row.attempts)") }
            if let ahead = lanes[row.lane]?.first(where: { $0 != id && rows[$0].map { !$0.status.isTerminal && $0.laneSeq < row.laneSeq } ?? false }) {
                throw broken("sent while \(label(ahead)), ahead of it in its lane, is \(rows[ahead]!.status)")
            }
            for dependency in row.dependsOn {
                let current = standing(dependency)
                guard let current, current.status == .synced else {
                    throw broken("sent before its dependency \(label(dependency)) was synced (it stands as \(current.map { "\(label($0.id)) \($0.status)" } ?? "unknown"))")
                }
            }
            // A record's writes reach the server in the member's order.
            for change in row.changes {
                for other in records[change.key]?.writes ?? [] where other != id {
                    guard let earlier = rows[other], earlier.recordOrder < row.recordOrder else { continue }
                    if earlier.status != .synced, !earlier.status.isTerminal {
                        throw broken("sent while \(label(other)), an earlier write of \(change.key), is \(earlier.status)")
                    }
                }
            }
            // `If-Match` from the record's base as the attempt starts, when the write asks for it;
            // a base a pull moved beneath it after it was made leaves it sent against the revision
            // the member made it on.
            let base = row.revisionFrom.flatMap { records[$0]?.base }
            var expectedRevision = row.revisionFrom == nil ? nil : base.flatMap { $0.valueHash == nil ? nil : String($0.revision) }
            if let base, base.seq > row.firstSeq, base.byOperation == nil, let basis = row.basisRevision { expectedRevision = String(basis) }
            if row.revisionFrom != nil, row.rebases > 0 { expectedRevision = row.baseRevision }
            guard started.sentRevision == expectedRevision else {
                throw broken("recorded If-Match \(started.sentRevision ?? "none") taken from \(row.revisionFrom.map { "\($0)" } ?? "no record"), whose base is at \(expectedRevision ?? "none")")
            }
            if let base, expectedRevision != nil, base.byOperation != id { tally["edits chained on an earlier write's revision", default: 0] += 1 }
            row.sentRevision = started.sentRevision
            if row.attempts == 0, !row.dependsOn.isEmpty { tally["dependents sent", default: 0] += 1 }
            row.status = .syncing
            row.attempts += 1
            row.lastSentSeq = event.seq
            if row.epochStartedAt == nil { row.epochStartedAt = DeviceMoment(wall: event.recordedAt, uptime: event.uptime) }

        case .attemptFinished(let finished):
            guard row.status == .syncing, finished.attempt.rawValue == row.attempts else { throw broken("no attempt \(finished.attempt) in flight") }
            if finished.outcome != .notSent {
                guard let exchange = takeExchange(for: id) else {
                    throw broken("an attempt's outcome is recorded and no request under its key crossed the wire")
                }
                let revision = row.revisionFrom == nil ? row.baseRevision : row.sentRevision
                guard exchange.ifMatch == revision.map({ "\"\($0)\"" }) else {
                    throw broken("sent with If-Match \(exchange.ifMatch ?? "none") while its revision is \(revision ?? "none")")
                }
                switch (finished.outcome, exchange.answer) {
                case (.response(let recorded), .response(let status, let revision, let body)) where recorded == status:
                    if finished.disposition == .conflicted, finished.serverRevision != revision {
                        throw broken("recorded the server's revision as \(finished.serverRevision ?? "none"); the server sent \(revision ?? "none")")
                    }
                    if finished.disposition == .rejected || finished.disposition == .blocked, let code = body.code, finished.errorCode != code {
                        throw broken("recorded the code \(finished.errorCode ?? "none"); the server sent \(code)")
                    }
                    let expected = Self.confirmations(of: row, disposition: finished.disposition, revision: revision, body: body)
                    guard finished.confirmations == expected else {
                        throw broken("confirmed \(finished.confirmations.map(Self.describe)); the answer says \(expected.map(Self.describe))")
                    }
                    // A write of records keeps where the feed shows it.
                    if finished.disposition == .accepted || finished.disposition == .replayed, !row.changes.isEmpty, finished.visibleAt?.text != body.visibleAt {
                        throw broken("recorded the answer visible at \(finished.visibleAt?.text ?? "none"); the server said \(body.visibleAt ?? "none")")
                    }
                case (.noResponse, .noResponse):
                    break
                default:
                    throw broken("recorded \(finished.outcome); what reached the engine was \(exchange.answer)")
                }
            }
            if case .response = finished.outcome {} else if !finished.confirmations.isEmpty {
                throw broken("confirmed records without an answer")
            }
            for confirmation in finished.confirmations {
                let cursor = cursors[confirmation.key.business]
                // The feed at or past the answer's position holds the record's state from there on:
                // the engine keeps the answer's confirmation but leaves the base to the feed.
                let stale = finished.visibleAt.map { position in cursor.map { $0.epoch == position.epoch ? $0 >= position : $0.epoch > position.epoch } ?? false } ?? false
                if stale { tally["answers older than the feed's cursor", default: 0] += 1 }
                records[confirmation.key, default: RecordTrail()].confirm(confirmation, seq: event.seq, by: id, stale: stale)
                touchedRecords.insert(confirmation.key)
                // An answer landing while a resnapshot stages goes to both generations.
                stage(confirmation, seq: event.seq, by: id, visibleAt: finished.visibleAt)
            }
            guard (finished.outcome == .response(statusCode: 412)) == (finished.disposition == .conflicted) else {
                throw broken("\(finished.outcome) was classified \(finished.disposition)")
            }
            if finished.outcome == .noResponse(.cancelled) {
                // An attempt the expiry cut off never counts toward the policy's attempts.
                guard finished.disposition == .transientFailure else { throw broken("a cancelled attempt was classified \(finished.disposition)") }
                row.epochAttempts += 1
            } else if finished.disposition == .transientFailure || finished.disposition == .gaveUp {
                let attempts = row.attempts - row.epochAttempts
                // Measured as the engine must: by the device's uptime within a boot, never by
                // its wall clock, which the workload moves by hours.
                let now = DeviceMoment(wall: event.recordedAt, uptime: event.uptime)
                let policy = scenario.retryPolicy
                let age = DeviceMoment.elapsed(from: row.epochStartedAt ?? now, to: now, bootGapCapSeconds: policy.maxDelaySeconds)
                let pastLimits = policy.maxAttempts.map { attempts >= $0 } ?? false || policy.maxAgeSeconds.map { age >= $0 } ?? false
                if pastLimits != (finished.disposition == .gaveUp) {
                    throw broken("\(finished.disposition) after \(attempts) attempts over \(Int(age)) s since the last retry, under \(scenario.retryDescription)")
                }
            }
            row.status = finished.disposition.status
            row.rollbackCode = finished.errorCode
            row.lastConflicted = finished.disposition == .conflicted
            if finished.disposition == .conflicted {
                row.undecidedConflict = (event.seq, finished.serverRevision)
                tally["conflicts", default: 0] += 1
                if !row.changes.isEmpty {
                    let current = finished.confirmations.first { $0.source == .conflict }
                    row.conflictSeen = (event.seq, finished.serverRevision, current?.valueHash, row.attempts)
                    newConflicts.append((id, event.seq))
                }
            }
            if finished.disposition == .accepted || finished.disposition == .replayed {
                // A record the answer described is read at once from the base it wrote; the
                // others keep the member's change until the server's value arrives.
                let described = Set(finished.confirmations.map(\.key))
                row.awaiting = row.changes.map(\.key).filter { !described.contains($0) }
                row.syncedSeq = event.seq
                row.visibleAt = finished.visibleAt
                row.answerRevision = finished.serverRevision.flatMap(UInt64.init)
            }
            if row.status == .queued { oweDeletionsAfterAttempt(row, at: event) }
            if finished.disposition == .gaveUp { tally["given up", default: 0] += 1 }
            if finished.disposition == .accepted || finished.disposition == .replayed,
                let entity = row.entityID, SimulationScenario.editTypes.contains(row.operationType),
                let revision = finished.serverRevision.flatMap(Int.init)
            {
                learnedRevisions[entity] = max(learnedRevisions[entity] ?? 0, revision)
            }

        case .attemptAbandoned(let abandoned):
            guard row.status == .syncing, abandoned.attempt.rawValue == row.attempts else { throw broken("no attempt \(abandoned.attempt) in flight") }
            row.lastConflicted = false
            guard let exchange = takeExchange(for: id) else {
                throw broken("an attempt is abandoned and no request under its key crossed the wire")
            }
            guard exchange.answer == .lostWithTheProcess else {
                throw broken("abandoned, though \(exchange.answer) reached the engine alive")
            }
            row.status = .queued
            oweDeletionsAfterAttempt(row, at: event)

        case .withdrawn:
            guard row.status == .failed, inlineSaves.contains(id) else { throw broken("only a rejected inline save is withdrawn") }
            row.status = .withdrawn

        case .requeued(let requeued):
            guard requeued.requestedBy == .member, take(.retry, for: id) else { throw broken("requeued without the member asking") }
            row.status = .queued
            row.epochAttempts = row.attempts
            row.epochStartedAt = nil
            row.endedDependency = nil
            // Retried, its change shows again.
            row.rolledBackSeq = nil
            row.rollbackAcknowledged = false

        case .discarded(let discarded):
            switch (discarded.requestedBy, discarded.reason) {
            case (.rule, .serverWon):
                guard scenario.conflictRule(for: row.operationType) == .serverWins, let conflict = row.undecidedConflict,
                    event.seq == conflict.seq.next
                else { throw broken("discarded by a rule that does not apply") }
            case (.member, .memberDiscarded):
                guard take(.discard, for: id) else { throw broken("discarded without the member asking") }
            case (.member, .serverWon):
                guard take(.keepTheirs, for: id) else { throw broken("resolved keeping the server's version without the member asking") }
            default:
                throw broken("discarded by \(discarded.requestedBy) for \(discarded.reason), which nothing in this run asks for")
            }
            if discarded.requestedBy == .rule { tally["server won by rule", default: 0] += 1 }
            if discarded.requestedBy == .member, discarded.reason == .serverWon { tally["kept theirs", default: 0] += 1 }
            row.status = .discarded
            row.discardedBy = discarded.requestedBy
            row.undecidedConflict = nil
            row.rollbackCode = row.lastConflicted ? ErrorCode.serverVersionKept : ErrorCode.discarded

        case .approvalDecided(let decision):
            guard row.status == .pendingApproval, take(.approvalDecision, for: id) else { throw broken("an approval decision nobody made") }
            row.lastConflicted = false
            row.status = decision.approved ? .synced : .failed
            if decision.approved {
                // A decision names no revision: each record waits for the server's value.
                row.awaiting = row.changes.map(\.key)
                row.syncedSeq = event.seq
            } else {
                row.rollbackCode = ErrorCode.approvalRejected
            }

        case .superseded(let superseded):
            switch superseded.reason {
            case .revised:
                guard take(.revise, for: id) else { throw broken("revised without the member asking") }
            case .resolvedMine:
                guard take(.keepMine, for: id) else { throw broken("resolved keeping the member's version without the member asking") }
            case .coalesced:
                guard scenario.coalesces(row.operationType), row.status == .queued, row.attempts == 0 else {
                    throw broken("coalesced, but its type does not coalesce or it was already sent")
                }
            }
            tally[superseded.reason == .revised ? "corrections" : superseded.reason == .resolvedMine ? "kept mine" : "coalesced", default: 0] += 1
            row.status = .superseded
            row.supersededBy = superseded.by
            row.undecidedConflict = nil

        case .rebased(let rebased):
            guard case .rebase(let maxTimes) = scenario.conflictRule(for: row.operationType), row.rebases < maxTimes,
                let conflict = row.undecidedConflict, event.seq == conflict.seq.next
            else { throw broken("rebased without its rule (or past its limit: \(row.rebases) so far)") }
            guard rebased.baseRevision == conflict.revision else {
                throw broken("rebased onto \(rebased.baseRevision), not the server's revision \(conflict.revision ?? "none")")
            }
            tally["rebases", default: 0] += 1
            row.rebasedAt = event.seq
            row.status = .queued
            row.baseRevision = rebased.baseRevision
            row.rebases += 1
            row.undecidedConflict = nil

        case .claimMayBeForgotten:
            // Sent here, or (an imported write) from the journal it came from: the fold checks which.
            guard row.status == .queued else { throw broken("blocked for an old claim while \(row.status)") }
            tally["claims outlived", default: 0] += 1
            row.status = .blocked

        case .dependencyEnded(let ended):
            guard row.status == .queued else { throw broken("only a queued row waits for its dependencies") }
            let ends = row.dependsOn.compactMap(standing)
            guard ends.contains(where: { $0.id == ended.dependency && $0.status == ended.status }),
                ended.status == .discarded || ended.status == .withdrawn
            else { throw broken("blocked for dependency \(label(ended.dependency)) ending \(ended.status), which its dependencies do not show") }
            tally["dependencies ended", default: 0] += 1
            row.status = .blocked
            row.endedDependency = ended.dependency
            row.rollbackCode = ErrorCode.dependencyEnded
        }
        row.latestSeq = event.seq
        rows[id] = row
        if !row.changes.isEmpty, !RecordRule.isRolledBackStatus(before), RecordRule.isRolledBackStatus(row.status) {
            try rolledBack(id, event: event)
            // Kept the server's version by the member's choice: nothing to tell them.
            if row.status == .discarded, row.discardedBy == .member, case .discarded(let discarded) = event.body, discarded.reason == .serverWon {
                rows[id]?.rollbackAcknowledged = true
            }
        }
    }

    /// `id`'s change was rolled back at `event`: every later write of one of its records still
    /// queued was made on its value, and is owed a hold in the same commit.
    private mutating func rolledBack(_ id: OperationID, event: JournalEvent) throws {
        guard var row = rows[id] else { return }
        row.rolledBackSeq = event.seq
        row.rollbackAcknowledged = false
        rows[id] = row
        tally["rollbacks", default: 0] += 1
        for change in row.changes {
            for other in records[change.key]?.writes ?? [] where other != id {
                guard let later = rows[other], later.status == .queued, later.recordOrder > row.recordOrder, owedHolds[other] == nil else { continue }
                owedHolds[other] = id
                owedAt = (event.recordedAt, event.uptime)
            }
        }
    }

    /// What an answer confirms of the records `row` changes, as `Docs/records.md` ("The wire")
    /// says the engine reads it: a success's `record` (or its delete) at its revision, for the
    /// record the answer names or else the write's first; a 412's `current` at the server's
    /// revision, for the record the write takes its revision from or else its first.
    static func confirmations(of row: Row, disposition: Disposition, revision text: String?, body: WireBody) -> [RecordConfirmation] {
        guard let first = row.changes.first, let revision = text.flatMap(UInt64.init) else { return [] }
        switch disposition {
        case .accepted, .replayed:
            let named = body.type.flatMap { type in body.id.map { RecordKey(business: first.key.business, type: type, id: $0) } }
            let change = row.changes.first { $0.key == named } ?? first
            if body.deleted { return [RecordConfirmation(key: change.key, revision: revision, valueHash: nil, source: body.recordHash == nil ? .written : .answer)] }
            if let hash = body.recordHash { return [RecordConfirmation(key: change.key, revision: revision, valueHash: hash, source: .answer)] }
            return [RecordConfirmation(key: change.key, revision: revision, valueHash: change.valueHash, source: .written)]
        case .conflicted:
            guard let hash = body.recordHash else { return [] }
            return [RecordConfirmation(key: row.revisionFrom ?? first.key, revision: revision, valueHash: hash, source: .conflict)]
        default:
            return []
        }
    }

    static func describe(_ confirmation: RecordConfirmation) -> String {
        "\(confirmation.key) at \(confirmation.revision) \(confirmation.valueHash.map { String($0.hex.prefix(8)) } ?? "deleted") (\(confirmation.source))"
    }

    private mutating func enqueue(_ enqueued: Enqueued, event: JournalEvent, id: OperationID) throws {
        guard rows[id] == nil else {
            throw InvariantBroken("\(label(id)) was enqueued twice (seq \(event.seq)): one id made two operations")
        }
        let request = enqueued.request
        var laneSeq = event.seq
        if let replaced = enqueued.supersedes {
            guard let old = rows[replaced.operation], old.supersededBy == id, old.latestSeq == event.seq.previous else {
                throw InvariantBroken("\(label(id)) replaces \(label(replaced.operation)) without its superseded event in the same commit")
            }
            // A row of an entity's lane is replaced in its place; a row of a lane of its own has
            // no place to keep.
            let lane = Lane(businessID: request.businessID, entityID: request.entityID, operation: id)
            guard replaced.laneSeq == old.laneSeq, request.entityID == nil || old.lane == lane else {
                throw InvariantBroken("\(label(id)) replaces \(label(replaced.operation)) but not in its lane's place")
            }
            laneSeq = old.laneSeq
        }
        for dependency in request.dependsOn where rows[dependency] == nil {
            throw InvariantBroken("\(label(id)) depends on \(label(dependency)), never enqueued")
        }
        var row = Row(
            id: id, operationType: request.operationType, entityID: request.entityID,
            lane: Lane(businessID: request.businessID, entityID: request.entityID, operation: id),
            laneSeq: laneSeq, dependsOn: request.dependsOn, baseRevision: request.baseRevision, latestSeq: event.seq,
            firstSeq: event.seq
        )
        row.changes = enqueued.changes
        row.revisionFrom = request.revisionFrom
        for manifest in enqueued.attachments {
            guard row.uploads.updateValue(Upload(manifest: manifest), forKey: manifest.id) == nil else {
                throw InvariantBroken("\(label(id)) carries attachment \(manifest.id) twice")
            }
        }
        if !enqueued.attachments.isEmpty { tally["writes with files", default: 0] += 1 }
        row.basisRevision = enqueued.basisRevision
        if let key = request.revisionFrom, !enqueued.changes.contains(where: { $0.key == key }) {
            throw InvariantBroken("\(label(id)) takes its revision from \(key), which it does not change")
        }
        rows[id] = row
        lanes[row.lane, default: []].append(id)
        for change in enqueued.changes {
            records[change.key, default: RecordTrail()].wrote(change, by: id)
            touchedRecords.insert(change.key)
        }
        if !enqueued.changes.isEmpty { tally["record writes", default: 0] += 1 }
    }

    /// The file `attachment` of `row`, while it may upload: the write carries it, is queued, and
    /// the file is not completed yet.
    private func pendingUpload(_ attachment: AttachmentID, of row: Row, _ broken: (String) -> InvariantBroken) throws -> Upload {
        guard let upload = row.uploads[attachment] else { throw broken("an upload event of \(attachment), which the write does not carry") }
        guard row.status == .queued else { throw broken("an upload event of \(attachment) while the write is \(row.status): only a queued write's files upload") }
        guard !upload.completed else { throw broken("an upload event of \(attachment), completed already") }
        return upload
    }

    /// The next request sent under `id`'s key, which an attempt now accounts for; `nil` when
    /// none is left.
    private mutating func takeExchange(for id: OperationID) -> WireExchange? {
        guard var left = wire[id.idempotencyKey], !left.isEmpty else { return nil }
        let exchange = left.removeFirst()
        wire[id.idempotencyKey] = left
        return exchange
    }

    /// Takes one `action` the member asked for on `id`; `false` when none is waiting.
    private mutating func take(_ action: PersonAction, for id: OperationID) -> Bool {
        guard let index = asked[id]?.firstIndex(of: action) else { return false }
        asked[id]?.remove(at: index)
        return true
    }
}

extension JournalSequence {
    /// The position right before this one.
    fileprivate var previous: JournalSequence { JournalSequence(rawValue: rawValue - 1) }
}
