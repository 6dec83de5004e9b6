package import OutboxWire

/// When a synced write's change stops showing over a record's base: the rule that lets a saved
/// edit stay on screen until the server's own value has come back for it, so it never vanishes
/// and returns (a "flicker"). A pure function of the write's answer, the base and the feed.
///
/// | the record's business pulled | the answer's position (`Outbox-Visible-At`) | the change retires when |
/// |---|---|---|
/// | no | - | a base learnt at or after the answer (the answer's own record counts) |
/// | yes | in the feed's epoch | the feed's cursor is at or past the position |
/// | yes | of an older epoch | at once: the new epoch's snapshot is the server's truth |
/// | yes | of a newer epoch (answered while the base was fetched again) | when the feed reaches that epoch |
/// | yes | none (a claim stored before positions) | a base brought after the answer (by a pull, or a later write's answer) at the answer's revision or later (any such base when the answer had none) |
package enum OverlayRetirement {
    /// What the rule reads of a synced write.
    package struct Answer: Sendable, Equatable {
        /// The seq of the event that settled it.
        package var seq: JournalSequence
        /// Where its change is visible in the feed, as the answer said.
        package var visibleAt: FeedPosition?
        /// The record's revision the answer gave.
        package var revision: UInt64?

        package init(seq: JournalSequence, visibleAt: FeedPosition?, revision: UInt64?) {
            self.seq = seq
            self.visibleAt = visibleAt
            self.revision = revision
        }
    }

    /// What the rule reads of the record's base.
    package struct Base: Sendable, Equatable {
        /// The event that brought it.
        package var seq: JournalSequence
        package var revision: UInt64

        package init(seq: JournalSequence, revision: UInt64) {
            self.seq = seq
            self.revision = revision
        }
    }

    /// - Parameter feed: the cursor of the record's business feed; `nil` when it is not pulled.
    package static func isRetired(_ answer: Answer, base: Base?, feed: FeedPosition?) -> Bool {
        guard let feed else { return base.map { $0.seq >= answer.seq } ?? false }
        if let visibleAt = answer.visibleAt {
            if visibleAt.epoch < feed.epoch { return true }
            if visibleAt.epoch > feed.epoch { return false }
            return feed >= visibleAt
        }
        guard let base, base.seq > answer.seq else { return false }
        return answer.revision.map { base.revision >= $0 } ?? true
    }
}
