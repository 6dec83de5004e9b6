import Foundation
import OutboxCore
import OutboxStorage

/// What can still be read of a journal LMDB cannot open: its records, found page by page.
///
/// Every record carries its own checksum and seq, so a record read from any page is either
/// whole or refused: nothing damaged is taken for data. The pages are read in file order with
/// bounds-checked reads, never through LMDB, so no damage can make the read fault. Pages LMDB had
/// freed may still hold records of operations since compacted; a record is the same wherever it
/// is found, so each seq counts once.
struct JournalSalvage {
    /// The records found, by seq.
    var events: [JournalSequence: JournalEvent] = [:]
    /// Records found whose checksum or layout failed.
    var damagedRecords = 0
    /// What the page-by-page read saw.
    var scan: LMDBDataFile.SalvageScan

    /// Reads every record the data file in `directory` still holds.
    /// - Parameter sealing: opens sealed payloads and labels; without it they stay sealed.
    init(directory: URL, sealing: JournalSealing?) throws(OutboxError) {
        let path = directory.appendingPathComponent(JournalStore.FileName.data).path
        var found: [JournalSequence: JournalEvent] = [:]
        var damaged = 0
        let scan: LMDBDataFile.SalvageScan
        do throws(LMDBDataFile.Problem) {
            scan = try LMDBDataFile.salvage(path: path) { key, value in
                // An event's key is its seq, eight bytes big-endian; other databases' entries
                // do not decode as records, and are passed over.
                guard key.count == 8, RecordCodec.looksLikeRecord(value, key: key) else { return }
                let seq = JournalSequence(rawValue: key.reduce(0) { $0 << 8 | UInt64($1) })
                guard found[seq] == nil else { return }
                // Sealed fields that do not open (no key, another key) leave the record sound.
                if let event = (try? RecordCodec.decode(value, seq: seq, unseal: sealing?.unsealer))
                    ?? (try? RecordCodec.decode(value, seq: seq))
                {
                    found[seq] = event
                } else {
                    damaged += 1
                }
            }
        } catch {
            throw .notAJournal(path: directory.path, reason: error.reason)
        }
        self.scan = scan
        events = found
        damagedRecords = damaged
    }

    /// Each operation's state folded from the records found, in seq order. An event the fold
    /// refuses (one before it is missing) is skipped: the state is what the rest shows.
    func operations() -> [OperationID: OperationState] {
        var states: [OperationID: OperationState] = [:]
        for seq in events.keys.sorted() {
            guard let event = events[seq], let id = event.operationID else { continue }
            var state = states[id]
            if (try? Fold.apply(event, to: &state)) != nil, let state { states[id] = state }
        }
        return states
    }
}
