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

/// What the engine does when the server answers that the record changed elsewhere (412, or 409
/// `revision_conflict`), per operation type. Every decision it makes is an event in the history.
public enum ConflictRule: Sendable, Equatable {
    /// The row becomes `conflicted`, on the badge and the Sync tab's "Changed elsewhere" card,
    /// until the member keeps theirs or the server's. The default.
    case askMember
    /// The server's version wins: the row is discarded, with that reason.
    case serverWins
    /// The same operation, under the same key, is sent again against the server's revision, at
    /// most `maxTimes` times; after that the member decides. For whole-record drafts one member
    /// owns, where the server's changes are the member's own from another device.
    case rebase(maxTimes: Int)
}
