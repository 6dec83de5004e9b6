
/// Everything the engine is told about one operation type, in one value: how a replay of it is
/// proved (``replay``), what a revision conflict does (``conflictRule``), and whether a new write
/// replaces the entity lane's last unsent one (``coalesces``).
///
/// ```swift
/// operationPolicies: [
///     "product.create": .idempotent,
///     "product.update": .idempotent.coalescing().onConflict(.rebase(maxTimes: 3)),
///     "dispatch.deliver": .terminalTransition,   // a 409 on replay proves it applied
///     "dispatch.cancel": .onlineOnly,            // never queued
/// ]
/// ```
public struct OperationTypePolicy: Sendable, Equatable {
    /// How a replay of the type is proved (``OperationTypePolicy.Replay``).
    public var replay: OperationTypePolicy.Replay
    /// What a revision conflict (412, or 409 `revision_conflict`) does.
    public var conflictRule: OperationTypePolicy.ConflictRule
    /// Whether a new write of the type to an entity replaces the entity lane's last row when it is
    /// of the same type and was never attempted (the replaced row becomes `superseded`, reason
    /// `coalesced`, its payload kept in the history).
    public var coalesces: Bool

    public init(replay: OperationTypePolicy.Replay, conflictRule: OperationTypePolicy.ConflictRule = .askMember, coalesces: Bool = false) {
        self.replay = replay
        self.conflictRule = conflictRule
        self.coalesces = coalesces
    }

    /// A create carrying its client-generated id and `Idempotency-Key`.
    public static let idempotent = OperationTypePolicy(replay: .idempotent)
    /// A transition reachable from one state only: a 409 on a replay proves it applied.
    public static let terminalTransition = OperationTypePolicy(replay: .terminalTransition)
    /// Never queued: `enqueue` refuses it, and `canQueue` says so before the member confirms.
    public static let onlineOnly = OperationTypePolicy(replay: .onlineOnly)

    /// This policy with `rule` for revision conflicts.
    public func onConflict(_ rule: OperationTypePolicy.ConflictRule) -> OperationTypePolicy {
        var policy = self
        policy.conflictRule = rule
        return policy
    }

    /// This policy with coalescing on (or off).
    public func coalescing(_ on: Bool = true) -> OperationTypePolicy {
        var policy = self
        policy.coalesces = on
        return policy
    }
}

extension OperationTypePolicy {
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
}

extension OperationTypePolicy {
    /// Which writes may wait in the queue (see `Docs/replay.md`).
    ///
    /// A write may be queued only if its replay can be proved either way: the server applies it at
    /// most once however often it is sent, and the device holds everything it needs.
    public enum Replay: String, Sendable, Codable {
        /// A create carrying its client-generated id and `Idempotency-Key`: the server replays the
        /// stored outcome for a repeat. What a journaled row of a type no longer listed is sent as.
        case idempotent
        /// A transition reachable from one state only (e.g. delivered): a 409 on a replay proves it
        /// was already applied, so it settles as synced, recorded as a replay.
        case terminalTransition
        /// Never queued: a replay could not be told apart from a conflict. `enqueue` refuses it.
        case onlineOnly
    }
}
