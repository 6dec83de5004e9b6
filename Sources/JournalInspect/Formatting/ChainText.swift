import Foundation
import Outbox
import OutboxAudit

/// The chains an operation is part of, in words: what it replaces, what replaced it, what it
/// waits for.
enum ChainText {
    /// The timeline's fields for `state`'s chains; none for a write in no chain.
    static func fields(of state: OperationState) -> [(String, String)] {
        var fields: [(String, String)] = []
        if let supersedes = state.supersedes { fields.append(("Replaces", replaces(supersedes))) }
        if let by = state.supersededBy {
            fields.append(("Replaced by", "\(by.idempotencyKey) (\(reason(state.supersededReason)))"))
        }
        if !state.dependsOn.isEmpty {
            let ids = state.dependsOn.map(\.idempotencyKey).joined(separator: ", ")
            fields.append(("Depends on", "\(ids) (sent only once \(state.dependsOn.count == 1 ? "it is" : "each is") synced)"))
        }
        if let ended = state.endedDependency {
            fields.append(("Held by", "\(ended.idempotencyKey), which it depends on, ended unapplied: a person decides"))
        }
        return fields
    }

    /// "corrects 1A2B3C4D (...)": the enqueue of a write that replaces another.
    static func replaces(_ supersedes: Supersession) -> String {
        "\(verb(supersedes.reason)) \(EventText.shortID(supersedes.operation))"
    }

    private static func verb(_ reason: SupersedeReason) -> String {
        switch reason {
        case .revised: "corrects"
        case .resolvedMine: "resolves the conflict of"
        case .coalesced: "coalesces"
        }
    }

    private static func reason(_ reason: SupersedeReason?) -> String {
        switch reason {
        case .revised?: "the member corrected it"
        case .resolvedMine?: "the member chose their version over the server's"
        case .coalesced?: "coalesced into a newer write of the same record before it was sent"
        case nil: "replaced"
        }
    }
}
