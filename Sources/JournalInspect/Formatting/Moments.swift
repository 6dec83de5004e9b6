package import Foundation

/// Moments and durations as people read them: absolute in ISO-8601 UTC, relative in words.
package enum Moments {
    /// `2027-01-15T08:00:00Z`: whole seconds, UTC. ``MomentFormat`` prints in other zones.
    package static func absolute(_ date: Date) -> String {
        MomentFormat(now: date).absolute(date)
    }

    /// A span in its two largest units: `45 s`, `5 min 3 s`, `2 h 14 min`, `3 d 2 h`; below a
    /// second, `less than 1 s`; beyond what an `Int` counts (a moment read from damaged bytes may
    /// be any finite double), `forever`. Never negative: a span has no sign, so the words around
    /// it say which way it runs ("ago", "in", "moved back").
    package static func duration(_ seconds: Double) -> String {
        guard let parts = parts(of: seconds) else { return "forever" }
        guard !parts.isEmpty else { return "less than 1 s" }
        let names = ["d", "h", "min", "s"]
        return parts.map { "\($0.count) \(names[$0.unit])" }.joined(separator: " ")
    }

    /// A span in words, for a sentence: `328 days`, `2 hours 14 minutes`, `1 minute`.
    package static func durationInWords(_ seconds: Double) -> String {
        guard let parts = parts(of: seconds) else { return "forever" }
        guard !parts.isEmpty else { return "less than a second" }
        let names = ["day", "hour", "minute", "second"]
        return parts.map { "\($0.count) \(names[$0.unit])\($0.count == 1 ? "" : "s")" }.joined(separator: " ")
    }

    /// The span's two largest units (days, hours, minutes, seconds: 0 to 3) with their counts, a
    /// trailing zero left out; empty below a second; `nil` beyond what an `Int` counts.
    private static func parts(of seconds: Double) -> [(count: Int, unit: Int)]? {
        guard seconds.isFinite, let total = Int(exactly: abs(seconds).rounded(.down)) else { return nil }
        var parts: [(count: Int, unit: Int)] = []
        var rest = total
        for (unit, size) in [86_400, 3600, 60, 1].enumerated() {
            let count = rest / size
            rest %= size
            if count > 0 || !parts.isEmpty { parts.append((count, unit)) }
            if parts.count == 2 { break }
        }
        // "2 h 0 min" reads as "2 h".
        if parts.count == 2, parts[1].count == 0 { parts.removeLast() }
        return parts
    }

    /// `2 h 14 min ago`, `in 3 min`, or `just now`.
    package static func relative(_ date: Date, now: Date) -> String {
        let seconds = now.timeIntervalSince(date)
        if abs(seconds) < 1 { return "just now" }
        return seconds > 0 ? "\(duration(seconds)) ago" : "in \(duration(-seconds))"
    }

    /// `2027-01-15T08:00:00Z (2 h 14 min ago)`.
    package static func both(_ date: Date, now: Date) -> String {
        "\(absolute(date)) (\(relative(date, now: now)))"
    }

    /// `12.3 KB`, `4.0 MB`: bytes in powers of 1,024.
    package static func bytes(_ count: Int) -> String {
        if count < 1024 { return "\(count) B" }
        let units = ["KB", "MB", "GB", "TB"]
        var value = Double(count) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }
}
