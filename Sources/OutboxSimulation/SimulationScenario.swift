import Outbox
import OutboxTestSupport

/// The rules one seed configures the engine with: what a revision conflict does for each edit
/// type, which types coalesce, and whether the retry policy gives up.
struct SimulationScenario: Sendable, CustomStringConvertible {
    /// A price change: `PATCH /items/<name>`.
    static let priceEdit = "item.price"
    /// A whole-record draft: `PUT /items/<name>`.
    static let draftEdit = "item.draft"
    static let editTypes: Set<String> = [priceEdit, draftEdit]

    var conflictRules: [String: ConflictRule]
    var coalescing: Set<String>
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
        conflictRules = [Self.priceEdit: rule(), Self.draftEdit: rule()]
        coalescing = []
        if random.chance(50) { coalescing.insert(Self.draftEdit) }
        if random.chance(25) { coalescing.insert(Self.priceEdit) }
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
        conflictRules[operationType] ?? .askMember
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
            "\(type) \(Self.describe(conflictRule(for: type)))\(coalescing.contains(type) ? ", coalescing" : "")"
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
