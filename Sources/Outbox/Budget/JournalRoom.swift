import Foundation
import OutboxCore

/// Keeps the journal within its ``StorageBudget``: measures, compacts and refuses as the policy
/// decides. The one place the budget's decisions are carried out, for an enqueue and for the
/// worker's own events alike.
struct JournalRoom: Sendable {
    let store: JournalStore
    let writer: JournalWriter
    let budget: StorageBudget
    let log: EngineLog
    /// How long rolled-back writes of records are kept from compaction.
    let retention: Compactor.Retention

    /// Makes sure the journal can take one more write carrying `payloadBytes`, before anything is
    /// written: compacts every settled operation past the threshold, refuses a write that would
    /// reach into the worker's reserve.
    /// - Throws: ``OutboxError/storageFull(limitBytes:errno:)`` when nothing more can be freed; a
    ///   storage error when the journal cannot be measured.
    private func ensureRoom(forPayloadBytes payloadBytes: Int) async throws {
        var reading = StorageBudget.Reading(payloadBytes: payloadBytes)
        do {
            reading.usedBytes = try store.environment.info().usedBytes
        } catch {
            log.problem(.journalRead, "could not read the journal's written size; measuring its live data instead", error: error)
        }
        while true {
            switch budget.action(for: reading) {
            case .proceed:
                return
            case .measure:
                reading.unsettledRows = try store.queries.unsettledCount()
                reading.liveBytes = try liveBytes()
            case .compactFirst:
                await compactSettled(reason: "budget")
                reading.compacted = true
                reading.liveBytes = try liveBytes()
            case .refuse:
                log.log(.notice, "write refused: the journal's storage budget is reached", [
                    EngineLog.Key.liveBytes: "\(reading.liveBytes ?? 0)",
                    EngineLog.Key.budgetBytes: "\(budget.budgetBytes)",
                    EngineLog.Key.count: "\(reading.unsettledRows ?? 0)",
                ])
                throw OutboxError.storageFull(limitBytes: budget.budgetBytes)
            }
        }
    }

    /// Appends a unit that brings new data (a member's write: an enqueue, a save, a revision, a
    /// resolution keeping the member's version, a local record; or a pulled page), making room
    /// first: the budget's check before anything is written (``ensureRoom(forPayloadBytes:)``),
    /// and, when the file is full (its free pages still held by readers, or the disk full), every
    /// settled row compacted once before the refusal stands. The one call such a write makes.
    /// - Throws: ``OutboxError/storageFull(limitBytes:errno:)``; as ``JournalWriter/append(_:)``.
    func appendMakingRoom(_ unit: [JournalStore.Draft], payloadBytes: Int) async throws -> [JournalEvent] {
        try await ensureRoom(forPayloadBytes: payloadBytes)
        var compacted = false
        while true {
            do {
                return try await writer.append(unit)
            } catch OutboxError.storageFull where budget.actionAfterFullFile(compacted: compacted) == .compactFirst {
                log.log(.notice, "the journal's file is full: compacting settled rows, then trying once more")
                await compactSettled(reason: "file_full")
                compacted = true
            }
        }
    }

    /// Appends one unit of the engine's own events (outcomes, a person's decisions, sign-out's
    /// discards, an attempt's start, a pass's bookkeeping), as one commit's part: its events land
    /// together or not at all. It writes into the room the budget keeps back from members'
    /// writes, and never compacts (no compaction runs in the middle of a pass): a file full even
    /// so refuses, and the caller does not go on (an `attemptStarted` refused leaves its row
    /// queued and unsent).
    /// - Throws: as ``JournalWriter/append(_:)``.
    func append(_ unit: [JournalStore.Draft]) async throws -> [JournalEvent] {
        try await writer.append(unit)
    }

    /// Appends several units of the engine's own events, each landing whole or not at all,
    /// sharing commits; each unit's result in order.
    func appendEach(_ units: [[JournalStore.Draft]]) async -> [Result<[JournalEvent], any Error>] {
        await writer.appendEach(units)
    }

    /// Compacts every settled operation; a failure is a problem, not an error: the write that
    /// asked for room is then measured or tried as it is.
    private func compactSettled(reason: String) async {
        do {
            _ = try await Compactor(store: store, writer: writer, log: log, retention: retention).compact(.everySettled, reason: reason)
        } catch {
            log.problem(.compactionFailed, "compacting settled rows to make room failed", error: error, [EngineLog.Key.reason: .string(reason)])
        }
    }

    /// The bytes of the journal holding live data (pages in use, less those free for reuse).
    private func liveBytes() throws(OutboxError) -> Int {
        do {
            return try store.environment.liveBytes()
        } catch {
            throw OutboxError(storage: error, limitBytes: budget.budgetBytes)
        }
    }
}
