import Foundation

/// Runs scenarios the way swift-nio's performance tester does: one warm-up repeat thrown away,
/// then the measured repeats, each scenario's contenders side by side in every repeat.
struct Harness {
    let context: Context

    /// Runs each scenario in turn; the floors (scenario 0) always, the rest when they match the filter.
    func run(_ scenarios: [Scenario]) async throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for scenario in scenarios where scenario.id == "0" || scenario.matches(context.options.filter) {
            results.append(try await run(scenario))
        }
        return results
    }

    func run(_ scenario: Scenario) async throws -> ScenarioResult {
        let repeats = scenario.fixedRepeats ?? context.options.effectiveRepeats
        let start = Stopwatch.now()
        context.progress("\(scenario.id) \(scenario.name): \(scenario.title)")
        if scenario.warmUp && !context.quick {
            context.progress("warm-up")
            _ = try await scenario.run(context)
        }
        var samples: [Sample] = []
        for index in 1...repeats {
            if repeats > 1 { context.progress("repeat \(index) of \(repeats)") }
            samples.append(try await scenario.run(context))
        }
        return ScenarioResult(scenario: scenario, samples: samples, seconds: Double(Stopwatch.now() - start) / 1e9)
    }
}
