import Foundation
package import Outbox
package import OutboxAudit

/// `ops --search`: what a member calls a write ("the crème", "Antiseptic"), matched against the
/// words the journal keeps of it, case and accents ignored.
package struct SearchText: Sendable {
    /// The text as typed.
    package let text: String
    private let folded: String

    package init(_ text: String) {
        self.text = text
        folded = Self.fold(text.trimmingCharacters(in: .whitespaces))
    }

    /// Whether the operation's label, summary, category, entity or type contains the text. A
    /// sealed label matches only when the journal was opened with its key (it reads "(sealed)"
    /// otherwise); a row compacted before labels were kept has only its type.
    package func matches(_ state: OperationState) -> Bool {
        var fields = [state.operationType]
        if state.keptRequest {
            fields += [state.category, state.entityID ?? ""]
            if state.sealedPresentation == nil || state.entityLabel != Self.sealedText { fields += [state.entityLabel, state.summary] }
        }
        return fields.contains { Self.fold($0).contains(folded) }
    }

    /// What a sealed label or summary reads without the journal's key.
    static let sealedText = "(sealed)"

    /// Lower case, without accents: "Crème" and "CREME" fold alike.
    static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }
}
