import Outbox
import OutboxAudit
import TestHarness

/// The rules one seed configures the engine with: what a revision conflict does for each edit
/// type, which types coalesce, whether the retry policy gives up, and how often an edit takes its
/// `If-Match` from the record's server base. Every type the workload writes is listed, as an app
/// lists its own: the engine refuses a type it was not told of; so is every record type.
struct SimulationScenario: Sendable, CustomStringConvertible {
    /// A price change: `PATCH /items/<name>`.
    static let priceEdit = "item.price"
    /// A whole-record draft: `PUT /items/<name>`.
    static let draftEdit = "item.draft"
    static let editTypes: Set<String> = [priceEdit, draftEdit]
    /// The types whose policy no seed changes: a create and a stock movement, each replayed
    /// under its `Idempotency-Key`.
    static let fixedPolicies: [String: OperationTypePolicy] = [
        "product.create": .idempotent, "product.delete": .idempotent, "stock.move": .idempotent,
    ]

    /// The business every write and record belongs to.
    static let business = "pharmacy-7"
    /// The server's records the edits change (`item-1`...), the products the creates make and
    /// the deletes remove, and the member's drafts, which are never sent.
    static let itemType = "item"
    static let productType = "product"
    static let draftType = "draft"
    static let recordTypes: [String: OutboxConfiguration.RecordTypePolicy] = [
        itemType: OutboxConfiguration.RecordTypePolicy(), productType: OutboxConfiguration.RecordTypePolicy(),
        draftType: .localOnly,
    ]

    /// Every type's policy, as the engine is configured with it.
    var operationPolicies: [String: OperationTypePolicy]
    var retryPolicy: OperationTypePolicy.RetryPolicy
    /// The chance, in percent, that an edit of a record the phone has a base for (or a pending
    /// write of) asks for its `If-Match` from that base as it is sent (`revisionFrom`) rather
    /// than naming the revision the member knows.
    var revisionFromPercent: Int

    /// Draws the rules from `random`.
    init(random: inout SeededRandom) {
        func rule() -> OperationTypePolicy.ConflictRule {
            switch random.int(in: 0..<10) {
            case 0..<4: .askMember
            case 4..<6: .serverWins
            default: .rebase(maxTimes: random.int(in: 1..<4))
            }
        }
        var price = OperationTypePolicy.idempotent.onConflict(rule())
        var draft = OperationTypePolicy.idempotent.onConflict(rule())
        if random.chance(50) { draft.coalesces = true }
        if random.chance(25) { price.coalesces = true }
        operationPolicies = Self.fixedPolicies
        operationPolicies[Self.priceEdit] = price
        operationPolicies[Self.draftEdit] = draft
        retryPolicy = .standard
        if random.chance(40) {
            // Gives up after a few attempts, and for some seeds after an age as well.
            retryPolicy = retryPolicy.givingUp(
                afterAttempts: random.int(in: 2..<7),
                orAge: random.chance(50) ? Double(random.int(in: 300..<3600)) : nil
            )
        }
        // Drawn last, so the rules above are the ones each seed drew before records.
        revisionFromPercent = [0, 40, 80][random.int(in: 0..<3)]
    }

    /// The rules of the storm of uploads (``AttachmentSimulation``): its writes are creates
    /// replayed under their keys, and `retryPolicy` never gives up, so every write settles once
    /// the network heals.
    init(uploads operationType: String, retryPolicy: OperationTypePolicy.RetryPolicy) {
        operationPolicies = Self.fixedPolicies
        operationPolicies[operationType] = .idempotent
        self.retryPolicy = retryPolicy
        revisionFromPercent = 0
    }

    func conflictRule(for operationType: String) -> OperationTypePolicy.ConflictRule {
        operationPolicies[operationType]?.conflictRule ?? .askMember
    }

    /// Whether a write of `operationType` replaces its lane's last unsent one of the type.
    func coalesces(_ operationType: String) -> Bool {
        operationPolicies[operationType]?.coalesces ?? false
    }

    var retryDescription: String {
        guard retryPolicy.maxAttempts != nil || retryPolicy.maxAgeSeconds != nil else { return "a policy that never gives up" }
        let attempts = retryPolicy.maxAttempts.map { "\($0) attempts" }
        let age = retryPolicy.maxAgeSeconds.map { "\(Int($0)) s" }
        return "a policy giving up after " + [attempts, age].compactMap { $0 }.joined(separator: " or ")
    }

    /// One line for the trace.
    var description: String {
        let rules = [Self.priceEdit, Self.draftEdit].map { type in
            "\(type) \(Self.describe(conflictRule(for: type)))\(coalesces(type) ? ", coalescing" : "")"
        }
        return "configuration: \(rules.joined(separator: "; ")); \(retryDescription); \(revisionFromPercent)% of edits take If-Match from the record's base"
    }

    private static func describe(_ rule: OperationTypePolicy.ConflictRule) -> String {
        switch rule {
        case .askMember: "asks the member"
        case .serverWins: "server wins"
        case .rebase(let maxTimes): "rebases up to \(maxTimes)x"
        }
    }
}
