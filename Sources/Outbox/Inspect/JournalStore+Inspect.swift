import Foundation
import OutboxCore
import OutboxStorage

/// A journal folded in memory, for a reader of a journal whose stored projections are of
/// another layout: it answers what the projections would.
struct FoldedJournal: Sendable {
    var image: ProjectionImage
    /// The records the fold could not read: reported by every read that meets them.
    var damaged: [DamagedRecord]
    /// The seqs of every readable event of each operation, in order, including events the fold
    /// refused (``verify`` names those).
    var eventSeqs: [OperationID: [JournalSequence]]

    /// Folds every readable, legal event of the journal, in one snapshot.
    static func fold(schema: JournalSchema, in txn: borrowing LMDBTransaction) throws -> FoldedJournal {
        var verifier = JournalVerifier()
        try txn.scan(schema.events) { entry in
            verifier.check(seq: (try? entry.key()) ?? .zero, record: Array(entry.valueBytes))
            return .next
        }
        return FoldedJournal(image: verifier.image, damaged: verifier.damaged, eventSeqs: verifier.eventSeqs)
    }
}

/// The audit reads behind `journal-inspect`, for the engine and for a read-only reader alike.
/// Each runs in one snapshot; `folded` stands in for the stored projections when given.
extension JournalStore {
    func events(matching query: EventQuery, folded: FoldedJournal?) throws(OutboxError) -> EventPage {
        let schema = self.schema
        return try read { txn in
            var page = EventPage()
            guard query.limit > 0 else { return page }
            let descending = query.order == .newestFirst
            var operationTypes: [OperationID: String?] = [:]
            let start = (descending ? query.toSeq : query.fromSeq).map(JournalCodec.Seq.bytes)
            try txn.scan(schema.events, from: start, reverse: descending) { entry in
                guard let seq = try? entry.key() else { return .next }
                if descending, let from = query.fromSeq, seq < from { return .stop }
                if !descending, let to = query.toSeq, seq > to { return .stop }
                if page.events.count >= query.limit {
                    page.nextSeq = seq
                    return .stop
                }
                page.lastExamined = seq
                let record = Array(entry.valueBytes)
                let event: JournalEvent
                do {
                    event = try schema.decode(record, seq: seq)
                } catch {
                    let damaged = DamagedRecord(seq: seq, error: error, record: record)
                    if query.mayInclude(damaged) { page.damaged.append(damaged) }
                    return .next
                }
                var operationType: String?
                if query.operationTypes != nil, let id = event.operationID {
                    if let known = operationTypes[id] {
                        operationType = known
                    } else {
                        let state = try folded.map { $0.image.states[id] } ?? schema.state(id, in: txn)
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

    func operations(matching query: OperationQuery, folded: FoldedJournal?) throws(OutboxError) -> [OperationState] {
        guard query.limit > 0 else { return [] }
        if let folded {
            let picked = folded.image.states.values.filter(query.accepts).sorted { $0.firstSeq > $1.firstSeq }
            return picked.prefix(query.limit).map(schema.opened)
        }
        let schema = self.schema
        let statuses = query.statuses.map { OutboxStatus.allCases.filter($0.contains) } ?? OutboxStatus.allCases
        return try read { txn in
            // Each status's index runs in journal order: read each backwards, then merge.
            var picked: [OperationState] = []
            for status in statuses {
                let start = query.beforeSeq.map { JournalCodec.StatusKey.bytes((status, $0)) }
                var taken = 0
                try txn.scan(schema.byStatus, leading: JournalCodec.StatusKey.leading(status), from: start, reverse: true) { entry in
                    guard taken < query.limit else { return .stop }
                    guard let state = try schema.state(try entry.value(), in: txn), query.accepts(state) else { return .next }
                    picked.append(state)
                    taken += 1
                    return .next
                }
            }
            return picked.sorted { $0.firstSeq > $1.firstSeq }.prefix(query.limit).map(schema.opened)
        }
    }

    func operationIDs(matchingPrefix prefix: String, folded: FoldedJournal?) throws(OutboxError) -> [OperationID] {
        let wanted = Self.idDigits(prefix)
        guard !wanted.isEmpty else { return [] }
        var ids: [OperationID]
        if let folded {
            ids = Array(folded.image.states.keys)
        } else {
            let schema = self.schema
            ids = try read { txn in
                var ids: [OperationID] = []
                try txn.scan(schema.operations) { entry in
                    ids.append(try entry.key())
                    return .next
                }
                return ids
            }
        }
        ids = ids.filter { Self.idDigits($0.idempotencyKey).hasPrefix(wanted) }
        return ids.sorted { $0.idempotencyKey < $1.idempotencyKey }
    }

    /// An id or prefix as uppercase hex digits, without the hyphens.
    private static func idDigits(_ text: String) -> String {
        text.uppercased().filter { $0 != "-" }
    }

    func timeline(of id: OperationID, folded: FoldedJournal?) throws(OutboxError) -> OperationTimeline {
        let schema = self.schema
        return try read { txn in
            let state: OperationState?
            var seqs: [JournalSequence] = []
            var damaged: [DamagedRecord] = []
            if let folded {
                state = folded.image.states[id]
                seqs = folded.eventSeqs[id] ?? []
                damaged = folded.damaged.filter { $0.claimedOperationID == id }
            } else {
                state = try schema.state(id, in: txn)
                seqs = state?.eventSeqs ?? []
            }
            var events: [JournalEvent] = []
            for seq in seqs {
                guard let record = try txn.get(schema.events, seq) else {
                    damaged.append(DamagedRecord(seq: seq, reason: "listed in the operation's history, missing from the journal",
                                                 claimedOperationID: id))
                    continue
                }
                do {
                    events.append(try schema.decode(record, seq: seq))
                } catch {
                    damaged.append(DamagedRecord(seq: seq, error: error, record: record))
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

    func summary(folded: FoldedJournal?) throws(OutboxError) -> JournalSummary {
        let schema = self.schema
        let path = environment.path
        let usedBytes = (try? environment.info().usedBytes) ?? 0
        let fileBytes = (try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int) ?? 0
        let current = projectionsAreCurrent
        return try read { txn in
            let statusCounts: [OutboxStatus: Int]
            let oldestPending: OperationState?
            let engine: EngineState
            let eventBytes: Int
            if let folded {
                var counts = Dictionary(uniqueKeysWithValues: OutboxStatus.allCases.map { ($0, 0) })
                for state in folded.image.states.values { counts[state.status, default: 0] += 1 }
                statusCounts = counts
                oldestPending = folded.image.states.values.filter { $0.status == .queued || $0.status == .syncing }
                    .min { $0.firstSeq < $1.firstSeq }
                engine = folded.image.engine
                eventBytes = Int(folded.image.eventBytes)
            } else {
                statusCounts = try schema.queueDepth(in: txn)
                var oldest: OperationState?
                for status in [OutboxStatus.queued, .syncing] {
                    guard let id = try schema.operationIDs(withStatus: status, limit: 1, in: txn).first,
                        let state = try schema.state(id, in: txn)
                    else { continue }
                    if oldest.map({ state.firstSeq < $0.firstSeq }) ?? true { oldest = state }
                }
                oldestPending = oldest.map(schema.opened)
                engine = try schema.engineState(in: txn)
                eventBytes = Int(try schema.counter(CounterName.eventBytes, in: txn))
            }
            // The moment of the last event: the last record that reads, each damaged one noted.
            var damaged: [DamagedRecord] = []
            var lastEventAt: Date?
            try txn.scan(schema.events, reverse: true) { entry in
                let seq = (try? entry.key()) ?? .zero
                let record = Array(entry.valueBytes)
                do {
                    lastEventAt = try schema.decode(record, seq: seq).recordedAt
                    return .stop
                } catch {
                    damaged.append(DamagedRecord(seq: seq, error: error, record: record))
                    return .next
                }
            }
            return JournalSummary(
                path: path,
                formatVersion: Self.metaNumber(try txn.get(schema.meta, JournalSchema.MetaKey.formatVersion))
                    ?? RecordCodec.formatVersion,
                projectionVersion: Self.metaNumber(try txn.get(schema.meta, JournalSchema.MetaKey.projectionVersion)),
                projectionsAreCurrent: current,
                account: try txn.get(schema.meta, JournalSchema.MetaKey.account).map { String(decoding: $0, as: UTF8.self) },
                firstSeq: try schema.firstSeq(in: txn),
                lastSeq: try schema.lastSeq(in: txn),
                eventCount: try txn.count(schema.events.database),
                eventBytes: eventBytes,
                fileBytes: fileBytes,
                usedBytes: usedBytes,
                statusCounts: statusCounts,
                oldestPending: oldestPending,
                engine: engine,
                lastEventAt: lastEventAt,
                damaged: damaged.reversed()
            )
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

    /// The ledger, from the folded image when given.
    func ledger(_ query: LedgerQuery, folded: FoldedJournal?) throws(OutboxError) -> [LedgerEntry] {
        guard let folded else { return try ledger(query) }
        let rows = folded.image.states.values.filter { state in
            if let status = query.status, state.status != status { return false }
            if let from = query.createdFrom, state.createdAt < from { return false }
            if let before = query.createdBefore, state.createdAt >= before { return false }
            if let after = query.after, state.firstSeq <= after { return false }
            return true
        }
        return rows.sorted { $0.firstSeq < $1.firstSeq }.prefix(query.limit).map(LedgerEntry.init)
    }
}
