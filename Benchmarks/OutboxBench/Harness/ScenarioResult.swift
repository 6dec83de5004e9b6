import Foundation

/// One metric over every repeat: the statistics of each contender and of the ratios between them.
struct MetricResult: Sendable {
    var metric: Metric
    var ours: Statistics?
    var sqlite: Statistics?
    var floor: Statistics?
    /// How many times better ours is than the SQLite outbox (above 1: ours is better), per repeat.
    var versusSQLite: Statistics?
    /// How many floors ours costs (1 is the physical limit), per repeat; where the third column
    /// is a baseline rather than a floor, how many times better ours is, as for the second.
    var versusFloor: Statistics?

    init(metric: Metric, samples: [Trio], thirdIsBaseline: Bool = false) {
        self.metric = metric
        func stats(_ values: [Double?]) -> Statistics? {
            let present = values.compactMap { $0 }
            return present.isEmpty ? nil : Statistics(present)
        }
        ours = stats(samples.map(\.ours))
        sqlite = stats(samples.map(\.sqlite))
        floor = stats(samples.map(\.floor))
        let better = metric.higherIsBetter
        versusSQLite = stats(samples.map { trio in
            guard let ours = trio.ours, let sqlite = trio.sqlite, ours > 0, sqlite > 0 else { return nil }
            return better ? ours / sqlite : sqlite / ours
        })
        versusFloor = stats(samples.map { trio in
            guard let ours = trio.ours, let floor = trio.floor, ours > 0, floor > 0 else { return nil }
            return better != thirdIsBaseline ? floor / ours : ours / floor
        })
    }
}

/// A scenario's outcome over every repeat.
struct ScenarioResult: Sendable {
    var scenario: Scenario
    var metrics: [MetricResult]
    var seconds: Double

    init(scenario: Scenario, samples: [Sample], seconds: Double) {
        self.scenario = scenario
        self.seconds = seconds
        metrics = scenario.metrics.compactMap { metric in
            let trios = samples.compactMap { $0[metric.key] }
            return trios.isEmpty ? nil : MetricResult(metric: metric, samples: trios, thirdIsBaseline: scenario.contenders.thirdIsBaseline)
        }
    }

    subscript(key: String) -> MetricResult? {
        metrics.first { $0.metric.key == key }
    }

    /// The median of ours for `key`.
    func ours(_ key: String) -> Double? { self[key]?.ours?.median }
    func sqlite(_ key: String) -> Double? { self[key]?.sqlite?.median }
    func floor(_ key: String) -> Double? { self[key]?.floor?.median }
}
