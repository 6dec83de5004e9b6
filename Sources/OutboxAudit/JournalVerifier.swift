public import Outbox
import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import OutboxWire

/// Checks a whole journal, reading only: every record's checksum, every operation's invariants,
/// and the stored projections against a rebuild from the events.
///
/// The invariants, each reported with its seq and operation:
/// - every record reads back (checksum, format, body) and seqs run without gaps;
/// - each operation starts with exactly one `enqueued`, whose payload hashes to its request hash;
/// - attempts are numbered 1..n, each with exactly one outcome or abandonment before the next;
/// - nothing follows a terminal status;
/// - statuses change only through the fold's transitions (``Fold``).
///
/// An event that breaks one is reported and left out of the rebuild, as the engine would have
/// refused it. An operation with a damaged record is not judged further: its later events
/// cannot be told apart from the consequences of the damage.
struct JournalVerifier {
    /// Opens sealed payloads, when the journal is encrypted and its key known: without it their
    /// hashes cannot be checked, and are not.
    let unseal: RecordCodec.Unsealer?
    /// Sealed payloads whose hash could not be checked for want of the key.
    private(set) var sealedUnchecked = 0

    init(unseal: RecordCodec.Unsealer? = nil) {
        self.unseal = unseal
    }
    private(set) var image = ProjectionImage.empty
    private(set) var findings: [VerificationFinding] = []
    private(set) var damaged: [Outbox.DamagedRecord] = []
    private(set) var recordsChecked = 0
    /// The seq of every readable event of each operation, legal or not: what a timeline of a
    /// folded journal lists.
    private(set) var eventSeqs: [OperationID: [JournalSequence]] = [:]
    private var damagedOperations: [OperationID: JournalSequence] = [:]
    private var gaps: [ClosedRange<UInt64>] = []
    private var compacted: [ClosedRange<UInt64>] = []
    /// Events the compactions say they removed, all told (a damaged count cannot overflow it).
    private var compactedRemoved: UInt64 = 0
    /// The trail of each record's server base: every confirmation, with its event (`nil` when a
    /// compaction kept it); and of each local record, its latest local write.
    private var baseTrail: [RecordKey: [(seq: JournalSequence?, confirmation: RecordConfirmation)]] = [:]
    /// Per business a resnapshot stages: the trail of the staged base, which replaces the
    /// business's trail at the swap.
    private var stagedTrail: [ExactString: [RecordKey: [(seq: JournalSequence?, confirmation: RecordConfirmation)]]] = [:]
    /// Per business a resnapshot stages: its type (`nil`: all) and the first page's position, so
    /// an answer the snapshot covers (``FeedStaging/covers(_:visibleAt:)``) stays out of its trail.
    private var stagings: [ExactString: (type: String?, position: FeedPosition)] = [:]
    private var localTrail: [RecordKey: (seq: JournalSequence, write: RecordWrite)] = [:]
    private var previousSeq = JournalSequence.zero

