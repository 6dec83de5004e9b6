import Foundation
import Outbox
import OutboxAudit
import OutboxWire

/// One record as the audit folded it from the journal's events: the server base the
/// confirmations made, the writes that change it, and every value the journal can explain.
///
/// It is kept apart from the engine's record store and view: the simulation compares the two.
struct RecordTrail {
    /// What the server last confirmed, by a newer revision only.
    struct Base: Equatable {
        var revision: UInt64
        /// `nil`: deleted on the server.
        var valueHash: SHA256Digest?
        /// The event that brought it.
        var seq: JournalSequence
        var byOperation: OperationID?
    }

    var base: Base?
    /// A local-only record's value: `.some(nil)` once deleted.
    var local: SHA256Digest??
    /// Every write that changes the record, in the order enqueued.
    var writes: [OperationID] = []
    /// Every value the journal holds for it: those the member's writes put, those the server's
    /// answers brought, those written locally.
    var explained: Set<SHA256Digest> = []
    /// Those the server's answers brought.
    var fromServer: Set<SHA256Digest> = []
    /// Gone from the base at a resnapshot's swap (the snapshot did not hold it).
    var swappedOut = false
    /// Deleted at a swap at its old revision (the snapshot no longer held it and a pending write
    /// changes it): a tombstone of the engine's, not one the server sent.
    var vanished = false
    /// Vanished at a first pull's swap at revision 0: the engine could not tell the epoch of the
    /// base answers built (the answer that brought it named no position of the snapshot's epoch,
    /// or compaction took it), so the base may go back to 0 within the server's epoch.
    var vanishedUnplaced = false
    /// Brought by an answer older than the feed's cursor (its `Outbox-Visible-At` passed): what
    /// the server held before the changes the pulls since brought.


    mutating func wrote(_ change: RecordWrite, by id: OperationID) {
        writes.append(id)
        if let hash = change.valueHash { explained.insert(hash) }
    }

    mutating func writeLocally(_ write: RecordWrite) {
        local = .some(write.valueHash)
        if let hash = write.valueHash { explained.insert(hash) }
    }

    /// An answer's confirmation or a pulled change (`id` nil), read at `seq`: the base moves only
    /// to a newer revision.
    /// - Parameter stale: an answer whose feed position the cursor had passed already.
    mutating func confirm(_ confirmation: RecordConfirmation, seq: JournalSequence, by id: OperationID?, stale: Bool = false) {
        brought(confirmation.valueHash)
        if !stale, base.map({ confirmation.revision > $0.revision }) ?? true {
            base = Base(revision: confirmation.revision, valueHash: confirmation.valueHash, seq: seq, byOperation: id)
            swappedOut = false
            vanished = false
            vanishedUnplaced = false
        }
    }

    /// A value the server sent (an answer, a page, a snapshot).
    mutating func brought(_ hash: SHA256Digest?) {
        guard let hash else { return }
        explained.insert(hash)
        fromServer.insert(hash)
    }

    /// A resnapshot swapped in: the base is the staged one, whatever its revision (a new epoch's
    /// may be lower); `nil`: the snapshot did not hold the record, and it is gone from the base.
    mutating func swapped(to staged: Base?) {
        if base != nil, staged == nil { swappedOut = true }
        base = staged
        vanished = false
        vanishedUnplaced = false
    }
}

/// A record as the member must see it, in a shape both the engine's ``LocalRecord`` and the
/// audit's own reading of the journal give: values by their SHA-256.
///
/// The audit computes it from the events alone (`Docs/records.md`, the status-change table): the
/// base the confirmations made; then each write of the record in the member's order (its lane
/// place, then its `enqueued` seq): one queued, syncing, waiting for approval or conflicted shows
/// its change (one held on a rolled-back write shows nothing, and is listed as held); a synced one
/// whose answer did not describe the record shows its change, confirmed, until a base arrives
/// after it; a failed, blocked or discarded one says it was rolled back until the app
/// acknowledges it or a later change shows; a withdrawn or superseded one says nothing.
struct ExpectedRecord: Equatable, CustomStringConvertible {
    struct Pending: Equatable {
        var id: OperationID
        var status: OutboxStatus
        var deletes: Bool
    }

    struct Conflict: Equatable {
        var id: OperationID
        var revision: String?
        var valueHash: SHA256Digest?
    }

    struct RolledBack: Equatable {
        var id: OperationID
        var status: OutboxStatus
        var code: String
    }

    struct Base: Equatable {
        var revision: UInt64
        var valueHash: SHA256Digest?
        var seq: JournalSequence
    }

    var valueHash: SHA256Digest?
    var base: Base?
    var isLocalOnly: Bool
    var pending: [Pending] = []
    var confirmed: [OperationID] = []
    var conflict: Conflict?
    var rolledBack: RolledBack?
    var held: [OperationID] = []

    /// The writes whose change shows, by their value's hash (`nil` for a delete).
    var shownHashes: Set<SHA256Digest> = []

    /// The engine's record, in this shape; `nil` (the journal holds nothing of it) as an empty one.
    init(engine record: LocalRecord?, isLocalOnly: Bool) {
        self.isLocalOnly = record?.isLocalOnly ?? isLocalOnly
        guard let record else { return }
        valueHash = record.value.map { SHA256Digest(of: $0) }
        base = record.server.map { Base(revision: $0.revision, valueHash: $0.value.map { SHA256Digest(of: $0) }, seq: $0.seq) }
        pending = record.sync.pending.map { Pending(id: $0.operation, status: $0.status, deletes: $0.deletes) }
        confirmed = record.sync.confirmed
        conflict = record.sync.conflict.map { Conflict(id: $0.operation, revision: $0.serverRevision, valueHash: $0.serverValue.map { SHA256Digest(of: $0) }) }
        rolledBack = record.sync.rolledBack.map { RolledBack(id: $0.operation, status: $0.status, code: $0.code) }
        held = record.sync.held
    }

