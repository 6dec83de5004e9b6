import Outbox
import OutboxTestSupport

/// The rules one seed configures the engine with: what a revision conflict does for each edit
/// type, which types coalesce, and whether the retry policy gives up. Every type the workload
/// writes is listed, as an app lists its own: the engine refuses a type it was not told of.
struct SimulationScenario: Sendable, CustomStringConvertible {
    /// A price change: `PATCH /items/<name>`.
    static let priceEdit = "item.price"
    /// A whole-record draft: `PUT /items/<name>`.
    static let draftEdit = "item.draft"
    static let editTypes: Set<String> = [priceEdit, draftEdit]
    /// The types whose policy no seed changes: a create and a stock movement, each replayed
    /// under its `Idempotency-Key`.
    static let fixedPolicies: [ExactString: OperationTypePolicy] = ["product.create": .idempotent, "stock.move": .idempotent]

    /// Every type's policy, as the engine is configured with it.
    var operationPolicies: [ExactString: OperationTypePolicy]
    var retryPolicy: RetryPolicy

    /// Draws the rules from `random`.
    init(random: inout SeededRandom) {
        func rule() -> ConflictRule {
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
        operationPolicies[ExactString(Self.priceEdit)] = price
        operationPolicies[ExactString(Self.draftEdit)] = draft
        retryPolicy = .standard
        if random.chance(40) {
            // Gives up after a few attempts, and for some seeds after an age as well.
            retryPolicy = retryPolicy.givingUp(
                afterAttempts: random.int(in: 2..<7),
                orAge: random.chance(50) ? Double(random.int(in: 300..<3600)) : nil
            )
        }
    }

    func conflictRule(for operationType: String) -> ConflictRule {
        operationPolicies[ExactString(operationType)]?.conflictRule ?? .askMember
    }

    /// Whether a write of `operationType` replaces its lane's last unsent one of the type.
    func coalesces(_ operationType: String) -> Bool {
        operationPolicies[ExactString(operationType)]?.coalesces ?? false
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
        return "configuration: \(rules.joined(separator: "; ")); \(retryDescription)"
    }

    private static func describe(_ rule: ConflictRule) -> String {
        switch rule {
        case .askMember: "asks the member"
        case .serverWins: "server wins"
        case .rebase(let maxTimes): "rebases up to \(maxTimes)x"
        }
    }
}
