package import Foundation
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
        case .refuse(let refusal):
            try await journalRefusal(refusal, business: page.business, from: requested)
            return .refused(refusal)
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
            feedWrite: .move(business: page.business, expectFrom: requested, to: page.cursor)
        )], whenFull: .refuse)
        return .applied(applied)
    }

    /// Journals a page's refusal (`pageRefused`), so support sees what the server got wrong. It
    /// never takes the room writes need: with the journal full, the refusal is not journaled.
    func journalRefusal(_ refusal: PageRefusal, business: String, from: FeedPosition?) async throws {
        let refused = PageRefused(business: business, from: from, code: refusal.code, detail: refusal.description)
        do {
            _ = try await room.append([JournalStore.Draft(operationID: nil, body: .pageRefused(refused))], whenFull: .refuse)
        } catch OutboxError.storageFull {
            return
        }
    }

    /// The cursor of `business`'s change feed: where its next page starts; `nil` when it was
    /// never pulled.
    package func feedCursor(business: String) throws -> FeedPosition? {
        try ensureOpen()
        return try store.read { txn in try store.schema.feedRow(business: business, in: txn)?.cursor ?? nil }
    }
}

/// What pulling one business's feed did, page by page.
package struct FeedPullReport: Sendable, Equatable {
    package var business: String
    package var pagesApplied = 0
    package var changesApplied = 0
    /// Whether the last page applied reached the feed's end.
    package var reachedEnd = false
    /// Why it stopped before the end; `nil`: it reached the end.
    package var stoppedBy: FeedPullStop?
}

/// Why a pull stopped before the feed's end. Nothing of the page that stopped it was applied.
package enum FeedPullStop: Sendable, Equatable {
    /// No response (offline, timed out, cut off): the next pull asks for the same page again.
    case noResponse
    /// 401: the session needs refreshing, as for writes.
    case unauthorized
    /// 429 or 5xx: back off, until the server's `Retry-After` when it said one.
    case retryLater(status: Int, retryAfter: Date?)
    /// 409 `resnapshot_required`: the cursor means nothing to the server now.
    case resnapshotRequired(reason: String, epoch: UInt64?)
    /// The page came from another epoch of the server.
    case otherEpoch(UInt64)
    /// The page failed its check (``PageCheck``).
    case refused(PageRefusal)
    /// A body that is not a feed page, or another status: the server's words, as it said them.
    case invalidResponse(status: Int, problem: String)
    /// Another account signed in (or nobody) between the request and its answer: the page is
    /// dropped, never applied under an account it was not asked for.
    case sessionChanged
    /// The pages asked in one pull ran out before the end.
    case pageLimit
}

extension Outbox {
    /// Pulls `business`'s change feed from its cursor, page by page, each applied in its own
    /// commit (``apply(_:requested:limit:)``), until a page reaches the end or something stops
    /// it. The account is checked before each request and again before each page is applied.
    package func pullFeed(business: String, endpoint: String = FeedPage.path, limit: Int = 500, maxPages: Int = 1_000) async throws -> FeedPullReport {
        try ensureOpen()
        var report = FeedPullReport(business: business)
        for _ in 0..<maxPages {
            guard await configuration.session.currentAccount() == configuration.account else { return stopped(report, .sessionChanged) }
            let cursor = try feedCursor(business: business)
            let query = "?limit=\(limit)" + (cursor.map { "&cursor=\($0.text)" } ?? "")
            let request = TransportRequest(method: "GET", endpoint: endpoint + query, headers: [WireHeader.businessID: business], body: Data())
            let response: TransportResponse
            do {
                response = try await transport.send(request)
            } catch {
                return stopped(report, .noResponse)
            }
            switch response.statusCode {
            case 200:
                let page: FeedPage
                do {
                    page = try FeedPage.decoded(from: response.body)
                } catch {
                    try await journalRefusal(.malformed("\(error)"), business: business, from: cursor)
                    return stopped(report, .refused(.malformed("\(error)")))
                }
                guard await configuration.session.currentAccount() == configuration.account else { return stopped(report, .sessionChanged) }
                switch try await apply(page, requested: cursor, limit: limit) {
                case .applied(let applied):
                    report.pagesApplied += 1
                    report.changesApplied += applied.confirmations.count
                    report.reachedEnd = applied.reachedEnd
                    if applied.reachedEnd { return report }
                case .unchanged:
                    report.reachedEnd = true
                    return report
                case .resnapshot(let epoch):
                    return stopped(report, .otherEpoch(epoch))
                case .refused(let refusal):
                    return stopped(report, .refused(refusal))
                }
            case 401:
                return stopped(report, .unauthorized)
            case 409:
                let resnapshot = try? FeedResnapshot.decoded(from: response.body)
                return stopped(report, .resnapshotRequired(reason: resnapshot?.reason.rawValue ?? "unknown", epoch: resnapshot?.epoch))
            case 429, 500...599:
                let retryAfter = response.header(WireHeader.retryAfter).flatMap { RetryAfter.moment($0, now: configuration.clock.now()) }
                return stopped(report, .retryLater(status: response.statusCode, retryAfter: retryAfter))
            default:
                return stopped(report, .invalidResponse(status: response.statusCode, problem: String(decoding: response.body.prefix(512), as: UTF8.self)))
            }
        }
        return stopped(report, .pageLimit)
    }

    private func stopped(_ report: FeedPullReport, _ stop: FeedPullStop) -> FeedPullReport {
        var report = report
        report.reachedEnd = false
        report.stoppedBy = stop
        return report
    }
}
