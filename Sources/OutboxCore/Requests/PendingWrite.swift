/// One write not yet settled, as a member or support names it: what a refused sign-out lists,
/// and what an export of pending work carries and an import reports.
///
/// ```swift
/// PendingWrite(operationID: id, category: "Products", entityLabel: "Antiseptic 500 ml",
///              summary: "price 4.20", status: .queued).description
/// // "Products · Antiseptic 500 ml (price 4.20)"
/// ```
public struct PendingWrite: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The operation's id; its UUID string is its idempotency key.
    public var operationID: OperationID
    /// The Sync tab card it appears under, e.g. `"Products"`.
    public var category: String
    /// What the member calls the record, e.g. `"Antiseptic 500 ml"`.
    public var entityLabel: String
    /// What the write does, e.g. `"price 4.20"`.
    public var summary: String
    /// Where it stood when it was listed: queued, syncing, failed, blocked or conflicted.
    public var status: OutboxStatus
    /// The names of the files it carries (``Attachment``): a sign-out that would drop it drops
    /// them too, so the refusal names them.
    public var attachments: [String]

    public init(operationID: OperationID, category: String, entityLabel: String, summary: String, status: OutboxStatus,
                attachments: [String] = []) {
        self.operationID = operationID
        self.category = category
        self.entityLabel = entityLabel
        self.summary = summary
        self.status = status
        self.attachments = attachments
    }

    /// "Products · Antiseptic 500 ml (price 4.20)"; a row a person must decide about says why
    /// ("…(price 4.20, conflicted)"): a queued or syncing one only waits for the network. Its
    /// files are named: "…(New product, with note.jpg)".
    public var description: String {
        let why: String? = switch status {
        case .failed: "refused by the server"
        case .blocked: "blocked"
        case .conflicted: "changed elsewhere meanwhile"
        default: nil
        }
        let files = attachments.isEmpty ? nil : "with " + attachments.joined(separator: ", ")
        let details = [summary.isEmpty ? nil : summary, files, why].compactMap { $0 }.joined(separator: ", ")
        let name = category.isEmpty ? entityLabel : "\(category) · \(entityLabel)"
        return details.isEmpty ? name : "\(name) (\(details))"
    }
}