    /// Checks one record, in journal order.
    mutating func check(seq: JournalSequence, record: [UInt8]) {
        recordsChecked += 1
        // A bent key may jump to any seq: the arithmetic stays in UInt64 and never overflows.
        if seq.rawValue > previousSeq.rawValue, seq.rawValue - previousSeq.rawValue > 1 {
            gaps.append(previousSeq.rawValue + 1 ... seq.rawValue - 1)
        }
        previousSeq = seq
        let event: JournalEvent
        do {
            event = try RecordCodec.decode(record, seq: seq, unseal: unseal)
        } catch {
            noteDamage(Outbox.DamagedRecord(seq: seq, error: error, record: record))
            return
        }
        switch event.body {
        case .compacted(let compaction):
            compacted.append(compaction.firstSeq.rawValue ... max(compaction.firstSeq.rawValue, compaction.lastSeq.rawValue))
            compactedRemoved = Self.saturatingSum(compactedRemoved, UInt64(max(0, compaction.removedCount)))
            for operation in compaction.operations {
                for confirmation in operation.confirmations { trail(confirmation, seq: nil, visibleAt: nil) }
            }
        case .attemptFinished(let finished):
            // An answer that lands while a resnapshot stages goes to both bases, unless the
            // snapshot covers it.
            for confirmation in finished.confirmations { trail(confirmation, seq: seq, visibleAt: finished.visibleAt) }
        case .pageApplied(let page):
            for confirmation in page.confirmations { baseTrail[confirmation.key, default: []].append((seq, confirmation)) }
        case .resnapshotStarted(let started):
            stagedTrail[ExactString(started.business)] = [:]
            stagings[ExactString(started.business)] = (started.type, started.position)
        case .snapshotPageStaged(let page):
            for confirmation in page.confirmations { stagedTrail[ExactString(page.business)]?[confirmation.key, default: []].append((seq, confirmation)) }
        case .resnapshotFinished(let finished):
            // The staged base is the business's base now: its trail replaces the old one.
            // One type fetched again replaces that type's trail; the others were carried as they were.
            let business = ExactString(finished.business)
            func inScope(_ key: RecordKey) -> Bool {
                ExactString(key.business) == business && finished.type.map { ExactString(key.type) == ExactString($0) } ?? true
            }
            for key in baseTrail.keys where inScope(key) { baseTrail[key] = nil }
            for (key, trail) in stagedTrail[business] ?? [:] where inScope(key) { baseTrail[key] = trail }
            for confirmation in finished.vanished { baseTrail[confirmation.key, default: []].append((seq, confirmation)) }
            stagedTrail[business] = nil
            stagings[business] = nil
        case .resnapshotAbandoned(let abandoned):
            stagedTrail[ExactString(abandoned.business)] = nil
            stagings[ExactString(abandoned.business)] = nil
        case .recordsWritten(let written):
            for write in written.writes { localTrail[write.key] = (seq, write) }
        case .recordBaseDropped(let dropped):
            // The bases of that type were dropped: what the trail said of them before is spent.
            for key in baseTrail.keys where key.business.utf8.elementsEqual(dropped.business.utf8) && key.type.utf8.elementsEqual(dropped.type.utf8) {
                baseTrail[key] = nil
            }
        default:
            break
        }
        func trail(_ confirmation: RecordConfirmation, seq: JournalSequence?, visibleAt: FeedPosition?) {
            baseTrail[confirmation.key, default: []].append((seq, confirmation))
            let business = ExactString(confirmation.key.business)
            guard stagedTrail[business] != nil else { return }
            if let staging = stagings[business],
               FeedStaging.covers(confirmation.key, visibleAt: visibleAt, type: staging.type, position: staging.position) { return }
            stagedTrail[business]?[confirmation.key, default: []].append((seq, confirmation))
        }
        guard let id = event.operationID else {
            // Engine events fold without conditions.
            try? image.apply(event, recordSize: record.count)
            return
        }
        eventSeqs[id, default: []].append(seq)
        if case .enqueued(let enqueued) = event.body, enqueued.sealed != nil, unseal == nil {
            sealedUnchecked += 1
        } else if case .enqueued(let enqueued) = event.body, SHA256Digest(of: enqueued.request.payload) != enqueued.requestHash {
            findings.append(VerificationFinding(
                kind: .payloadHashMismatch, seq: seq, operationID: id,
                message: "the payload (\(enqueued.request.payload.count) bytes) hashes to "
                    + "\(SHA256Digest(of: enqueued.request.payload).hex), not to the recorded \(enqueued.requestHash.hex)"
            ))
        }
        if damagedOperations[id] != nil {
            try? image.apply(event, recordSize: record.count)
            return
        }
        if let problem = Self.problem(with: event, state: image.states[id]) {
            findings.append(VerificationFinding(kind: problem.kind, seq: seq, operationID: id, message: problem.message))
            return
        }
        do {
            try image.apply(event, recordSize: record.count)
        } catch {
            findings.append(VerificationFinding(kind: .illegalTransition, seq: seq, operationID: id, message: Self.reason(error)))
        }
    }

    private mutating func noteDamage(_ record: Outbox.DamagedRecord) {
        damaged.append(record)
        var message = "the record cannot be read: \(record.reason)"
        if let claimed = record.claimedOperationID {
            if damagedOperations[claimed] == nil { damagedOperations[claimed] = record.seq }
            message += "; its header names operation \(claimed), whose later events are not judged"
        }
        findings.append(VerificationFinding(kind: .damagedRecord, seq: record.seq, operationID: record.claimedOperationID,
                                            message: message))
    }

