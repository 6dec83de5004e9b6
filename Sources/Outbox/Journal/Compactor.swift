import Foundation
import OutboxCore

/// Runs compactions through the journal's writer, a chunk of operations at a time: used by
/// `Outbox.compact(before:)`, by the compaction policy, and by ``JournalRoom`` when the budget or
/// the file is full. The transaction that removes a chunk is ``JournalStore/compact(_:at:)``.
struct Compactor: Sendable {
    let store: JournalStore
    let writer: JournalWriter
    let log: EngineLog
    /// How long a rolled-back write of records is kept, and the clock that measures it.
    let retention: Retention

    /// A rolled-back write's values stay readable this long after it settled, by uptime.
    struct Retention: Sendable {
        var seconds: TimeInterval
        var clock: any OutboxClock
        var bootGapCapSeconds: TimeInterval

        init(_ configuration: OutboxConfiguration) {
            seconds = configuration.rolledBackRetentionSeconds
            clock = configuration.clock
            bootGapCapSeconds = configuration.retryPolicy.maxDelaySeconds
        }
    }

    /// Which settled rows a compaction takes.
    enum Selection: Sendable {
        /// Every settled row.
        case everySettled
        /// Rows whose last change was recorded before this wall-clock moment (the app's own
        /// horizon, ``Outbox/compact(before:)``).
        case settledBefore(Date)
        /// Rows settled at least this many seconds before `now`, measured by the device's uptime
        /// (the compaction policy's keep period).
        case settledFor(TimeInterval, now: DeviceMoment, bootGapCapSeconds: TimeInterval)

        func takes(_ state: OperationState) -> Bool {
            switch self {
            case .everySettled: true
            case .settledBefore(let horizon): state.changedAt < horizon
            case .settledFor(let seconds, let now, let cap):
                DeviceMoment.elapsed(from: state.changed, to: now, bootGapCapSeconds: cap) >= seconds
            }
        }
    }

    /// - Parameter reason: why it runs, for the log (`requested`, `policy`, `budget`, `file_full`).
    func compact(_ selection: Selection, reason: String) async throws -> Outbox.CompactionResult {
        var result = Outbox.CompactionResult(operations: 0, eventsRemoved: 0, compactedEvents: [])
        var chunk = JournalStore.compactionChunk
        while true {
            let now = DeviceMoment(wall: retention.clock.now(), uptime: retention.clock.uptime())
            let ids = try store.compactable(limit: chunk, retention: (retention.seconds, now, retention.bootGapCapSeconds), where: selection.takes)
            guard !ids.isEmpty else { break }
            let event: JournalEvent?
            do {
                event = try await writer.perform { store, now in
                    let event = try store.compact(ids, at: now)
                    return (event, event.map { [$0] } ?? [])
                }
            } catch OutboxError.storageFull where chunk > 1 {
                // A nearly full journal has little room for a transaction's copied pages: take
                // fewer operations at a time; the pages each frees serve the next.
                chunk /= 2
                continue
            }
            guard let event, case .compacted(let compacted) = event.body else { break }
            result.operations += compacted.operations.count
            result.eventsRemoved += compacted.removedCount
            result.compactedEvents.append(event.seq)
        }
        log.log(result.operations > 0 ? .info : .debug, "compaction finished", [
            EngineLog.Key.reason: .string(reason),
            EngineLog.Key.count: "\(result.operations)",
            EngineLog.Key.eventsRemoved: "\(result.eventsRemoved)",
            EngineLog.Key.seq: .array(result.compactedEvents.map { "\($0)" }),
        ])
        return result
    }
}
