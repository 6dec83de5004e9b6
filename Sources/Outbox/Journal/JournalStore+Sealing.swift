import Foundation
import OutboxCrypto
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
        forgetCounters()
        var fileKey: SealingKey?
        var madeFileKey = false
        try Self.run(options) {
            try environment.write { txn in
                var sealable: [(JournalSequence, [UInt8])] = []
                try txn.scan(schema.events) { entry in
                    let seq = try entry.key()
                    let record = Array(entry.valueBytes)
                    switch try RecordCodec.decodeHeader(record, seq: seq).kind {
                    case .enqueued, .attemptFinished, .compacted: sealable.append((seq, record))
                    default: break
                    }
                    return .next
                }
                var bytesDelta: Int64 = 0
                for (seq, record) in sealable {
                    var event = try RecordCodec.decode(record, seq: seq, unseal: old?.unsealer)
                    guard try Self.reseal(&event, from: old, to: new) else { continue }
                    let rewritten = RecordCodec.encode(event)
                    try txn.put(schema.events, seq, rewritten)
                    bytesDelta += Int64(rewritten.count - record.count)
                }
                try Self.reseal(schema.base, table: .base, from: old, to: new, in: txn)
                try Self.reseal(schema.stagedBase, table: .base, from: old, to: new, in: txn)
                try Self.reseal(schema.localRecords, table: .local, from: old, to: new, in: txn)
                var counters = try schema.counters(in: txn)
                counters.eventBytes += bytesDelta
                try Projection.writeCounters(counters, schema: schema, in: txn)
                // The attachments' files keep their key; only how it is kept changes. A journal
                // sealed for the first time gets one.
                if let stored = try txn.get(schema.meta, JournalSchema.MetaKey.attachmentKey) {
                    guard let kept = try AttachmentKeyRecord.decode(stored, sealing: old) else {
                        throw OutboxError.journalDamaged(path: environment.path, reason: "the attachments key in meta is sealed, and the journal has no key to open it")
                    }
                    fileKey = kept
                } else {
                    fileKey = new == nil ? nil : SealingKey.random()
                    madeFileKey = fileKey != nil
                }
                if let fileKey {
                    try txn.put(schema.meta, JournalSchema.MetaKey.attachmentKey, AttachmentKeyRecord.encode(fileKey, sealing: new))
                }
                if let new {
                    try txn.put(schema.meta, JournalSchema.MetaKey.keyCheck, new.keyCheck())
                } else {
                    try txn.delete(schema.meta, JournalSchema.MetaKey.keyCheck)
                }
                // The states keep the very ciphertext their events hold: the projections are
                // folded again from the rewritten events, next. Should the process end before
                // that, the next open rebuilds them.
                try txn.put(schema.meta, JournalSchema.MetaKey.projectionVersion, JournalCodec.Version.bytes(0))
            }
        }
        // A new attachments key is on the disk before any file is sealed with it, whatever the
        // durability: a key lost to a power cut would leave every sealed file unopenable.
        if madeFileKey { try Self.run(options) { try environment.sync() } }
        try Self.rebuildProjections(environment: environment, schema: schema, options: options)
        schema.sealing.sealing = new
        schema.sealing.attachmentKey = fileKey
    }

    /// Learns the key the attachments' files are sealed with; an engine opening a journal
    /// encrypted before attachments were sealed makes one.
    func adoptAttachmentKey() throws(OutboxError) {
        let schema = self.schema
        let sealing = schema.sealing.sealing
        let stored = try read { txn in try txn.get(schema.meta, JournalSchema.MetaKey.attachmentKey) }
        if let stored {
            do {
                schema.sealing.attachmentKey = try AttachmentKeyRecord.decode(stored, sealing: sealing)
            } catch {
                throw .journalDamaged(path: environment.path, reason: "the attachments key in meta does not open with the journal's key")
            }
        } else if let sealing, !options.readOnly {
            let fileKey = SealingKey.random()
            try Self.run(options) {
                try environment.write { txn in
                    try txn.put(schema.meta, JournalSchema.MetaKey.attachmentKey, AttachmentKeyRecord.encode(fileKey, sealing: sealing))
                }
                // On the disk before any file is sealed with it (see `reseal`).
                try environment.sync()
            }
            schema.sealing.attachmentKey = fileKey
        }
    }

    /// Re-seals every value of one table of the record store.
    private static func reseal(_ table: LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record>, table kind: RecordStoreWrite.Table,
                               from old: JournalSealing?, to new: JournalSealing?, in txn: borrowing LMDBTransaction) throws {
        var entries: [(RecordKey, RecordStoreEntry)] = []
        try txn.scan(table) { entry in
            entries.append((try entry.key(), try entry.value()))
            return .next
        }
        for (key, var entry) in entries {
            var value = entry.value
            if let sealed = entry.sealedValue {
                guard let old else { continue }
                value = try old.unsealStoredValue(sealed, table: kind.rawValue, key: key)
            }
            guard let value else { continue }
            if let new {
                entry.sealedValue = new.sealStoredValue(value, table: kind.rawValue, key: key)
                entry.value = nil
            } else {
                entry.sealedValue = nil
                entry.value = value
            }
            try txn.put(table, key, entry)
        }
    }

    /// Re-seals one event's sealed fields (read with `old`) with `new`, or leaves them plaintext
    /// when `new` is `nil`; answers whether the event has any.
    private static func reseal(_ event: inout JournalEvent, from old: JournalSealing?, to new: JournalSealing?) throws -> Bool {
        switch event.body {
        case .enqueued(var enqueued):
            guard let id = event.operationID else { return false }
            enqueued.sealed = new?.seal(enqueued.request, id: id)
            for index in enqueued.changes.indices {
                guard let value = enqueued.changes[index].value else { continue }
                enqueued.changes[index].sealedValue = new?.sealRecordValue(value, id: id, key: enqueued.changes[index].key)
            }
            event.body = .enqueued(enqueued)
            return true
        case .attemptFinished(var finished):
            guard let id = event.operationID, let current = finished.serverCurrent else { return false }
            finished.sealedServerCurrent = new?.sealServerCurrent(current, id: id)
            event.body = .attemptFinished(finished)
            return true
        case .compacted(var compacted):
            var changed = false
            for index in compacted.operations.indices {
                guard var identity = compacted.operations[index].identity else { continue }
                let operation = compacted.operations[index].id
                var label = identity.entityLabel, summary = identity.summary
                if let sealed = identity.sealedPresentation {
                    guard let old else { continue }
                    let text = try old.unsealPresentation(sealed, id: operation)
                    (label, summary) = (text.label, text.summary)
                }
                if let new {
                    identity.sealedPresentation = new.sealPresentation(label: label, summary: summary, id: operation)
                    (identity.entityLabel, identity.summary) = ("", "")
                } else {
                    identity.sealedPresentation = nil
                    (identity.entityLabel, identity.summary) = (label, summary)
                }
                compacted.operations[index].identity = identity
                changed = true
            }
            event.body = .compacted(compacted)
            return changed
        default:
            return false
        }
    }
}
