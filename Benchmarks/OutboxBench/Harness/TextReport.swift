import Foundation

/// The tables a person reads: one per scenario, each result beside its floor and its limit.
enum TextReport {
    static func render(_ results: [ScenarioResult], machine: Machine, options: Options, command: String) -> String {
        var lines: [String] = []
        lines.append("outbox-bench  \(command)")
        lines.append("machine: \(machine.cpu), \(machine.cores) cores; journals on \(machine.filesystem) (\(machine.directory))")
        lines.append("load average (1 min): \(format(machine.loadAverageAtStart)) at start, \(format(machine.loadAverageAtEnd)) at end")
        lines.append("SQLite \(machine.sqliteVersion); \(machine.lmdbVersion)")
        lines.append("\(options.quick ? "quick: tiny sizes, 1 repeat, no warm-up" : "\(options.effectiveRepeats) repeats after a warm-up"); "
            + "each figure is the median, ± half its range over the repeats")
        lines.append("vs SQLite: how many times better ours is (above 1x: ours wins). vs floor: how many floors ours costs (1x is the limit).")
        for result in results {
            lines.append("")
            lines += render(result)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func render(_ result: ScenarioResult) -> [String] {
        let scenario = result.scenario
        let names = scenario.contenders
        var rows = [["metric", "unit", names.ours, names.sqlite, names.floor, names.versusSQLite, names.versusFloor]]
        for metric in result.metrics {
            rows.append([
                metric.metric.label, metric.metric.unit.rawValue,
                cell(metric.ours), cell(metric.sqlite), cell(metric.floor),
                ratio(metric.versusSQLite), ratio(metric.versusFloor),
            ])
        }
        var lines = ["\(scenario.id)  \(scenario.title)  [\(scenario.name), \(format(result.seconds))s]"]
        lines += table(rows).map { "   " + $0 }
        lines.append("   limit: \(scenario.limit(result))")
        for target in scenario.targets {
            if let verdict = target.judge(result) {
                lines.append("   target: \(target.text): \(verdict.met ? "met" : "MISSED") (\(verdict.value))")
            } else {
                lines.append("   target: \(target.text): not measured in this run")
            }
        }
        return lines
    }

    /// Columns padded to their widest cell; text left, numbers right.
    private static func table(_ rows: [[String]]) -> [String] {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return column < 2 ? text + padding : padding + text
            }.joined(separator: "  ")
        }
    }

    private static func cell(_ statistics: Statistics?) -> String {
        guard let statistics else { return "-" }
        let median = format(statistics.median)
        guard statistics.count > 1 else { return median }
        return "\(median) ±\(Int((statistics.spread * 100).rounded()))%"
    }

    private static func ratio(_ statistics: Statistics?) -> String {
        statistics.map { ratioText($0.median) } ?? "-"
    }

    static func ratioText(_ value: Double) -> String {
        value >= 100 ? "\(Int(value.rounded()))x" : String(format: value >= 10 ? "%.1fx" : "%.2fx", value)
    }

    /// Three significant figures, thousands grouped.
    static func format(_ value: Double?) -> String {
        guard let value else { return "-" }
        let magnitude = abs(value)
        if magnitude >= 1000 {
            let formatter = NumberFormatter()
            formatter.numberStyle = .decimal
            formatter.maximumFractionDigits = 0
            formatter.locale = Locale(identifier: "en_US")
            return formatter.string(from: NSNumber(value: value.rounded())) ?? String(Int(value))
        }
        if magnitude >= 100 { return String(Int(value.rounded())) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        if magnitude >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3f", value)
    }
}
