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

    /// Makes sure the journal can take one more write carrying `payloadBytes`, before anything is
    /// written: compacts every settled operation past the threshold, refuses a write that would
    /// reach into the worker's reserve.
    /// - Throws: ``OutboxError/storageFull(limitBytes:errno:)`` when nothing more can be freed; a
    ///   storage error when the journal cannot be measured.
    func ensureRoom(forPayloadBytes payloadBytes: Int) async throws {
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

    /// Appends one unit. When the file itself is full (its free pages still held by readers, or
    /// the disk full), settled rows make room, once; after that the refusal stands.
    /// - Throws: as ``JournalWriter/append(_:)``.
    func append(_ unit: [JournalStore.Draft]) async throws -> [JournalEvent] {
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

    /// Compacts every settled operation; a failure is a problem, not an error: the write that
    /// asked for room is then measured or tried as it is.
    private func compactSettled(reason: String) async {
        do {
            _ = try await Compactor(store: store, writer: writer, log: log).compact(before: .distantFuture, reason: reason)
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
