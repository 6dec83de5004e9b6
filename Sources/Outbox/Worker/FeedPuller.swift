import Foundation
import OutboxCore
import OutboxCrypto
import OutboxWire

/// One business's change feed pulled page by page: each page asked from the journal's cursor,
/// checked (``PageCheck``) and applied in its own commit, until a page reaches the end or
/// something stops it. The account is checked before each request and again before each page
/// is applied. When to pull, and what a stop does to the feed's schedule, is ``PullStage``'s.
final class FeedPuller: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let transport: any OutboxTransport
    let configuration: OutboxConfiguration
    let sessions: SessionRecorder
    let log: EngineLog

    /// Whether a route to the server is seen: each page's request shown to it.
    let routes: RouteWatch

    init(store: JournalStore, room: JournalRoom, transport: any OutboxTransport, configuration: OutboxConfiguration,
         sessions: SessionRecorder, routes: RouteWatch, log: EngineLog) {
        self.routes = routes
        self.store = store
        self.room = room
        self.transport = transport
        self.configuration = configuration
        self.sessions = sessions
        self.log = log
    }

    /// What one feed's pull came to, beside its report: what the schedule learns from it.
    struct Pulled: Sendable {
        var report: Outbox.FeedReport
        /// The server's `Retry-After` (429, 5xx), when it said one.
        var retryAfter: Date?
        /// The limits the last page published.
        var limits: FeedLimits?
        /// Pages refused (journaled) on the way.
        var refused = 0
        /// Whether a page reached the `until` the pull was asked to stop at.
        var reachedUntil = false
    }

    /// Pulls `business`'s feed from its cursor, at most `maxPages` pages, asking `interruption`
    /// after each page whether to stop there (a write waits, the worker stopped).
    /// - Parameter until: stop at this position (the summary check's): the page that reaches it
    ///   ends the pull, ``Pulled/reachedUntil`` set.
    /// - Parameter landed: told of each page applied: its changes and the bytes of its answer.
    func pull(business: String, settings: PullConfiguration, limits: FeedLimits?, maxPages: Int, until: FeedPosition? = nil,
              interruption: () -> Outbox.PullStop?, landed: (_ changes: Int, _ bytes: Int) -> Void = { _, _ in }) async -> Pulled {
        var pulled = Pulled(report: Outbox.FeedReport(business: business), limits: limits)
        func stop(_ reason: Outbox.PullStop) -> Pulled {
            pulled.report.reachedEnd = false
            pulled.report.stoppedBy = reason
            return pulled
        }
        var pagesLeft = maxPages
        /// Fetches the base again whole; `nil` once swapped in (the feed goes on from its cursor).
        func resnapshot(_ reason: String, type: String? = nil) async -> Outbox.PullStop? {
            log.log(.notice, "a feed is fetched again whole; it keeps its base until the swap", [EngineLog.Key.reason: .string(reason)])
            let done = await self.resnapshot(business: business, type: type, reason: reason, settings: settings, limits: pulled.limits,
                                             maxPages: pagesLeft, interruption: interruption)
            pagesLeft -= done.pagesStaged
            pulled.report.pagesStaged += done.pagesStaged
            pulled.report.recordsStaged += done.recordsStaged
            pulled.report.skipped += done.skipped
            pulled.refused += done.refused
            pulled.retryAfter = done.retryAfter ?? pulled.retryAfter
            if done.swapped { pulled.report.resnapshots += 1 }
            return done.stoppedBy
        }
        while pagesLeft > 0 {
            if let changed = await accountChanged() { return stop(changed) }
            let row: FeedRow?
            do {
                row = try store.read { txn in try store.schema.feedRow(business: business, in: txn) }
            } catch {
                log.problem(.journalRead, "could not read a feed's cursor; the feed is pulled again later", error: error)
                return stop(.journalError("\(error)"))
            }
            if row?.staging != nil {
                // A resnapshot a kill or a lost connection interrupted: it goes on first.
                if let stopped = await resnapshot("resumed") { return stop(stopped) }
                continue
            }
            let holdsBase: Bool
            do {
                holdsBase = try row?.cursor == nil && store.read { txn in try store.schema.holdsBase(business: business, in: txn) }
            } catch {
                log.problem(.journalRead, "could not read whether a feed's base is held; the feed is pulled again later", error: error)
                return stop(.journalError("\(error)"))
            }
            if holdsBase {
                // Never pulled, but answers built a base: of which epoch is unknown, so the first
                // pull fetches the base whole rather than replaying the feed over it.
                if let stopped = await resnapshot("first_pull") { return stop(stopped) }
                continue
            }
            if let type = row?.resync.first {
                // A type whose base was dropped (a schema change) is fetched again whole.
                if let stopped = await resnapshot("schema_changed", type: type) { return stop(stopped) }
                continue
            }
            let cursor = row?.cursor ?? nil
            let limit = settings.limit(servedBy: pulled.limits)
            if let until, let cursor, cursor >= until {
                pulled.reachedUntil = cursor == until
                return pulled
            }
            let query = "?limit=\(limit)" + (cursor.map { "&cursor=\($0.text)" } ?? "") + (until.map { "&until=\($0.text)" } ?? "")
            let request = TransportRequest(method: "GET", endpoint: settings.changesEndpoint + query, headers: [WireHeader.businessID: business], body: Data())
            let response: TransportResponse
            do {
                response = try await send(request)
            } catch {
                return stop(Self.noResponse(error))
            }
            switch response.statusCode {
            case 200:
                let page: FeedPage
                do {
                    page = try FeedPage.decoded(from: response.body)
                } catch {
                    let refusal = PageRefusal.malformed("\(error)")
                    await journalRefusal(refusal, business: business, from: cursor)
                    pulled.refused += 1
                    return stop(.refused(refusal))
                }
                if let changed = await accountChanged() { return stop(changed) }
                pulled.limits = page.limits ?? pulled.limits
                let outcome: PageOutcome
                do {
                    outcome = try await apply(page, requested: cursor, limit: limit)
                } catch OutboxError.storageFull {
                    return stop(.storageFull)
                } catch {
                    log.problem(.factNotRecorded, "could not apply a pulled page; the feed is pulled again later from the same cursor", error: error)
                    return stop(.journalError("\(error)"))
                }
                switch outcome {
                case .applied(let applied):
                    landed(applied.confirmations.count, response.body.count)
                    pagesLeft -= 1
                    pulled.report.pagesApplied += 1
                    pulled.report.changesApplied += applied.confirmations.count
                    pulled.report.skipped += applied.skipped.count
                    if let until, applied.to >= until {
                        pulled.reachedUntil = applied.to == until
                        pulled.report.reachedEnd = applied.reachedEnd
                        return pulled
                    }
                    if applied.reachedEnd {
                        pulled.report.reachedEnd = true
                        return pulled
                    }
                    if let interrupted = interruption() { return stop(interrupted) }
                case .unchanged:
                    pulled.report.reachedEnd = true
                    pulled.reachedUntil = until == page.cursor
                    return pulled
                case .resnapshot:
                    if let stopped = await resnapshot("other_epoch") { return stop(stopped) }
                case .refused(let refusal):
                    pulled.refused += 1
                    return stop(.refused(refusal))
                }
            case FeedResnapshot.status:
                // The status alone requires the resnapshot; its body only says why, and one that
                // cannot be read is recorded as such.
                let reason: String
                do {
                    reason = try FeedResnapshot.decoded(from: response.body).reason.rawValue
                } catch {
                    log.log(.warning, "a resnapshot answer's reason could not be read: \(error)", [:])
                    reason = "unreadable"
                }
                if let stopped = await resnapshot(reason) { return stop(stopped) }
            default:
                let (stopped, retryAfter) = await refusal(response, business: business)
                pulled.retryAfter = retryAfter ?? pulled.retryAfter
                return stop(stopped)
            }
        }
        return stop(.pageLimit)
    }

    /// Sends a feed's request, recording whether a route was seen when that changes (with no
    /// flush of its own: losing it to a crash loses nothing a member typed).
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        do {
            let response = try await transport.send(request)
            await recordRoute(responded: true)
            return response
        } catch {
            if Self.noResponse(error) == .offline { await recordRoute(responded: false) }
            throw error
        }
    }

    private func recordRoute(responded: Bool) async {
        await routes.recordAlone(responded: responded, at: configuration.clock.now(), writer: room.writer, log: log,
                                 failure: "could not record whether a route to the server is seen")
    }

    /// What a request that got no response stops a pull with: the expiry when the pass's task
    /// was cancelled or the request itself was (the feed does not back off for it), else no network.
    static func noResponse(_ error: any Error) -> Outbox.PullStop {
        Task.isCancelled || TransportRequest.Failure(error) == .cancelled ? .expired : .offline
    }

    /// What an answer other than 200 (or a feed's 409) does to a pull: a 401 pauses the worker,
    /// as for a write; 429 and 5xx back off, until the server's `Retry-After` when it said one;
    /// anything else is the server's words, as it said them (at most 512 bytes).
    func refusal(_ response: TransportResponse, business: String) async -> (Outbox.PullStop, retryAfter: Date?) {
        switch response.statusCode {
        case 401:
            await pause(business: business)
            return (.unauthorized, nil)
        case 429, 500...599:
            let now = configuration.clock.now()
            let retryAfter = response.header(WireHeader.retryAfter).flatMap { RetryAfter.moment($0, now: now) }
            return (.backingOff(until: retryAfter ?? now), retryAfter)
        default:
            return (.invalidResponse(status: response.statusCode, problem: String(decoding: response.body.prefix(512), as: UTF8.self)), nil)
        }
    }

    /// `signedOut` or `otherAccount` when the session is no longer the journal's account
    /// (recorded, as a pass records it); `nil` while it is.
    func accountChanged() async -> Outbox.PullStop? {
        let account = await configuration.session.currentAccount()
        switch SessionObservation(signedIn: account, journalAccount: configuration.account) {
        case .signedIn: return nil
        case .signedOut:
            await sessions.recordIfChanged()
            return .signedOut
        case .otherAccount:
            await sessions.recordIfChanged()
            return .otherAccount
        }
    }

    /// A 401 on a pull pauses the worker as one on a write does: `sessionPaused`, naming no
    /// operation; ``Outbox/resumeSession()`` resumes writes and pulls.
    func pause(business: String) async {
        do {
            let events = try await room.append([JournalStore.Draft(
                operationID: nil, body: .sessionPaused(SessionPaused(reason: ErrorCode.unauthorized, triggeredBy: nil))
            )])
            log.log(.notice, "worker paused: the server answered 401 to a pull; resumeSession() resumes it", [
                EngineLog.Key.errorCode: .string(ErrorCode.unauthorized),
                EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
            ])
        } catch {
            log.problem(.factNotRecorded, "could not record the pause a pull's 401 asked for; the next pull asks again", error: error)
        }
    }

    // MARK: A page

    /// Applies one page of `page.business`'s change feed, asked from `requested` (`nil`: the
    /// feed's start, for a feed never pulled): checked whole first (``PageCheck``), then its
    /// changes go to the server base (each only over an older revision), a tombstone turns every
    /// write of its record still waiting `conflicted`, and the feed's cursor moves, all in one
    /// commit with the `pageApplied` event. Nothing is enqueued. A record of a local-only type, or
    /// of a type the pull configuration does not list, is passed over (counted in the event).
    ///
    /// - Throws: ``OutboxError/feedMoved(business:pageFrom:stored:)`` when the journal's cursor
    ///   is not `requested` (another pull moved it); ``OutboxError/storageFull(limitBytes:errno:)``
    ///   (a page never takes the room writes need).
    func apply(_ page: FeedPage, requested: FeedPosition?, limit: Int) async throws -> PageOutcome {
        let request = PageCheck.Request(business: page.business, cursor: requested ?? .start(of: page.from.epoch), limit: limit)
        // Each record hashed once: for the page's digest, its confirmation and its base.
        let digests = page.changes.map(\.digestInput)
        switch PageCheck.verdict(page, for: request, digests: digests) {
        case .refuse(let refusal):
            await journalRefusal(refusal, business: page.business, from: requested)
            return .refused(refusal)
        case .resnapshot(let epoch): return .resnapshot(epoch: epoch)
        case .apply: break
        }
        // A page that moves nothing is not recorded, but for the first: the position the feed
        // gave is kept, so the next pull asks from it (and the feed says when it caught up).
        if page.changes.isEmpty, page.cursor == request.cursor, requested != nil { return .unchanged }

        let (writes, confirmations, skipped) = taken(page.changes, digests: digests, business: page.business, source: .pulled)
        let applied = PageApplied(business: page.business, from: page.from, to: page.cursor, reachedEnd: !page.hasMore,
                                  digest: page.digest, confirmations: confirmations, skipped: skipped)
        _ = try await room.appendMakingRoom([JournalStore.Draft(
            operationID: nil, body: .pageApplied(applied), storeWrites: writes,
            feedWrite: .move(business: page.business, expectFrom: requested, to: page.cursor)
        )], payloadBytes: writes.reduce(0) { $0 + ($1.value?.count ?? 0) })
        return .applied(applied)
    }

    /// What of pulled changes (a page's, or a snapshot's records) goes to the base, with the trail
    /// of each, and what is passed over and why.
    func taken(_ changes: [FeedChange], digests: [FeedDigest.Change], business: String, source: RecordConfirmation.Source)
        -> (writes: [RecordStoreWrite], confirmations: [RecordConfirmation], skipped: [SkippedChange]) {
        var writes: [RecordStoreWrite] = []
        var confirmations: [RecordConfirmation] = []
        var skipped: [SkippedChange] = []
        for (change, digest) in zip(changes, digests) {
            let key = RecordKey(business: business, type: change.type, id: change.id)
            let policy = configuration.recordPolicy(for: change.type)
            if let reason = skipReason(key, policy: policy, record: change.record) {
                skipped.append(SkippedChange(type: change.type, id: change.id, revision: change.revision, reason: reason))
                continue
            }
            writes.append(RecordStoreWrite(table: .base, key: key, revision: change.revision, schemaVersion: policy.schemaVersion, value: change.record,
                                           valueHash: digest.recordHash))
            confirmations.append(RecordConfirmation(key: key, revision: change.revision, valueHash: digest.recordHash, source: source))
        }
        return (writes, confirmations, skipped)
    }

    /// Why a pulled change (or snapshot record) is passed over; `nil`: it goes to the base.
    func skipReason(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy, record: Data?) -> SkippedChange.Reason? {
        if key.problem != nil { return .invalidKey }
        if policy.isLocalOnly { return .localOnly }
        if !(configuration.pull?.pulls(type: key.type) ?? true) { return .unknownType }
        // Judged as a write's value is: by the configured payload limit.
        if let record, record.count > configuration.maxPayloadBytes { return .overLimit }
        return nil
    }

    /// Journals a page's refusal (`pageRefused`), so support sees what the server got wrong. It
    /// never takes the room writes need: with the journal full, the refusal is not journaled.
    func journalRefusal(_ refusal: PageRefusal, business: String, from: FeedPosition?) async {
        let refused = PageRefused(business: business, from: from, code: refusal.code, detail: refusal.description)
        do {
            _ = try await room.append([JournalStore.Draft(operationID: nil, body: .pageRefused(refused))])
        } catch {
            log.problem(.factNotRecorded, "could not journal a refused page", error: error)
        }
    }
}
