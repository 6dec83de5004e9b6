import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import OutboxWire

/// A business's base fetched again whole, when its feed's cursor means nothing to the server any
/// more (409 `resnapshot_required`, a page of another epoch): the snapshot's pages are staged in
/// the base generation the member does not see, each page its own small commit (memory stays
/// bounded), while the member keeps seeing the old base; one commit then swaps them in with the
/// first page's position as the feed's cursor. Answers that land meanwhile go to both
/// generations, so the swap never takes a record back behind one; every pending write and
/// overlay survives (they live in the journal, not in the base); a record a pending write changes
/// that the old base held and the snapshot does not is deleted at the swap, and the writes waiting
/// on it turn `conflicted` (`deleted_on_server`).
///
/// Interrupted (no response, a kill), the next pull **resumes** after the last staged record with
/// the same first position: every staged page is durable with where it ended, and the snapshot
/// endpoint is stateless. It **restarts** when the server answers from another epoch than the
/// staging's (`resnapshotAbandoned`, the staged records swept first).
extension FeedPuller {
    /// What a resnapshot did.
    struct Resnapshot: Sendable, Equatable {
        var pagesStaged = 0
        var recordsStaged = 0
        var skipped = 0
        /// Whether the staged snapshot was swapped in (``ResnapshotFinished``).
        var swapped = false
        /// Records a pending write changes that the snapshot no longer held, deleted at the swap.
        var vanished = 0
        /// Stagings given up because the server changed epochs under them.
        var abandoned = 0
        var refused = 0
        var retryAfter: Date?
        /// Why it stopped before the swap; `nil` when it swapped.
        var stoppedBy: Outbox.PullStop?
    }

    /// Stages `business`'s snapshot from where its staging stands (or from the start) and swaps it
    /// in, at most `maxPages` pages.
    /// - Parameter reason: why (`expired`, `unknown`, `foreign_epoch`, `ahead`), journaled in
    ///   `resnapshotStarted` when the staging starts.
    /// - Parameter type: the one type to fetch again (its summary did not match): the other
    ///   types' bases are carried over into the staged generation before the swap, and the feed's
    ///   cursor stays. `nil`: every type, and the cursor becomes the snapshot's position.
    /// - Parameter interruption: asked after each staged page; only a drain's budget or the
    ///   expiry stops the staging there (the staged pages stay, and the next pull goes on from them).
    func resnapshot(business: String, type: String? = nil, reason: String, settings: PullConfiguration, limits: FeedLimits?,
                    maxPages: Int, interruption: () -> Outbox.PullStop? = { nil }) async -> Resnapshot {
        var done = Resnapshot()
        func stop(_ reason: Outbox.PullStop) -> Resnapshot {
            done.stoppedBy = reason
            return done
        }
        do {
            try await sweep(business: business)
        } catch {
            log.problem(.factNotRecorded, "could not sweep a swapped-out base; the next pull sweeps it", error: error)
            return stop(.journalError("\(error)"))
        }
        var pagesLeft = maxPages
        while pagesLeft > 0 {
            if let changed = await accountChanged() { return stop(changed) }
            let row: FeedRow?
            do {
                row = try store.read { txn in try store.schema.feedRow(business: business, in: txn) }
            } catch {
                return stop(.journalError("\(error)"))
            }
            let staging = row?.staging
            let limit = settings.limit(servedBy: limits)
            let type = staging.map { $0.type } ?? type
            var query = "?limit=\(limit)" + (type.map { "&type=\(Self.queryEscaped($0))" } ?? "")
            if let staging, !staging.afterType.isEmpty {
                query += "&after_type=\(Self.queryEscaped(staging.afterType))&after_id=\(Self.queryEscaped(staging.afterID))"
            }
            let request = TransportRequest(method: "GET", endpoint: settings.snapshotEndpoint + query, headers: [WireHeader.businessID: business], body: Data())
            let response: TransportResponse
            do {
                response = try await send(request)
            } catch {
                return stop(Self.noResponse(error))
            }
            guard response.statusCode == 200 else {
                let (stopped, retryAfter) = await refusal(response, business: business)
                done.retryAfter = retryAfter
                return stop(stopped)
            }
            let page: SnapshotPage
            do {
                page = try SnapshotPage.decoded(from: response.body)
            } catch {
                let refusal = PageRefusal.malformed("\(error)")
                await journalRefusal(refusal, business: business, from: row?.cursor)
                done.refused += 1
                return stop(.refused(refusal))
            }
            if let changed = await accountChanged() { return stop(changed) }
            let check = PageCheck.SnapshotRequest(business: business, type: type, since: staging?.position,
                                                  after: staging.flatMap { $0.afterType.isEmpty ? nil : ($0.afterType, $0.afterID) }, limit: limit)
            let digests = page.records.map(\.digestInput)
            do {
                switch PageCheck.verdict(page, for: check, digests: digests) {
                case .refuse(let refusal):
                    await journalRefusal(refusal, business: business, from: row?.cursor)
                    done.refused += 1
                    return stop(.refused(refusal))
                case .resnapshot(let epoch):
                    // The server changed lives under the staging: what was staged is of the old one.
                    try await abandonStaging(business: business, row: row,
                                             detail: "the server answered from epoch \(epoch); the staging began in epoch \(staging?.position.epoch ?? 0)")
                    done.abandoned += 1
                    continue
                case .apply: break
                }
                let (staged, skipped) = try await stage(page, digests: digests, type: type, number: (staging?.pages ?? 0) + 1, reason: reason, row: row)
                pagesLeft -= 1
                done.pagesStaged += 1
                done.recordsStaged += staged
                done.skipped += skipped
                if page.hasMore {
                    if let interrupted = interruption(), DrainBudget.Stop(interrupted) != nil { return stop(interrupted) }
                    continue
                }
                if type != nil { try await carry(business: business) }
                done.vanished = try await swap(business: business)
                done.swapped = true
                try await sweep(business: business)
                return done
            } catch OutboxError.storageFull {
                return stop(.storageFull)
            } catch {
                log.problem(.factNotRecorded, "could not stage a snapshot page; the next pull goes on from the last one staged", error: error)
                return stop(.journalError("\(error)"))
            }
        }
        return stop(.pageLimit)
    }

