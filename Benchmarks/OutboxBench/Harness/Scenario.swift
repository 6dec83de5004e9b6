import Foundation

/// What a metric's numbers are measured in.
enum Unit: String, Sendable, Codable {
    case microseconds = "µs"
    case milliseconds = "ms"
    case seconds = "s"
    case perSecond = "/s"
    case bytes = "B"
    case kibibytes = "KiB"
    case mebibytes = "MiB"
    case count = "#"
}

/// One quantity a scenario reports, for ours, the SQLite outbox and the floor.
struct Metric: Sendable {
    /// A stable name for `--json`, e.g. `p50`.
    var key: String
    /// What a person reads in the table, e.g. `latency p50`.
    var label: String
    var unit: Unit
    /// Throughputs are better higher; times and sizes lower.
    var higherIsBetter: Bool

    static func time(_ key: String, _ label: String, _ unit: Unit = .microseconds) -> Metric {
        Metric(key: key, label: label, unit: unit, higherIsBetter: false)
    }

    static func rate(_ key: String, _ label: String) -> Metric {
        Metric(key: key, label: label, unit: .perSecond, higherIsBetter: true)
    }

    static func size(_ key: String, _ label: String, _ unit: Unit = .bytes) -> Metric {
        Metric(key: key, label: label, unit: unit, higherIsBetter: false)
    }

    static func count(_ key: String, _ label: String, higherIsBetter: Bool) -> Metric {
        Metric(key: key, label: label, unit: .count, higherIsBetter: higherIsBetter)
    }
}

/// One repeat's value of one metric for each contender; `nil` where a contender has none.
struct Trio: Sendable {
    var ours: Double?
    var sqlite: Double?
    var floor: Double?
}

/// One repeat of a scenario: a value per metric key.
typealias Sample = [String: Trio]

/// A goal from the issue, judged on the run's medians. Printed, never asserted.
struct Target: Sendable {
    /// The goal in words, e.g. `p50 at most 1.15x the raw LMDB durable commit`.
    var text: String
    /// The value judged, in words with its unit, and whether it meets the goal; `nil` when the run
    /// measured nothing to judge (a metric filtered out or missing).
    var judge: @Sendable (ScenarioResult) -> (value: String, met: Bool)?
}

/// What a scenario's three columns hold: the engine, the SQLite outbox and the floor by default.
struct Contenders: Sendable, Encodable {
    var ours: String
    var sqlite: String
    var floor: String
    /// The ratio of ours to the second column, e.g. `vs SQLite`.
    var versusSQLite: String
    var versusFloor: String
    /// Whether the third column is another way of doing the work (its ratio read as the
    /// second's: above 1x, ours is better) rather than a physical floor.
    var thirdIsBaseline = false

    static let engine = Contenders(ours: "ours", sqlite: "SQLite outbox", floor: "floor", versusSQLite: "vs SQLite", versusFloor: "vs floor")
}

/// One benchmark: a name to filter on, the metrics it reports, its back-of-envelope limit and the
/// issue's targets, and one repeat's work.
struct Scenario: Sendable {
    /// The issue's scenario number, e.g. `2` or `9.1`.
    var id: String
    /// A short kebab-case name, matched by `--filter` together with the id and title.
    var name: String
    var title: String
    var metrics: [Metric]
    /// What the columns hold; the JSON keeps the keys `ours`, `sqlite`, `floor`.
    var contenders = Contenders.engine
    /// The limit in words, with the numbers measured in this run.
    var limit: @Sendable (ScenarioResult) -> String
    var targets: [Target] = []
    /// Whether the harness should run a discarded warm-up repeat first.
    var warmUp = true
    /// Repeats regardless of `--repeats`: for figures that do not vary from run to run (sizes).
    var fixedRepeats: Int?
    /// One repeat: builds what it needs under the context's directory, measures, cleans up.
    var run: @Sendable (Context) async throws -> Sample

    func matches(_ filter: String?) -> Bool {
        guard let filter, !filter.isEmpty else { return true }
        return "\(id) \(name) \(title)".localizedCaseInsensitiveContains(filter)
    }
}
