import Foundation

/// The `--json` document. Its shape is stable: fields are only ever added. A contender without a
/// figure is `null`, never a missing key.
struct JSONReport: Encodable {
    var tool = "outbox-bench"
    var documentVersion = 1
    var date: String
    var command: String
    var quick: Bool
    var repeats: Int
    var machine: Machine
    var scenarios: [ScenarioDocument]

    struct ScenarioDocument: Encodable {
        var id: String
        var name: String
        var title: String
        var limit: String
        var seconds: Double
        /// What `ours`, `sqlite` and `floor` hold in this scenario (the engine, the SQLite outbox
        /// and the floor, unless named otherwise).
        var contenders: Contenders
        var metrics: [MetricDocument]
        var targets: [TargetDocument]
    }

    struct MetricDocument: Encodable {
        var key: String
        var label: String
        var unit: String
        var higherIsBetter: Bool
        var ours: StatisticsDocument?
        var sqlite: StatisticsDocument?
        var floor: StatisticsDocument?
        /// Above 1: ours is better than the SQLite outbox by that factor.
        var versusSQLite: StatisticsDocument?
        /// How many floors ours costs; 1 is the physical limit.
        var versusFloor: StatisticsDocument?

        enum CodingKeys: String, CodingKey {
            case key, label, unit, higherIsBetter, ours, sqlite, floor, versusSQLite, versusFloor
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(key, forKey: .key)
            try container.encode(label, forKey: .label)
            try container.encode(unit, forKey: .unit)
            try container.encode(higherIsBetter, forKey: .higherIsBetter)
            try container.encode(ours, forKey: .ours)
            try container.encode(sqlite, forKey: .sqlite)
            try container.encode(floor, forKey: .floor)
            try container.encode(versusSQLite, forKey: .versusSQLite)
            try container.encode(versusFloor, forKey: .versusFloor)
        }
    }

    struct StatisticsDocument: Encodable {
        var median: Double
        var min: Double
        var max: Double
        var samples: [Double]

        init?(_ statistics: Statistics?) {
            guard let statistics else { return nil }
            median = statistics.median
            min = statistics.min
            max = statistics.max
            samples = statistics.sorted
        }
    }

    struct TargetDocument: Encodable {
        var text: String
        /// `null` when the run did not measure it.
        var value: String?
        var met: Bool?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(text, forKey: .text)
            try container.encode(value, forKey: .value)
            try container.encode(met, forKey: .met)
        }

        enum CodingKeys: String, CodingKey { case text, value, met }
    }

    init(_ results: [ScenarioResult], machine: Machine, options: Options, command: String, date: Date) {
        self.date = ISO8601DateFormatter().string(from: date)
        self.command = command
        self.quick = options.quick
        self.repeats = options.effectiveRepeats
        self.machine = machine
        self.scenarios = results.map { result in
            ScenarioDocument(
                id: result.scenario.id,
                name: result.scenario.name,
                title: result.scenario.title,
                limit: result.scenario.limit(result),
                seconds: result.seconds,
                contenders: result.scenario.contenders,
                metrics: result.metrics.map { metric in
                    MetricDocument(
                        key: metric.metric.key, label: metric.metric.label, unit: metric.metric.unit.rawValue,
                        higherIsBetter: metric.metric.higherIsBetter,
                        ours: StatisticsDocument(metric.ours), sqlite: StatisticsDocument(metric.sqlite),
                        floor: StatisticsDocument(metric.floor), versusSQLite: StatisticsDocument(metric.versusSQLite),
                        versusFloor: StatisticsDocument(metric.versusFloor)
                    )
                },
                targets: result.scenario.targets.map { target in
                    let verdict = target.judge(result)
                    return TargetDocument(text: target.text, value: verdict?.value, met: verdict?.met)
                }
            )
        }
    }

    func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }
}