    /// Stages one snapshot page in its own commit: its records in the generation the member does
    /// not see, and the staging's progress in the feed row; the first page also journals the
    /// resnapshot's start.
    /// - Returns: the records staged and those passed over.
    private func stage(_ page: SnapshotPage, digests: [FeedDigest.Change], type: String?, number: Int, reason: String,
                       row: FeedRow?) async throws -> (Int, Int) {
        // A snapshot holds live records only: a record without a value is passed over as taken.
        let (writes, confirmations, skipped) = taken(page.records.filter { $0.record != nil }, digests: digests.filter { $0.recordHash != nil },
                                                     business: page.business, source: .snapshot)
        var next = row ?? FeedRow(cursor: nil, pageSeq: .zero)
        var staging = next.staging ?? FeedStaging(type: type, position: page.position, afterType: "", afterID: "", pages: 0, staged: 0, startedSeq: .zero)
        if let last = page.records.last {
            staging.afterType = last.type
            staging.afterID = last.id
        }
        staging.pages = number
        staging.staged += writes.count
        next.staging = staging
        var pageDraft = JournalStore.Draft(
            operationID: nil,
            body: .snapshotPageStaged(SnapshotPageStaged(business: page.business, page: number, position: page.position, digest: page.digest,
                                                         confirmations: confirmations, skipped: skipped, reachedEnd: !page.hasMore)),
            stagedWrites: writes
        )
        var unit: [JournalStore.Draft]
        if row?.staging == nil {
            // The start: the staging's row lands with it, its started seq this event's.
            unit = [JournalStore.Draft(operationID: nil,
                                       body: .resnapshotStarted(ResnapshotStarted(business: page.business, type: type, reason: reason, from: row?.cursor ?? nil,
                                                                                  position: page.position)),
                                       feedWrite: .replace(business: page.business, expect: row, row: next)), pageDraft]
        } else {
            pageDraft.feedWrite = .replace(business: page.business, expect: row, row: next)
            unit = [pageDraft]
        }
        _ = try await room.appendMakingRoom(unit, payloadBytes: writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
        return (writes.count, skipped.count)
    }

    /// The swap, one commit: the staged generation becomes the member's, the feed's cursor the
    /// first page's position; what vanished from under a pending write is settled in the same
    /// commit (the append completes the event).
    /// - Returns: the records that vanished.
    private func swap(business: String) async throws -> Int {
        guard let row = try store.read({ txn in try store.schema.feedRow(business: business, in: txn) }), let staging = row.staging else { return 0 }
        var next = row
        // One type fetched again keeps the feed's cursor: the feed from there repeats what the
        // type's snapshot holds already (the newest revision wins) and misses nothing of the others.
        let cursor = staging.type == nil ? staging.position : row.cursor ?? staging.position
        next.cursor = cursor
        next.generation = row.otherGeneration
        next.staging = nil
        next.sweeping = true
        next.resync.removeAll { type in staging.type.map { ExactString($0) == ExactString(type) } ?? true }
        let events = try await room.append([JournalStore.Draft(
            operationID: nil,
            body: .resnapshotFinished(ResnapshotFinished(business: business, type: staging.type, cursor: cursor, staged: staging.staged, vanished: [])),
            feedWrite: .replace(business: business, expect: row, row: next)
        )])
        for event in events {
            if case .resnapshotFinished(let finished) = event.body { return finished.vanished.count }
        }
        return 0
    }

    /// Gives a staging up: journaled, the member's base untouched, the staged records swept.
    private func abandonStaging(business: String, row: FeedRow?, detail: String) async throws {
        guard let row, row.staging != nil else { return }
        var next = row
        next.staging = nil
        next.sweeping = true
        _ = try await room.append([JournalStore.Draft(
            operationID: nil, body: .resnapshotAbandoned(ResnapshotAbandoned(business: business, code: "epoch_changed", detail: detail)),
            feedWrite: .replace(business: business, expect: row, row: next)
        )])
        try await sweep(business: business)
    }

    /// Deletes what the generation the member does not see holds of `business` (a swapped-out
    /// base, an abandoned staging), a batch per commit and no event: those rows are unreachable.
    func sweep(business: String) async throws {
        while try await room.writer.perform({ store, _ in
            (try store.environment.write { txn in try store.schema.sweepStep(business: business, limit: Self.sweepBatch, in: txn) }, [])
        }) {}
    }

    /// For one type fetched again: copies the other types' bases into the staged generation, a
    /// batch per commit and no event (the copies are the same entries, their trail unchanged),
    /// so the swap leaves them as they were.
    private func carry(business: String) async throws {
        while try await room.writer.perform({ store, _ in
            (try store.environment.write { txn in try store.schema.carryStep(business: business, limit: Self.sweepBatch, in: txn) }, [])
        }) {}
    }

    /// Rows deleted (or carried) per commit.
    static let sweepBatch = 1_000

    /// A query value percent-encoded: everything but unreserved characters.
    static func queryEscaped(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? value
    }
}

extension JournalSchema {
    /// One carry step of a type's resnapshot: at most `limit` bases of the business's other
    /// types copied from the generation the member sees into the staged one (where an answer
    /// landed meanwhile, the newer revision stays), and the staging's progress written.
    /// - Returns: whether more may be left.
    func carryStep(business: String, limit: Int, in txn: borrowing LMDBTransaction) throws -> Bool {
        guard var row = try feedRow(business: business, in: txn), var staging = row.staging, let type = staging.type, !staging.carried else { return false }
        let from = baseTable(generation: row.generation)
        let into = baseTable(generation: row.otherGeneration)
        let typeScope = RecordKey.scopeBytes(business: business, type: type)
        var copied: [(RecordKey, RecordStoreEntry)] = []
        var last = staging.carriedThrough
        var more = false
        try txn.scan(from, leading: RecordKey.businessScopeBytes(business), from: last.isEmpty ? nil : last + [0]) { entry in
            let keyBytes = Array(entry.keyBytes)
            guard keyBytes != last else { return .next }
            if copied.count >= limit {
                more = true
                return .stop
            }
            last = keyBytes
            if !keyBytes.starts(with: typeScope) { copied.append((try entry.key(), try entry.value())) }
            return .next
        }
        for (key, entry) in copied {
            if let staged = try txn.get(into, key), staged.revision >= entry.revision { continue }
            try txn.put(into, key, entry)
        }
        staging.carriedThrough = last
        staging.carried = !more
        row.staging = staging
        try txn.put(feeds, business, row)
        return more
    }

    /// One sweep step of `business`'s hidden generation: at most `limit` rows deleted, and the
    /// feed row's `sweeping` cleared once none is left.
    /// - Returns: whether more may be left.
    func sweepStep(business: String, limit: Int, in txn: borrowing LMDBTransaction) throws -> Bool {
        guard var row = try feedRow(business: business, in: txn), row.sweeping, row.staging == nil else { return false }
        let table = baseTable(generation: row.otherGeneration)
        var keys: [[UInt8]] = []
        try txn.scan(table, leading: RecordKey.businessScopeBytes(business)) { entry in
            keys.append(Array(entry.keyBytes))
            return keys.count < limit ? .next : .stop
        }
        for key in keys { try txn.delete(table, encodedKey: key) }
        guard keys.count < limit else { return true }
        row.sweeping = false
        try txn.put(feeds, business, row)
        return false
    }
}