    /// What is wrong with `event` given the operation's state before it, in the invariants'
    /// words; `nil` when the invariants hold (the fold has the last word on the transition).
    static func problem(with event: JournalEvent, state: OperationState?)
        -> (kind: VerificationFinding.Kind, message: String)?
    {
        guard let state else {
            if event.kind == .enqueued { return nil }
            return (.missingEnqueue, "\(event.kind) for an operation that was never enqueued")
        }
        if event.kind == .enqueued {
            return (.duplicateEnqueue, "a second enqueued for an operation already enqueued at seq \(state.firstSeq)")
        }
        if state.status.isTerminal, event.kind != .rollbackAcknowledged {
            return (.eventAfterTerminal,
                    "\(event.kind) after the operation became \(state.status.rawValue) at seq \(state.latestSeq)")
        }
        let count = state.attemptCount
        switch event.body {
        case .attemptStarted(let started):
            if state.status == .syncing {
                return (.attemptNumbering, "attempt \(started.attempt) started while attempt \(count) has no outcome")
            }
            if started.attempt.rawValue != count + 1 {
                return (.attemptNumbering, "attempt \(started.attempt) started after \(count) attempt\(count == 1 ? "" : "s"); the next is \(count + 1)")
            }
        case .attemptFinished(let finished):
            if let problem = endProblem("an outcome", attempt: finished.attempt, state: state) { return (.attemptNumbering, problem) }
        case .attemptAbandoned(let abandoned):
            if let problem = endProblem("an abandonment", attempt: abandoned.attempt, state: state) { return (.attemptNumbering, problem) }
        default:
            break
        }
        return nil
    }

    /// The problem with an attempt's end (outcome or abandonment), if any.
    private static func endProblem(_ what: String, attempt: AttemptNumber, state: OperationState) -> String? {
        let count = state.attemptCount
        if attempt.rawValue > count { return "\(what) for attempt \(attempt), which never started (\(count) started)" }
        if attempt.rawValue < count { return "\(what) for attempt \(attempt), after attempt \(count) started" }
        if state.status != .syncing { return "a second end for attempt \(attempt): \(what) after it already had one" }
        return nil
    }

    /// The reason of a fold refusal, without the wrapping.
    private static func reason(_ error: OutboxError) -> String {
        if case .journalCorrupt(_, let reason) = error { return reason }
        return error.description
    }

    /// Finishes the checks that need the whole journal: gaps, and the projections compared with
    /// the rebuild when one was possible.
    mutating func finish(schema: JournalSchema, projectionsAreCurrent: Bool, txn: borrowing LMDBTransaction) throws
        -> VerificationReport
    {
        // Compactions' ranges, merged: a gap may span several chunks of one compaction.
        var covered: [ClosedRange<UInt64>] = []
        for range in compacted.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = covered.last, last.upperBound == .max || range.lowerBound <= last.upperBound + 1 {
                covered[covered.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                covered.append(range)
            }
        }
        // Counted in UInt64: a gap opened by a damaged key may hold more seqs than an Int counts.
        var missingInCompactions: UInt64 = 0
        for gap in gaps {
            let count = gap.upperBound - gap.lowerBound + 1
            if covered.contains(where: { $0.contains(gap.lowerBound) && $0.contains(gap.upperBound) }) {
                missingInCompactions = Self.saturatingSum(missingInCompactions, count)
                continue
            }
            let range = count == 1 ? "seq \(gap.lowerBound) is" : "seqs \(gap.lowerBound)...\(gap.upperBound) (\(count)) are"
            findings.append(VerificationFinding(kind: .sequenceGap, seq: JournalSequence(rawValue: gap.lowerBound),
                                                operationID: nil, message: "\(range) missing, and no compaction names them"))
        }
        if missingInCompactions != compactedRemoved {
            findings.append(VerificationFinding(
                kind: .sequenceGap, seq: nil, operationID: nil,
                message: "compactions say they removed \(compactedRemoved) events, but \(missingInCompactions) are missing from their ranges"
            ))
        }
        findings.sort { ($0.seq?.rawValue ?? .max) < ($1.seq?.rawValue ?? .max) }

        var note: String?
        if !projectionsAreCurrent {
            note = "the stored projections are of another layout than this engine's (\(JournalSchema.projectionVersion)); "
                + "the engine rebuilds them at its next open"
        } else if !damaged.isEmpty {
            note = "\(damaged.count) record\(damaged.count == 1 ? "" : "s") could not be read, "
                + "so the events cannot be folded faithfully to compare with"
        } else {
            for mismatch in try image.mismatches(withStoredIn: schema, txn: txn) {
                findings.append(VerificationFinding(
                    kind: .projectionMismatch, seq: nil,
                    operationID: mismatch.database == schema.storedOperations.name ? Self.operationID(hex: mismatch.key) : nil,
                    message: "\(mismatch.database) [\(mismatch.key)]: \(mismatch.problem)"
                ))
            }
        }
        try checkRecordStore(schema: schema, txn: txn)
        return VerificationReport(
            recordsChecked: recordsChecked,
            operationsChecked: image.states.count + damagedOperations.keys.filter { image.states[$0] == nil }.count,
            projectionsCompared: note == nil,
            projectionsNote: note,
            findings: findings,
            sealedPayloadsUnchecked: sealedUnchecked
        )
    }
}

