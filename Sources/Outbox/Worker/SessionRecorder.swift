import OutboxCore

/// Records who the worker finds signed in, once per change, so an audit can explain a delay and
/// what a queued row is said to wait for never names a session that has come back or gone.
struct SessionRecorder: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let configuration: OutboxConfiguration
    let log: EngineLog

    /// `sessionChanged` for `observation`, when it differs from what the journal last recorded;
    /// none otherwise.
    func change(to observation: SessionObservation, recorded: SessionObservation) -> [JournalStore.Draft] {
        observation == recorded ? [] : [JournalStore.Draft(operationID: nil, body: .sessionChanged(SessionChanged(observation: observation)))]
    }

    /// Asks the session who is signed in and records it when it changed. A pass calls it first,
    /// so that a pass with nothing to start (every queued row waiting on a dependency, say)
    /// still records a sign-in or a sign-out.
    func recordIfChanged() async {
        let account = await configuration.session.currentAccount()
        let observation = SessionObservation(signedIn: account, journalAccount: configuration.account)
        let schema = store.schema
        let recorded: SessionObservation
        do {
            recorded = try store.read { txn in try schema.engineState(in: txn).session }
        } catch {
            log.problem(.journalRead, "could not read who was last recorded signed in; the next attempt records it", error: error)
            return
        }
        await record(change(to: observation, recorded: recorded))
    }

    /// Records a drafted change; a failure is logged and the next pass records it.
    func record(_ change: [JournalStore.Draft]) async {
        guard !change.isEmpty else { return }
        do {
            _ = try await room.append(change)
        } catch {
            log.problem(.factNotRecorded, "could not record who is signed in; the next pass tries again", error: error)
        }
    }
}
