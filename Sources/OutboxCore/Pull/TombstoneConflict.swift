/// What a tombstone pulled for a record does to a write of it still waiting: the rule that turns
/// an edit of a record deleted elsewhere into a question for the member ("deleted on the
/// server"), its value kept, instead of sending it to a record that is gone or dropping it.
package enum TombstoneConflict {
    /// What the rule reads of a write of the record.
    package struct Write: Sendable, Equatable {
        package var status: OutboxStatus
        /// Whether its change to the record deletes it.
        package var deletes: Bool
        /// The seq of its `enqueued` event.
        package var firstSeq: JournalSequence
        /// Whether it is held on a rolled-back write (already waiting for the member).
        package var isHeld: Bool

        package init(status: OutboxStatus, deletes: Bool, firstSeq: JournalSequence, isHeld: Bool = false) {
            self.status = status
            self.deletes = deletes
            self.firstSeq = firstSeq
            self.isHeld = isHeld
        }
    }

    package enum Decision: Sendable, Equatable {
        /// The write becomes `conflicted`, deleted on the server, in the tombstone's commit.
        case conflict
        /// The write is on its way to the server: its answer settles it first, and the rule is
        /// asked again if it comes back queued.
        case afterItSettles
        /// Nothing changes for it.
        case unaffected
    }

    /// - Parameter tombstoneSeq: the seq of the event that brings the tombstone.
    package static func decision(for write: Write, tombstoneSeq: JournalSequence) -> Decision {
        // A delete agrees with the tombstone; a write made after the member could see the
        // deletion was made knowingly (a record created again).
        guard !write.deletes, write.firstSeq < tombstoneSeq, !write.isHeld else { return .unaffected }
        switch write.status {
        case .queued: return .conflict
        case .syncing: return .afterItSettles
        // The server holds it already (waiting for approval) or the member is deciding it; the
        // rest are settled or rolled back.
        case .pendingApproval, .conflicted, .failed, .blocked, .synced, .withdrawn, .discarded, .superseded: return .unaffected
        }
    }
}
