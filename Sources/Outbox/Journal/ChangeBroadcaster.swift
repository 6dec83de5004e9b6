import Foundation
import OutboxCore
import Synchronization

/// What one commit changed.
public struct OutboxChange: Sendable, Equatable {
    /// The seqs the commit appended.
    public var seqs: ClosedRange<JournalSequence>
    /// The operations it touched.
    public var operations: Set<OperationID>
    /// The kinds of event it appended.
    public var kinds: Set<JournalEventKind>
    /// The member's records whose view it may have changed: those its writes changed (any change
    /// of their status moves the view), confirmed, wrote locally or acknowledged.
    public var records: Set<RecordKey>

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
}

/// Hands every commit's change to each subscriber's stream.
final class ChangeBroadcaster: Sendable {
    private struct Subscribers {
        var streams: [Int: AsyncStream<OutboxChange>.Continuation] = [:]
        /// Set once the outbox closed: a stream asked for later ends at once.
        var isFinished = false
    }

    private let subscribers = Mutex(Subscribers())
    private let nextID = Atomic<Int>(0)
    /// The records a commit's events may have changed (read once per commit, only when someone
    /// listens).
    private let recordsTouched: @Sendable ([JournalEvent]) -> Set<RecordKey>

    init(recordsTouched: @escaping @Sendable ([JournalEvent]) -> Set<RecordKey> = { _ in [] }) {
        self.recordsTouched = recordsTouched
    }

    func subscribe() -> AsyncStream<OutboxChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: OutboxChange.self)
        let id = nextID.add(1, ordering: .relaxed).newValue
        let open = subscribers.withLock { subscribers in
            guard !subscribers.isFinished else { return false }
            subscribers.streams[id] = continuation
            return true
        }
        guard open else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ events: [JournalEvent]) {
        let continuations = subscribers.withLock { $0.streams.isEmpty ? [] : Array($0.streams.values) }
        // Nobody listening: the change is not even built.
        guard !continuations.isEmpty, let change = OutboxChange(events: events, records: recordsTouched(events)) else { return }
        for continuation in continuations {
            continuation.yield(change)
        }
    }

    /// Ends every stream: the outbox closed.
    func finish() {
        let all = subscribers.withLock { subscribers in
            subscribers.isFinished = true
            defer { subscribers.streams.removeAll() }
            return Array(subscribers.streams.values)
        }
        for continuation in all { continuation.finish() }
    }
}
