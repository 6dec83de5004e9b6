import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage

/// Compaction: the detailed events of settled operations leave the journal; their ledger rows
/// stay, carried by a `compacted` event.
extension JournalStore {
    /// How many operations one compaction transaction (and one `compacted` event) takes at most.
    static let compactionChunk = 500

    /// Settled operations (synced, withdrawn, discarded) that `takes` selects and whose events
    /// are still in the journal, oldest first.
    ///
    /// A write of records is kept while a record's view may still need it: synced, while a
    /// record it changed still shows its value, confirmed (no newer base since); rolled back
    /// (discarded, withdrawn), for `retention` after it settled, measured by uptime, so the
    /// value the member typed stays readable (its history, the record's notice).
    func compactable(limit: Int, retention: (seconds: TimeInterval, now: DeviceMoment, bootGapCapSeconds: TimeInterval)? = nil,
                     where takes: (OperationState) -> Bool) throws(OutboxError) -> [OperationID] {
        let schema = self.schema
        return try read { txn in
            var ids: [(JournalSequence, OperationID)] = []
            for status in OutboxStatus.allCases where status.isTerminal {
                try txn.scan(schema.byStatus, leading: JournalCodec.StatusKey.leading(status)) { entry in
                    let id = try entry.value()
                    if let state = try schema.state(id, in: txn), state.compactedAt == nil, takes(state),
                        try schema.recordsLetGo(of: state, retention: retention, in: txn)
                    {
                        ids.append((state.firstSeq, id))
                    }
                    return .next
                }
            }
            return ids.sorted { $0.0 < $1.0 }.prefix(limit).map(\.1)
        }
    }

    /// Removes every event of the operations `ids` (each must be settled) and appends one
    /// `compacted` event holding their ledger rows and the digest of what was removed, in one
    /// write transaction.
    /// - Returns: the `compacted` event, or `nil` when none of `ids` could be compacted.
    func compact(_ ids: [OperationID], at now: Date) throws(OutboxError) -> JournalEvent? {
        precondition(!options.readOnly, "compact on a read-only journal")
        let schema = self.schema
        forgetCounters()
        return try Self.run(options) {
            try environment.write { txn -> JournalEvent? in
                // Taken before anything is removed: the removed events may be the journal's last,
                // and a seq is never given twice.
                let seq = try schema.lastSeq(in: txn).next
                var removed: [(seq: JournalSequence, record: [UInt8])] = []
                var operations: [CompactedOperation] = []
                for id in ids {
                    guard let state = try schema.state(id, in: txn), state.status.isTerminal, state.compactedAt == nil else { continue }
                    var kept = CompactedOperation(state)
                    for seq in state.eventSeqs {
                        if let record = try txn.get(schema.events, seq) {
                            removed.append((seq, record))
                            if !state.records.isEmpty, try RecordCodec.decodeHeader(record, seq: seq).kind == .attemptFinished,
                                case .attemptFinished(let finished) = try RecordCodec.decode(record, seq: seq).body
                            {
                                // The trail of the records' base stays, with the ledger row.
                                kept.confirmations += finished.confirmations
                            }
                            try txn.delete(schema.events, seq)
                        }
                    }
                    operations.append(kept)
                }
                guard !operations.isEmpty, let first = removed.map(\.seq).min(), let last = removed.map(\.seq).max() else { return nil }
                removed.sort { $0.seq < $1.seq }
                let event = JournalEvent(
                    seq: seq, operationID: nil, recordedAt: now,
                    body: .compacted(Compacted(
                        firstSeq: first, lastSeq: last, removedCount: removed.count,
                        digest: SHA256Digest(ofConcatenated: removed.map(\.record)), operations: operations
                    ))
                )
                let record = RecordCodec.encode(event)
                try txn.put(schema.events, event.seq, record, flags: .append)
                let removedBytes = removed.reduce(0) { $0 + $1.record.count }
                var counters = try schema.counters(in: txn)
                // The removed events leave the journal's size.
                counters.events -= Int64(removed.count)
                counters.eventBytes -= Int64(removedBytes)
                try schema.projectEngineEvent(event, recordSize: record.count, counters: &counters, in: txn)
                try Projection.writeCounters(counters, schema: schema, in: txn)
                return event
            }
        }
    }
}
