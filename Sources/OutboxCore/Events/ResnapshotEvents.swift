import Foundation
package import OutboxCrypto
package import OutboxWire

// The events of a resnapshot (format 4): a business's server base fetched again whole, when its
// feed's cursor means nothing to the server any more (409 `resnapshot_required`, another epoch).
// The snapshot is staged beside the base the member sees, page by page, and swapped in by one
// commit; every pending write and its overlay survive it.

/// A resnapshot began: the snapshot's first page was read at `position`, from which the feed is
/// pulled once the snapshot is swapped in.
package struct ResnapshotStarted: Sendable, Equatable {
    package var business: String
    /// The one type fetched again (after its summary did not match); `nil`: every type.
    package var type: String?
    /// Why: the 409's `reason` (`expired`, `unknown`, `foreign_epoch`, `ahead`), or
    /// `other_epoch` for a page of another epoch, `summary_mismatch` for a type whose summary did
    /// not match.
    package var reason: String
    /// The cursor the feed had; `nil`: never pulled.
    package var from: FeedPosition?
    /// The first snapshot page's position.
    package var position: FeedPosition

    package init(business: String, type: String? = nil, reason: String, from: FeedPosition?, position: FeedPosition) {
        self.business = business
        self.type = type
        self.reason = reason
        self.from = from
        self.position = position
    }
}

/// A page of the snapshot staged beside the base the member sees: each record's revision and value
/// hash (source `snapshot`), the values in the staged base.
package struct SnapshotPageStaged: Sendable, Equatable {
    package var business: String
    /// The page's number in its resnapshot, from 1.
    package var page: Int
    /// The position the server read the page at.
    package var position: FeedPosition
    /// The digest it carried, checked before anything was written.
    package var digest: SHA256Digest
    package var confirmations: [RecordConfirmation]
    /// Records passed over, each named with why.
    package var skipped: [SkippedChange]
    /// Whether it was the last page.
    package var reachedEnd: Bool

    package init(business: String, page: Int, position: FeedPosition, digest: SHA256Digest, confirmations: [RecordConfirmation],
                skipped: [SkippedChange], reachedEnd: Bool) {
        self.business = business
        self.page = page
        self.position = position
        self.digest = digest
        self.confirmations = confirmations
        self.skipped = skipped
        self.reachedEnd = reachedEnd
    }
}

/// The staged snapshot swapped in, in this event's commit: the member sees it from now on, and the
/// feed's cursor is the first page's position.
package struct ResnapshotFinished: Sendable, Equatable {
    package var business: String
    /// The one type fetched again; `nil`: every type.
    package var type: String?
    package var cursor: FeedPosition
    /// Records staged, over all pages.
    package var staged: Int
    /// Records a pending write changes that the old base held and the snapshot does not: deleted
    /// in the new base at their old revision (source `snapshot`, no value hash), so the writes
    /// waiting on them are asked about (``DeletedOnServer``) instead of vanishing.
    package var vanished: [RecordConfirmation]

    package init(business: String, type: String? = nil, cursor: FeedPosition, staged: Int, vanished: [RecordConfirmation]) {
        self.business = business
        self.type = type
        self.cursor = cursor
        self.staged = staged
        self.vanished = vanished
    }
}

/// A staged snapshot given up before its swap (the server moved to another epoch meanwhile): the
/// member's base is untouched, the staged records are swept, and a new resnapshot starts.
package struct ResnapshotAbandoned: Sendable, Equatable {
    package var business: String
    package var code: String
    package var detail: String

    package init(business: String, code: String, detail: String) {
        self.business = business
        self.code = code
        self.detail = detail
    }
}

/// The server's summary of one type (a count and a digest over ids and revisions, never values)
/// compared with the base at the same position: the invariant check that finds a base gone wrong
/// silently. A mismatch starts a resync of that type (``ResnapshotStarted``), never a repair in
/// place; a comparison that could not be made at the same position says so.
package struct SummaryChecked: Sendable, Equatable {
    package var business: String
    package var type: String
    /// The position the server took its summary at (and the feed's cursor when compared).
    package var position: FeedPosition
    package var serverCount: Int
    package var serverDigest: SHA256Digest
    /// The base's live records of the type at that position; `nil` when inconclusive.
    package var localCount: Int?
    package var localDigest: SHA256Digest?
    package var verdict: Verdict

    package enum Verdict: UInt8, Sendable, Equatable, CaseIterable {
        case matched = 1
        case mismatched = 2
        /// Not compared: the feed did not stop at the summary's position, or an answer changed
        /// the type's base after it.
        case inconclusive = 3
    }

    package init(business: String, type: String, position: FeedPosition, serverCount: Int, serverDigest: SHA256Digest,
                localCount: Int?, localDigest: SHA256Digest?, verdict: Verdict) {
        self.business = business
        self.type = type
        self.position = position
        self.serverCount = serverCount
        self.serverDigest = serverDigest
        self.localCount = localCount
        self.localDigest = localDigest
        self.verdict = verdict
    }
}
