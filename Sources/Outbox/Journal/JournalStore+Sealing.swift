import Foundation
import OutboxCore
import OutboxStorage

/// Sealing a journal, unsealing it, and rotating its key.
extension JournalStore {
    /// Re-seals every sealed field from one key to another in one write transaction: the
    /// payloads and presentations of `enqueued` records, and the presentations kept in the
    /// operation states. `from: nil` seals a plaintext journal; `to: nil` unseals one.
    ///
    /// The records' content does not change, only how it is stored: each payload is sent byte
    /// for byte as before, under the same key, so the server's fingerprint still matches.
    func reseal(from old: JournalSealing?, to new: JournalSealing?) throws(OutboxError) {
        let schema = self.schema
        try Self.run(options) {
            try environment.write { txn in
                var enqueuedRecords: [(JournalSequence, [UInt8])] = []
                try txn.scan(schema.events) { entry in
                    let seq = try entry.key()
                    let record = Array(entry.valueBytes)
                    if try RecordCodec.decodeHeader(record, seq: seq).kind == .enqueued { enqueuedRecords.append((seq, record)) }
                    return .next
                }
                var bytesDelta: Int64 = 0
                // Each state keeps the very ciphertext its enqueued event holds, as a rebuild would.
                var presentations: [OperationID: [UInt8]] = [:]
                for (seq, record) in enqueuedRecords {
                    var event = try RecordCodec.decode(record, seq: seq, unseal: old?.unsealer)
                    guard case .enqueued(var enqueued) = event.body, let id = event.operationID else { continue }
                    enqueued.sealed = new?.seal(enqueued.request, id: id)
                    presentations[id] = enqueued.sealed?.presentation
                    event.body = .enqueued(enqueued)
                    let rewritten = RecordCodec.encode(event)
                    try txn.put(schema.events, seq, rewritten)
                    bytesDelta += Int64(rewritten.count - record.count)
                }
                var states: [OperationState] = []
                try txn.scan(schema.operations) { entry in
                    let state = try entry.value()
                    if state.compactedAt == nil { states.append(state) }
                    return .next
                }
                for var state in states {
                    var label = state.entityLabel, summary = state.summary
                    if let sealed = state.sealedPresentation, let old {
                        let text = try old.unsealPresentation(sealed, id: state.id)
                        (label, summary) = (text.label, text.summary)
                    }
                    if new != nil {
                        state.sealedPresentation = presentations[state.id]
                        (state.entityLabel, state.summary) = ("", "")
                    } else {
                        state.sealedPresentation = nil
                        (state.entityLabel, state.summary) = (label, summary)
                    }
                    try txn.put(schema.operations, state.id, state)
                }
                try Projection.writeCounters([CounterName.eventBytes: bytesDelta], schema: schema, in: txn)
                if let new {
                    try txn.put(schema.meta, JournalSchema.MetaKey.keyCheck, new.keyCheck())
                } else {
                    try txn.delete(schema.meta, JournalSchema.MetaKey.keyCheck)
                }
            }
        }
        schema.sealing.sealing = new
    }
}
