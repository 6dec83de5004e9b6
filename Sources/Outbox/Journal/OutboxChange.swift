import Foundation
import OutboxCore

/// The changes of every commit from the moment ``Outbox/changes(buffering:)`` was called, until
/// the outbox closes. One reader takes them (a second iterator shares the same buffer); dropping
/// the sequence and its iterator ends the subscription.
public struct OutboxChanges: AsyncSequence, Sendable {
    public typealias Element = OutboxChanges.Change
    let subscription: ChangeSubscription

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: ChangeSubscription
        public mutating func next() async -> OutboxChanges.Change? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: subscription) }
}

extension OutboxChanges {
    /// How a stream of ``Outbox/changes(buffering:)`` holds the changes its reader has not taken yet.
    public enum Buffering: Sendable, Equatable {
        /// At most `limit` changes wait; past it the two oldest are merged into one
        /// (``OutboxChanges.Change/coalesced`` counts the commits merged away), so a reader that falls behind
        /// holds bounded memory and still learns of every operation and record a commit touched.
        case coalescing(limit: Int)
        /// Every commit its own change, however far the reader falls behind (memory grows with it).
        case unbounded

        /// The newest 64 apart, the older merged.
        public static let standard = OutboxChanges.Buffering.coalescing(limit: 64)
    }
}

extension OutboxChanges {
    /// What one commit changed.
    public struct Change: Sendable, Equatable {
        /// The seqs the commit appended.
        public var seqs: ClosedRange<JournalSequence>
        /// The operations it touched.
        public var operations: Set<OperationID>
        /// The kinds of event it appended.
        public var kinds: Set<JournalEventKind>
        /// The member's records whose view it may have changed: those its writes changed (any change
        /// of their status moves the view), confirmed, wrote locally or acknowledged.
        public var records: Set<RecordKey>
        /// How many later commits were merged into this change because its reader fell behind
        /// (``OutboxChanges.Buffering/coalescing(limit:)``): its seqs, operations, kinds and records are the
        /// union of them all. 0 for one commit.
        public var coalesced = 0

        public init(seqs: ClosedRange<JournalSequence>, operations: Set<OperationID>, kinds: Set<JournalEventKind>, records: Set<RecordKey> = []) {
            self.seqs = seqs
            self.operations = operations
            self.kinds = kinds
            self.records = records
        }

        init?(events: [JournalEvent], records: Set<RecordKey>) {
            guard let first = events.first?.seq, let last = events.last?.seq else { return nil }
            self.seqs = first...last
            self.operations = Set(events.compactMap(\.operationID))
            self.kinds = Set(events.map(\.kind))
            self.records = records
        }

        /// This change and `later` as one: what a reader that missed both must react to.
        func merged(with later: OutboxChanges.Change) -> OutboxChanges.Change {
            var merged = OutboxChanges.Change(seqs: Swift.min(seqs.lowerBound, later.seqs.lowerBound)...Swift.max(seqs.upperBound, later.seqs.upperBound),
                                      operations: operations.union(later.operations), kinds: kinds.union(later.kinds),
                                      records: records.union(later.records))
            merged.coalesced = coalesced + later.coalesced + 1
            return merged
        }
    }
}
