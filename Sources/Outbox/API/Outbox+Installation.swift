import Foundation
import OutboxCore

extension Outbox {
    /// The installation this journal's writes were made on, when it is open on another one
    /// (``OutboxConfiguration/installation`` differs: a backup restored onto another device, a
    /// journal copied over); `nil` otherwise. While it is set, nothing is sent: each pending
    /// write waits (``OperationSnapshot.WaitingOn/otherInstallation(madeOn:)``) until ``adoptInstallation()``.
    ///
    /// ```swift
    /// if let madeOn = try outbox.restoredInstallation() {
    ///     // Ask the member (or check with the server) before the writes made there are sent.
    ///     try await outbox.adoptInstallation()
    /// }
    /// ```
    public func restoredInstallation() throws -> String? {
        try engineState().foreignInstallation?.madeOn
    }

    /// Revalidates the pending writes of a journal opened on another installation than the one
    /// they were made on: they belong to this installation from now on (`installationAdopted`)
    /// and the worker sends them, each under its own key, so a write the old device already
    /// sent is answered from the server's claim, not applied twice.
    /// - Returns: whether there was anything to adopt.
    @discardableResult
    public func adoptInstallation() async throws -> Bool {
        try ensureOpen()
        guard let foreign = try engineState().foreignInstallation else { return false }
        let events = try await room.append([JournalStore.Draft(
            operationID: nil, body: .installationAdopted(InstallationAdopted(previous: foreign.madeOn, installation: foreign.openedOn))
        )])
        log.log(.notice, "installation adopted: the writes made on another installation are sent", [
            EngineLog.Key.seq: .string(events.first.map { "\($0.seq)" } ?? ""),
        ])
        await worker.wake(.sessionResumed)
        return true
    }
}