    /// The record as the events read so far make it.
    /// - Parameter feed: the cursor of the record's business feed; `nil` before its first page.
    init(_ key: RecordKey, trail: RecordTrail, rows: [OperationID: HistoryAudit.Row], isLocalOnly: Bool, feed: FeedPosition?) {
        self.isLocalOnly = isLocalOnly
        if isLocalOnly {
            valueHash = trail.local ?? nil
            return
        }
        base = trail.base.map { Base(revision: $0.revision, valueHash: $0.valueHash, seq: $0.seq) }
        valueHash = trail.base?.valueHash
        // A compacted write no longer shows: the engine let it go once nothing showed it.
        let writes = trail.writes.compactMap { rows[$0] }.filter { !$0.compacted }.sorted { $0.recordOrder < $1.recordOrder }
        for row in writes {
            guard let change = row.change(of: key) else { continue }
            func show() {
                valueHash = change.valueHash
                if let hash = change.valueHash { shownHashes.insert(hash) }
                rolledBack = nil
            }
            switch row.status {
            case .queued, .syncing, .pendingApproval, .conflicted:
                if row.heldOn != nil, row.status == .conflicted {
                    held.append(row.id)
                    continue
                }
                show()
                pending.append(Pending(id: row.id, status: row.status, deletes: change.isDelete))
                if row.status == .conflicted, let seen = row.conflictSeen {
                    // The server's value beside the member's: the base's once it reached the
                    // conflict's revision (a pull may bring it later), else the one the conflict saw.
                    let revision = seen.revision.flatMap(UInt64.init)
                    let fromBase = trail.base.flatMap { base in revision.map { base.revision >= $0 } ?? false ? base : nil }
                    conflict = Conflict(id: row.id, revision: seen.revision, valueHash: fromBase.map(\.valueHash) ?? seen.valueHash)
                }
            case .synced:
                if row.awaiting.contains(key), let synced = row.syncedSeq, !Self.isRetired(row, synced: synced, base: trail.base, feed: feed) {
                    show()
                    confirmed.append(row.id)
                }
            case .failed, .blocked, .discarded:
                if row.rolledBackSeq != nil, !row.rollbackAcknowledged {
                    rolledBack = RolledBack(id: row.id, status: row.status, code: row.rollbackCode ?? "refused")
                }
            case .withdrawn, .superseded:
                break
            }
        }
    }

    /// Whether a synced write's change stopped showing (`Docs/records.md`, "The pull"): before
    /// the business's first page, once a base arrived at or after its answer; after, once the
    /// feed's cursor reached the answer's position (at once when of an older epoch), or, for an
    /// answer without one, once a later base holds its revision.
    static func isRetired(_ row: HistoryAudit.Row, synced: JournalSequence, base: RecordTrail.Base?, feed: FeedPosition?) -> Bool {
        guard let feed else { return base.map { $0.seq >= synced } ?? false }
        if let visibleAt = row.visibleAt {
            return visibleAt.epoch == feed.epoch ? feed >= visibleAt : visibleAt.epoch < feed.epoch
        }
        guard let base, base.seq > synced else { return false }
        return row.answerRevision.map { base.revision >= $0 } ?? true
    }

    static func == (left: ExpectedRecord, right: ExpectedRecord) -> Bool {
        left.valueHash == right.valueHash && left.base == right.base && left.isLocalOnly == right.isLocalOnly
            && left.pending == right.pending && left.confirmed == right.confirmed && left.conflict == right.conflict
            && left.rolledBack == right.rolledBack && left.held == right.held
    }

    /// Where two readings differ, in words.
    func differences(from other: ExpectedRecord, label: (OperationID) -> String) -> [String] {
        var found: [String] = []
        func hash(_ value: SHA256Digest?) -> String { value.map { String($0.hex.prefix(8)) } ?? "none" }
        func base(_ value: Base?) -> String { value.map { "revision \($0.revision) \(hash($0.valueHash)) (seq \($0.seq))" } ?? "none" }
        if valueHash != other.valueHash { found.append("value \(hash(valueHash)) vs \(hash(other.valueHash))") }
        if self.base != other.base { found.append("base \(base(self.base)) vs \(base(other.base))") }
        if isLocalOnly != other.isLocalOnly { found.append("local-only \(isLocalOnly) vs \(other.isLocalOnly)") }
        func pendings(_ list: [Pending]) -> String { list.map { "\(label($0.id)) \($0.status)\($0.deletes ? " (delete)" : "")" }.joined(separator: ", ") }
        if pending != other.pending { found.append("pending [\(pendings(pending))] vs [\(pendings(other.pending))]") }
        if confirmed != other.confirmed { found.append("confirmed \(confirmed.map(label)) vs \(other.confirmed.map(label))") }
        func conflicts(_ value: Conflict?) -> String { value.map { "\(label($0.id)) at \($0.revision ?? "?") \(hash($0.valueHash))" } ?? "none" }
        if conflict != other.conflict { found.append("conflict \(conflicts(conflict)) vs \(conflicts(other.conflict))") }
        func rollbacks(_ value: RolledBack?) -> String { value.map { "\(label($0.id)) \($0.status) \($0.code)" } ?? "none" }
        if rolledBack != other.rolledBack { found.append("rolled back \(rollbacks(rolledBack)) vs \(rollbacks(other.rolledBack))") }
        if held != other.held { found.append("held \(held.map(label)) vs \(other.held.map(label))") }
        return found
    }

    var description: String { "value \(valueHash.map { String($0.hex.prefix(8)) } ?? "none")" }
}
