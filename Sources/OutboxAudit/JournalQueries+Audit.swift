public import Outbox
import Foundation
import OutboxCore
import OutboxStorage

/// The audit reads behind `journal-inspect`, for the engine and for a read-only reader alike,
/// each in one snapshot.
extension JournalQueries {
    package func events(matching query: EventQuery) throws(OutboxError) -> EventPage {
        try Self.checkLimit(query.limit)
        let schema = self.schema
        let projections = self.projections
        let descending = query.order == .newestFirst
        let start = Self.scanStart(query)
        return try read { txn in
            var page = EventPage()
            var operationTypes: [OperationID: String?] = [:]
            try txn.scan(schema.events, from: start.map(JournalCodec.Seq.bytes), reverse: descending) { entry in
                guard let seq = try? entry.key() else { return .next }
                if descending, let from = query.seqFrom, seq < from { return .stop }
                if !descending, let through = query.seqThrough, seq > through { return .stop }
                if page.events.count >= query.limit {
                    page.nextAfter = page.lastExamined
                    page.nextStart = seq
                    return .stop
                }
                page.lastExamined = seq
                let record = Array(entry.valueBytes)
                let event: JournalEvent
                do {
                    event = try schema.decode(record, seq: seq)
                } catch {
                    let damaged = Outbox.DamagedRecord(seq: seq, error: error, record: record)
                    if query.mayInclude(damaged) { page.damaged.append(damaged) }
                    return .next
                }
                var operationType: String?
                if query.operationTypes != nil, let id = event.operationID {
                    if let known = operationTypes[id] {
                        operationType = known
                    } else {
                        let state = try projections.state(id, in: txn)
                        operationType = state?.operationType
                        operationTypes[id] = .some(operationType)
                    }
                }
                if query.accepts(event, operationType: operationType) { page.events.append(event) }
                return .next
            }
            return page
        }
    }

    /// Where an event page's scan begins, in the query's order: the range's near end, or just
    /// past `after` when that is further in; `nil` for the journal's own end.
    private static func scanStart(_ query: EventQuery) -> JournalSequence? {
        let bound = query.order == .newestFirst ? query.seqThrough : query.seqFrom
        guard let after = query.after else { return bound }
        if query.order == .newestFirst {
            return bound.map { min($0, after.previous) } ?? after.previous
        }
        return bound.map { max($0, after.next) } ?? after.next
    }

    func operationIDs(matchingPrefix prefix: String) throws(OutboxError) -> [OperationID] {
        let wanted = Self.idDigits(prefix)
        guard !wanted.isEmpty else { return [] }
        let projections = self.projections
        let ids = try read { txn in try projections.operationIDs(in: txn) }
        return ids.filter { Self.idDigits($0.idempotencyKey).hasPrefix(wanted) }.sorted { $0.idempotencyKey < $1.idempotencyKey }
    }

    /// An id or prefix as uppercase hex digits, without the hyphens.
    private static func idDigits(_ text: String) -> String {
        text.uppercased().filter { $0 != "-" }
    }

    func timeline(of id: OperationID) throws(OutboxError) -> OperationTimeline {
        let schema = self.schema
        let projections = self.projections
        return try read { txn in
            let state = try projections.state(id, in: txn)
            var (seqs, damaged) = try projections.recordedSeqs(of: id, state: state, in: txn)
            var events: [JournalEvent] = []
            for seq in seqs {
                guard let record = try txn.get(schema.events, seq) else {
                    damaged.append(Outbox.DamagedRecord(seq: seq, reason: "listed in the operation's history, missing from the journal",
                                                 claimedOperationID: id))
                    continue
                }
                do {
                    events.append(try schema.decode(record, seq: seq))
                } catch {
                    damaged.append(Outbox.DamagedRecord(seq: seq, error: error, record: record))
                }
            }
            guard state != nil || !events.isEmpty || !damaged.isEmpty else { throw OutboxError.operationNotFound(id) }
            damaged.sort { $0.seq < $1.seq }
            let payload = events.lazy.compactMap { event -> PayloadCheck? in
                guard case .enqueued(let enqueued) = event.body else { return nil }
                let unopened = enqueued.sealed != nil && schema.sealing.sealing == nil
                return PayloadCheck(payload: enqueued.request.payload, recordedHash: enqueued.requestHash, isSealed: unopened)
            }.first
            return OperationTimeline(id: id, state: state.map(schema.opened), events: events, damaged: damaged,
                                     attempts: OperationTimeline.attempts(of: events), payload: payload)
        }
    }

