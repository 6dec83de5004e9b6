import Foundation
import OutboxCore
import OutboxStorage

/// What a queued row waits for, answered from the stored projections inside one transaction.
extension JournalSchema {
    /// The most replacements followed from one operation to the one that stands for it now.
    static let maxSupersedeChain = 64

    /// The operation that stands for `id` now: itself, or the end of the chain of operations that
    /// replaced it (a correction, a resolution, a coalesced write). `nil` when it is not known.
    func standing(_ id: OperationID, in txn: borrowing LMDBTransaction) throws -> OperationState? {
        var current = try state(id, in: txn)
        var hops = 0
        while let next = current?.supersededBy, hops < Self.maxSupersedeChain {
            guard let replacement = try state(next, in: txn) else { break }
            current = replacement
            hops += 1
        }
        return current
    }

    /// Whether `state`'s dependencies let it be sent: each, or what replaced it, synced.
    func dependencyGate(of state: OperationState, in txn: borrowing LMDBTransaction) throws -> DependencyGate {
        for dependency in state.dependsOn {
            guard let standing = try standing(dependency, in: txn) else {
                // Named at enqueue, so known then: only a damaged journal loses it.
                return .waiting(on: dependency, status: nil)
            }
            switch standing.status {
            case .synced:
                continue
            case .discarded, .withdrawn:
                return .ended(dependency: standing.id, status: standing.status)
            default:
                return .waiting(on: standing.id, status: standing.status)
            }
        }
        return .ready
    }

    /// What a queued row waits for now: the 401 pause, the session, a dependency, an earlier row
    /// of its lane, or its scheduled moment; `nil` when it is due and nothing holds it (and for
    /// every other status: the status itself says what it waits for).
    func waitingOn(_ state: OperationState, engine: EngineState, now: Date, in txn: borrowing LMDBTransaction) throws -> WaitingOn? {
        guard state.status == .queued else { return nil }
        if engine.isPaused { return .sessionPaused(since: engine.pausedAt) }
        switch engine.session {
        case .signedOut: return .noSession
        case .otherAccount: return .otherAccount
        case .signedIn: break
        }
        if case .waiting(let dependency, let status) = try dependencyGate(of: state, in: txn) {
            return .dependency(dependency, status)
        }
        if let head = try laneHead(state.lane, in: txn), head != state.id {
            return .laneHead(head, try self.state(head, in: txn)?.status)
        }
        if let due = state.nextAttemptAt, due > now { return .scheduled(due) }
        return nil
    }
}

/// Whether a queued row's dependencies let it be sent.
enum DependencyGate: Equatable {
    case ready
    /// A dependency (or what replaced it) is not synced yet.
    case waiting(on: OperationID, status: OutboxStatus?)
    /// A dependency's chain ended without being applied: the row cannot be sent as it is.
    case ended(dependency: OperationID, status: OutboxStatus)
}
