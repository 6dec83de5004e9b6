import Foundation

/// The fold's transitions of one concept. What holds a queued row back from being sent: a rolled-
/// back write it is built on, its record deleted on the server, a claim the server may have
/// forgotten, a dependency that ended.
extension Fold {
    static func heldOnRollback(_ held: HeldOnRollback, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .queued else { throw step.illegal("only a queued row is held behind a rolled-back write") }
        guard !next.records.isEmpty else { throw step.illegal("only a write of records is built on another") }
        guard held.builtOn != step.id else { throw step.illegal("a write cannot be built on itself") }
        next.status = .conflicted
        next.heldOn = held.builtOn
        next.nextAttemptAt = nil
        next.lastErrorCode = ErrorCode.builtOnRolledBack
        next.lastErrorMessage = "This change was made on top of an earlier one that did not go through. Check it, then keep it, change it or discard it."
    }

    static func deletedOnServer(_ deleted: DeletedOnServer, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .queued else { throw step.illegal("only a queued row learns that its record was deleted on the server") }
        guard next.records.contains(deleted.key) else { throw step.illegal("the write did not change \(deleted.key)") }
        next.status = .conflicted
        next.nextAttemptAt = nil
        next.serverRevision = String(deleted.revision)
        next.serverCurrent = nil
        next.lastErrorCode = ErrorCode.deletedOnServer
        next.lastErrorMessage = "This record was deleted on the server while your change waited. Keep your version to create it again, or discard your change."
    }

    static func claimMayBeForgotten(_ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .queued, next.firstAttemptAt != nil else {
            throw step.illegal("only a queued row sent before may outlive the server's claim on its key")
        }
        next.status = .blocked
        next.nextAttemptAt = nil
        next.lastErrorCode = ErrorCode.claimMayBeForgotten
        next.lastErrorMessage = "This change was first sent so long ago that the server may have forgotten it. Check whether it went through, then send it again or discard it."
    }

    static func dependencyEnded(_ ended: DependencyEnded, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        guard next.status == .queued else { throw step.illegal("only a queued row waits for its dependencies") }
        guard ended.status == .discarded || ended.status == .withdrawn else {
            throw step.illegal("a dependency that ended \(ended.status) does not block")
        }
        next.status = .blocked
        next.nextAttemptAt = nil
        next.endedDependency = ended.dependency
        next.lastErrorCode = ErrorCode.dependencyEnded
        next.lastErrorMessage = ended.status == .discarded
            ? "A change this one needs was discarded, so it cannot be sent as it is."
            : "A change this one needs was refused by the server, so it cannot be sent as it is."
    }
}