    /// - Parameter now: the moment ages and the objective are measured at.
    func summary(now: Date = Date()) throws(OutboxError) -> JournalSummary {
        let schema = self.schema
        let projections = self.projections
        let path = environment.path
        let usedBytes = (try? environment.info().usedBytes) ?? 0
        let fileBytes = (try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int) ?? 0
        let current = projectionsAreCurrent
        return try read { txn in
            // The moment of the last event: the last record that reads, each damaged one noted.
            var damaged: [Outbox.DamagedRecord] = []
            var lastEventAt: Date?
            try txn.scan(schema.events, reverse: true) { entry in
                let seq = (try? entry.key()) ?? .zero
                let record = Array(entry.valueBytes)
                do {
                    lastEventAt = try schema.decode(record, seq: seq).recordedAt
                    return .stop
                } catch {
                    damaged.append(Outbox.DamagedRecord(seq: seq, error: error, record: record))
                    return .next
                }
            }
            var feeds: [JournalSummary.Feed] = []
            try txn.scan(schema.feeds) { entry in
                let row = try entry.value()
                let business = try entry.key()
                feeds.append(JournalSummary.Feed(business: business, cursor: row.cursor?.text, pageSeq: row.pageSeq,
                                                 pageAt: try? schema.event(row.pageSeq, in: txn)?.recordedAt,
                                                 caughtUpAt: try Self.lastCaughtUp(business, through: row.pageSeq, schema: schema, in: txn),
                                                 staging: row.staging.map { .init(position: $0.position.text, pages: $0.pages, records: $0.staged, startedSeq: $0.startedSeq) }))
                return .next
            }
            var summary = JournalSummary(
                path: path,
                formatVersion: Self.metaNumber(try txn.get(schema.meta, JournalSchema.MetaKey.formatVersion))
                    ?? RecordCodec.formatVersion,
                projectionVersion: Self.metaNumber(try txn.get(schema.meta, JournalSchema.MetaKey.projectionVersion)),
                projectionsAreCurrent: current,
                account: try txn.get(schema.meta, JournalSchema.MetaKey.account).map { String(decoding: $0, as: UTF8.self) },
                firstSeq: try schema.firstSeq(in: txn),
                lastSeq: try schema.lastSeq(in: txn),
                eventCount: try txn.count(schema.events.database),
                eventBytes: try projections.eventBytes(in: txn),
                fileBytes: fileBytes,
                usedBytes: usedBytes,
                statusCounts: try projections.statusCounts(in: txn),
                oldestPending: try projections.oldestPending(in: txn).map(schema.opened),
                engine: try projections.engineState(in: txn),
                lastEventAt: lastEventAt,
                damaged: damaged.reversed()
            )
            summary.feeds = feeds
            let interval = OutboxMetrics.AcknowledgementObjective.defaultIntervalSeconds
            let waiting = try self.waiting(now: now, objectiveSeconds: interval, watchedUntil: lastEventAt, in: txn)
            summary.oldestPendingConnectedAgeSeconds = waiting.ages.first?.connectedAgeSeconds
            summary.oldestHealthyPending = waiting.oldestHealthy
            summary.routeSeen = waiting.routeSeen
            if current {
                let counters = try schema.counters(in: txn)
                summary.acknowledgement = counters.acknowledgement(within: interval, pendingPast: waiting.pastInterval)
                summary.abandonedAttempts = Int(counters.abandonedAttempts)
                summary.cancelledAttempts = Int(counters.cancelledAttempts)
            }
            return summary
        }
    }

    /// A `meta` value stored as a big-endian u32.
    private static func metaNumber(_ value: [UInt8]?) -> Int? {
        value.flatMap { try? $0.withUnsafeBytes(JournalCodec.Version.decode) }.map(Int.init)
    }

    /// The count of operations not yet terminal after each event, folded in journal order and
    /// thinned to at most `maxSamples` (each kept sample the highest of its stretch).
    func queueDepthHistory(maxSamples: Int) throws(OutboxError) -> [QueueDepthSample] {
        let schema = self.schema
        return try read { txn in
            var states: [OperationID: OperationState] = [:]
            var pending = 0
            var samples: [QueueDepthSample] = []
            try txn.scan(schema.events) { entry in
                let seq = (try? entry.key()) ?? .zero
                guard let event = try? schema.decode(Array(entry.valueBytes), seq: seq), let id = event.operationID,
                    let after = try? Fold.apply(event, to: states[id])
                else { return .next }
                let wasPending = states[id].map { !$0.status.isTerminal } ?? false
                pending += (after.status.isTerminal ? 0 : 1) - (wasPending ? 1 : 0)
                states[id] = after
                samples.append(QueueDepthSample(seq: seq, recordedAt: event.recordedAt, pending: pending))
                return .next
            }
            return QueueDepthSample.thinned(samples, to: maxSamples)
        }
    }
}

extension JournalQueries {
    /// When `business`'s feed last reached its end: the latest `pageApplied` of it that did, at
    /// or before `seq` (the row's page), read backwards; `nil` when none did (a first pull still
    /// under way, or its pages compacted away). A page that did not reach the end leaves the
    /// feed as far behind as it was.
    static func lastCaughtUp(_ business: String, through seq: JournalSequence, schema: JournalSchema,
                             in txn: borrowing LMDBTransaction) throws -> Date? {
        var caughtUp: Date?
        try txn.scan(schema.events, from: JournalCodec.Seq.bytes(seq), reverse: true) { entry in
            guard let event = try? schema.decode(Array(entry.valueBytes), seq: (try? entry.key()) ?? .zero),
                case .pageApplied(let page) = event.body, ExactString(page.business) == ExactString(business), page.reachedEnd
            else { return .next }
            caughtUp = event.recordedAt
            return .stop
        }
        return caughtUp
    }
}