extension JournalVerifier {
    /// The record store against its trail: each base equals its record's confirmation of the
    /// highest revision (the latest of them), brought by that event, its value hashing to the
    /// hash the trail names; each local record equals its latest local write.
    private mutating func checkRecordStore(schema: JournalSchema, txn: borrowing LMDBTransaction) throws {
        func mismatch(_ key: RecordKey, _ seq: JournalSequence?, _ message: String) {
            findings.append(VerificationFinding(kind: .recordTrailMismatch, seq: seq, operationID: nil, message: "record \(key): \(message)"))
        }
        var stored: [(RecordKey, RecordStoreEntry)] = []
        var rows: [ExactString: FeedRow?] = [:]
        for generation: UInt8 in [0, 1] {
            var keys: [(RecordKey, RecordStoreEntry)] = []
            try txn.scan(schema.baseTable(generation: generation)) { entry in
                keys.append((try entry.key(), try entry.value()))
                return .next
            }
            for (key, entry) in keys {
                let business = ExactString(key.business)
                if rows[business] == nil { rows[business] = .some(try schema.feedRow(business: key.business, in: txn)) }
                let row = rows[business] ?? nil
                if (row?.generation ?? 0) == generation {
                    stored.append((key, entry))
                } else if row?.staging == nil, row?.sweeping != true {
                    mismatch(key, entry.seq, "a base in generation \(generation), which its business neither shows, stages nor sweeps")
                }
            }
        }
        for (key, base) in stored {
            let trail = baseTrail[key] ?? []
            // The base holds the first confirmation of the highest revision: a later one at the
            // same revision (a pull bringing back the phone's own write, in the server's bytes)
            // never replaces it.
            let highest = trail.map(\.confirmation.revision).max()
            guard let latest = trail.filter({ $0.confirmation.revision == highest }).min(by: { ($0.seq?.rawValue ?? 0) < ($1.seq?.rawValue ?? 0) }) else {
                mismatch(key, base.seq, "its base (revision \(base.revision)) has no trail: no event names it")
                continue
            }
            if latest.confirmation.revision != base.revision || latest.confirmation.valueHash != base.valueHash {
                mismatch(key, latest.seq, "its base is revision \(base.revision) (\(base.valueHash?.hex.prefix(12) ?? "deleted")), "
                    + "the trail's latest is revision \(latest.confirmation.revision) (\(latest.confirmation.valueHash?.hex.prefix(12) ?? "deleted"))")
            } else if let seq = latest.seq, seq != base.seq, trail.filter({ $0.confirmation.revision == base.revision }).allSatisfy({ $0.seq != base.seq }) {
                mismatch(key, seq, "its base names seq \(base.seq) as the event that brought it; the trail's is seq \(seq)")
            }
            if let value = try schema.opened(base, table: .base, key: key)?.value, SHA256Digest(of: value) != base.valueHash {
                mismatch(key, base.seq, "its base's value does not hash to the hash stored with it")
            }
        }
        var locals: [(RecordKey, RecordStoreEntry)] = []
        try txn.scan(schema.localRecords) { entry in
            locals.append((try entry.key(), try entry.value()))
            return .next
        }
        for (key, local) in locals {
            guard let written = localTrail[key] else {
                mismatch(key, local.seq, "its local value has no trail: no local write names it")
                continue
            }
            if written.seq != local.seq || written.write.valueHash != local.valueHash {
                mismatch(key, written.seq, "its local value is not the one its latest local write (seq \(written.seq)) names")
            }
        }
    }

    /// `a + b`, or `UInt64.max` when it does not fit.
    fileprivate static func saturatingSum(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }

    /// Reads 32 hexadecimal digits: an id's bytes as projection mismatches print them.
    fileprivate static func operationID(hex: String) -> OperationID? {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return OperationID(bytes: bytes)
    }
}
