import Foundation
package import OutboxCore
import OutboxCrypto
package import OutboxWire

/// What applying one page of a change feed did.
package enum PageOutcome: Sendable, Equatable {
    /// Its changes and its cursor landed in one commit (this event).
    case applied(PageApplied)
    /// An empty page at the cursor the feed already had: nothing to write.
    case unchanged
    /// The page is of another epoch of the server: the base must be fetched again whole.
    case resnapshot(epoch: UInt64)
    /// The page was refused before anything of it was written.
    case refused(PageRefusal)
}

extension Outbox {
    /// Applies one page of `page.business`'s change feed, asked from `requested` (`nil`: the
    /// feed's start, for a feed never pulled): checked whole first (``PageCheck``), then its
    /// changes go to the server base (each only over an older revision), a tombstone turns every
    /// write of its record still waiting `conflicted`, and the feed's cursor moves, all in one
    /// commit with the `pageApplied` event. Nothing is enqueued. A record of a local-only type is
    /// passed over (counted in the event): the server never holds one.
    ///
    /// - Throws: ``OutboxError/feedMoved(business:pageFrom:stored:)`` when the journal's cursor
    ///   is not `requested` (another pull moved it); ``OutboxError/storageFull(limitBytes:errno:)``
    ///   (a page never takes the room writes need).
    package func apply(_ page: FeedPage, requested: FeedPosition?, limit: Int) async throws -> PageOutcome {
        try ensureOpen()
        let request = PageCheck.Request(business: page.business, cursor: requested ?? .start(of: page.from.epoch), limit: limit)
        switch PageCheck.verdict(page, for: request) {
        case .refuse(let refusal): return .refused(refusal)
        case .resnapshot(let epoch): return .resnapshot(epoch: epoch)
        case .apply: break
        }
        if page.changes.isEmpty, page.cursor == request.cursor { return .unchanged }

        var writes: [RecordStoreWrite] = []
        var confirmations: [RecordConfirmation] = []
        var skipped = 0
        for change in page.changes {
            let key = RecordKey(business: page.business, type: change.type, id: change.id)
            let policy = configuration.recordPolicy(for: change.type)
            guard !policy.isLocalOnly, key.problem == nil else {
                skipped += 1
                continue
            }
            writes.append(RecordStoreWrite(table: .base, key: key, revision: change.revision, schemaVersion: policy.schemaVersion, value: change.record))
            confirmations.append(RecordConfirmation(key: key, revision: change.revision, valueHash: change.record.map { SHA256Digest(of: $0) },
                                                    source: .pulled))
        }
        let applied = PageApplied(business: page.business, from: page.from, to: page.cursor, reachedEnd: !page.hasMore,
                                  digest: page.digest, confirmations: confirmations, skipped: skipped)
        try await room.ensureRoom(forPayloadBytes: writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
        _ = try await room.append([JournalStore.Draft(
            operationID: nil, body: .pageApplied(applied), storeWrites: writes,
            feedWrite: FeedRowWrite(business: page.business, expectFrom: requested, to: page.cursor)
        )], whenFull: .refuse)
        return .applied(applied)
    }

    /// The cursor of `business`'s change feed: where its next page starts; `nil` when it was
    /// never pulled.
    package func feedCursor(business: String) throws -> FeedPosition? {
        try ensureOpen()
        return try store.read { txn in try store.schema.feedRow(business: business, in: txn)?.cursor }
    }
}
