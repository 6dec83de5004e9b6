
/// What a write's status change does to each record it changes: the records' status-change
/// table, in one place. The fold asks it whether a change rolls the write back and which records
/// wait for the server's value; the append path asks it which records' views may show the write
/// (`record-writes`) and whether an incoming server value moves the base; the view asks it how
/// the write stands over the record. `RecordStatusTableTests` walks every row through the engine.
///
/// | the write | over the record | the base | the record's sync state |
/// |---|---|---|---|
/// | queued, syncing, waiting for approval | its change applied | - | pending |
/// | conflicted (412, or deleted on the server) | its change applied, the server's value beside it | the 412's `current`, when newer | pending, conflict |
/// | conflicted, held on a rolled-back write | hidden | - | held |
/// | synced, its answer described the record at a revision | hidden: read from the base | that revision, when newer | synced |
/// | synced, the record not described, the server's value not back yet | its change applied | - | confirmed |
/// | synced, the server's value back since | hidden | - | synced |
/// | failed (a refusal, gave up, approval refused), blocked, discarded by a person | hidden | - | rolled back, until acknowledged or a later change |
/// | discarded keeping the server's version, withdrawn, superseded (revised, resolved, coalesced) | hidden (a replacement carries the change on) | - | - |
package enum RecordRule {
    /// How a write stands over one record it changes.
    package enum Overlay: Sendable, Equatable {
        /// Its change shows, waiting to be sent or decided.
        case pending
        /// Its change shows; the server holds another revision, shown beside it.
        case conflicted
        /// Hidden: built on a write that was rolled back; a person decides.
        case held
        /// Its change shows, synced, until the server's own value is back.
        case confirmed
        /// Hidden; the record says it was rolled back.
        case rolledBack
        /// Hidden, and the record says nothing of it.
        case gone
    }

    /// The write's standing over a record.
    /// - Parameters:
    ///   - held: built on a rolled-back write (``OperationState/heldOn``).
    ///   - rolledBack: rolled back and not acknowledged (``OperationState/rolledBackSeq``).
    ///   - retired: for a synced write, the server's value is back for the record
    ///     (``OverlayRetirement``, or described by its answer).
    package static func overlay(status: OutboxStatus, held: Bool, rolledBack: Bool, retired: Bool) -> Overlay {
        switch status {
        case .queued, .syncing, .pendingApproval: held ? .held : .pending
        case .conflicted: held ? .held : .conflicted
        case .synced: retired ? .gone : .confirmed
        case .failed, .blocked, .discarded: rolledBack ? .rolledBack : .gone
        case .withdrawn, .superseded: .gone
        }
    }

    /// Whether a write that changes records is rolled back by moving from `before` to `after`:
    /// entering failed, blocked, discarded or withdrawn.
    package static func rollsBack(from before: OutboxStatus?, to after: OutboxStatus) -> Bool {
        !(before.map(isRolledBackStatus) ?? false) && isRolledBackStatus(after)
    }

    /// The statuses a write's change is rolled back in.
    package static func isRolledBackStatus(_ status: OutboxStatus) -> Bool {
        status == .failed || status == .blocked || status == .discarded || status == .withdrawn
    }

    /// The records of a synced write that wait for the server's value: those its answer did not
    /// describe (read your writes: a described one's base holds the answer's revision from the
    /// outcome's commit on, and never moves back).
    package static func awaitingServerValue(records: [RecordKey], described: Set<RecordKey>) -> [RecordKey] {
        records.filter { !described.contains($0) }
    }

    /// The records whose view may show a write (the `record-writes` index): every record of a
    /// write not yet settled (failed and blocked ones included: a retry shows them again); a
    /// synced write's records still awaiting the server's value; a discarded write's until its
    /// rollback is acknowledged. None for a write withdrawn or superseded.
    package static func shownRecords(status: OutboxStatus, records: [RecordKey], awaiting: [RecordKey], rolledBack: Bool) -> [RecordKey] {
        switch status {
        case .queued, .syncing, .pendingApproval, .conflicted, .failed, .blocked: records
        case .synced: awaiting
        case .discarded: rolledBack ? records : []
        case .withdrawn, .superseded: []
        }
    }

    /// Whether a server value at `incoming` replaces the base at `current` (`nil`: none): only a
    /// newer revision, so a base never moves back within an epoch.
    package static func baseTakes(incoming: UInt64, over current: UInt64?) -> Bool {
        current.map { incoming > $0 } ?? true
    }
}
