package import Foundation

/// Moments as one command prints them: in one zone, with ages counted to one "now".
///
/// ```swift
/// let moments = MomentFormat(zone: .system(TimeZone(identifier: "Europe/Berlin")!), now: now)
/// moments.absolute(saved)   // "2027-01-15T09:00:00+01:00"
/// moments.both(saved)       // "2027-01-15T09:00:00+01:00 (2 h ago)"
/// ```
package struct MomentFormat: Sendable {
    /// UTC, the default zone.
    package static let utcZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .gmt

    package var zone: MomentZone
    /// The moment ages count to: `--now`, or the clock's.
    package var now: Date

    package init(zone: MomentZone = .utc, now: Date) {
        self.zone = zone
        self.now = now
    }

    /// Whether moments print in UTC (with `Z`).
    package var isUTC: Bool { zone.isUTC }

    /// `2027-01-15T08:00:00Z` in UTC, `2027-01-15T09:00:00+01:00` elsewhere: whole seconds (cut,
    /// never rounded up), the offset the zone had at that moment.
    package func absolute(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e14 else { return "(no such moment)" }
        let offset = isUTC ? 0 : zone.secondsFromGMT(for: date)
        let local = Int(seconds) + offset
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        let time = local - days * 86_400
        var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, time / 3600, time / 60 % 60, time % 60)
        if isUTC {
            text += "Z"
        } else {
            let magnitude = abs(offset)
            text += String(format: "%@%02d:%02d", offset < 0 ? "-" : "+", magnitude / 3600, magnitude / 60 % 60)
        }
        return text
    }

    /// The day a moment falls on in the zone: `2027-01-15`.
    package func day(_ date: Date) -> String {
        String(absolute(date).prefix(10))
    }

    /// `2 h 14 min ago`, `in 3 min`, or `just now`.
    package func relative(_ date: Date) -> String {
        Moments.relative(date, now: now)
    }

    /// `2027-01-15T08:00:00Z (2 h 14 min ago)`.
    package func both(_ date: Date) -> String {
        "\(absolute(date)) (\(relative(date)))"
    }

    /// The zone in words, for the header of a command's output: `UTC`, `UTC-03:00`,
    /// `Europe/Berlin (UTC+01:00 on 2027-01-15)`.
    package func zoneName(at date: Date) -> String {
        guard !isUTC else { return "UTC" }
        let offset = zone.secondsFromGMT(for: date)
        let magnitude = abs(offset)
        let hours = String(format: "UTC%@%02d:%02d", offset < 0 ? "-" : "+", magnitude / 3600, magnitude / 60 % 60)
        // A fixed offset (--tz +01:00) is its own name.
        guard let identifier = zone.identifier else { return hours }
        return "\(identifier) (\(hours) on \(day(date)))"
    }

    /// The civil date of a count of days from 1970-01-01 (the days-from-civil arithmetic run
    /// backwards: years counted from March).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
