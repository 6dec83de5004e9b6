/// Which writes may wait in the queue (see `Docs/replay.md`).
///
/// A write may be queued only if its replay can be proved either way: the server applies it at
/// most once however often it is sent, and the device holds everything it needs.
public enum OperationPolicy: String, Sendable, Codable {
    /// A create carrying its client-generated id and `Idempotency-Key`: the server replays the
    /// stored outcome for a repeat. The default.
    case idempotent
    /// A transition reachable from one state only (e.g. delivered): a 409 on a replay proves it
    /// was already applied, so it settles as synced, recorded as a replay.
    case terminalTransition
    /// Never queued: a replay could not be told apart from a conflict. `enqueue` refuses it.
    case onlineOnly
}
