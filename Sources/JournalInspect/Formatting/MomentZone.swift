package import Foundation

/// The zone moments are shown in and zone-less moments are read in: one of the system's zones
/// (UTC, this machine's, an IANA name), or a fixed offset from UTC.
///
/// A fixed offset is kept as seconds rather than as a Foundation `TimeZone`, whose fixed-offset
/// zones stop at ±18:00: ISO 8601 allows any offset up to ±23:59, and a moment typed with one
/// (`2027-01-15T08:00+23:59`) is read, so `--tz +23:59` is too.
package enum MomentZone: Equatable, Sendable {
    case system(TimeZone)
    /// East of UTC is positive.
    case fixed(seconds: Int)

    /// UTC, the default.
    package static let utc = MomentZone.system(MomentFormat.utcZone)

    /// The zone's offset from UTC at `date`, in seconds.
    package func secondsFromGMT(for date: Date) -> Int {
        switch self {
        case .system(let zone): zone.secondsFromGMT(for: date)
        case .fixed(let seconds): seconds
        }
    }

    /// Whether moments print in UTC (with `Z`): UTC itself, or an offset of zero.
    package var isUTC: Bool {
        switch self {
        case .system(let zone): zone.identifier == "UTC" || zone.identifier == "GMT" || zone.identifier == "Etc/UTC"
        case .fixed(let seconds): seconds == 0
        }
    }

    /// The zone's name for a header, `nil` for a fixed offset (its offset is its name).
    var identifier: String? {
        switch self {
        case .system(let zone): zone.identifier.hasPrefix("GMT") ? nil : zone.identifier
        case .fixed: nil
        }
    }
}
