import Foundation
import OutboxCore
import OutboxWire
import OutboxCrypto
import OutboxStorage

extension JournalSchema {
    /// Whether the records `state` changed no longer need its events: no record shows its value
    /// confirmed, and a rolled-back one is past the retention.
    func recordsLetGo(of state: OperationState, retention: (seconds: TimeInterval, now: DeviceMoment, bootGapCapSeconds: TimeInterval)?,
                      in txn: borrowing LMDBTransaction) throws -> Bool {
        guard !state.records.isEmpty else { return true }
        if state.status == .synced {
            let write = RecordView.Write(state: state, change: nil)
            var feeds: [String: FeedPosition?] = [:]
            for key in state.awaitingServerValue {
                // Still confirmed: the server's value is not back for it yet.
                if feeds[key.business] == nil { feeds[key.business] = .some(try feedRow(business: key.business, in: txn)?.cursor) }
                let stored = try txn.get(activeBase(business: key.business, in: txn), key).map { LocalRecord.ServerBase(value: nil, revision: $0.revision, learntAt: $0.learntAt, seq: $0.seq) }
                guard RecordView.isRetired(write, base: stored, feed: feeds[key.business] ?? nil) else { return false }
            }
        }
        if state.rolledBackSeq != nil, let retention {
            return DeviceMoment.elapsed(from: state.changed, to: retention.now, bootGapCapSeconds: retention.bootGapCapSeconds) >= retention.seconds
        }
        return true
    }
}
