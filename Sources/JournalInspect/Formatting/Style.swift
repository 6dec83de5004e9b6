import Foundation
package import Outbox
package import OutboxAudit

/// Colour for a terminal: ANSI escapes when enabled, plain text otherwise.
package struct Style: Sendable {
    package enum Color: String, Sendable {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
        case blue = "34"
        case magenta = "35"
        case cyan = "36"
        case boldRed = "1;31"
    }

    package let enabled: Bool

    package init(enabled: Bool) {
        self.enabled = enabled
    }

    package static let plain = Style(enabled: false)

    /// Colour on a terminal only, and never when `NO_COLOR` is set to anything but empty
    /// (no-color.org) or the terminal is `dumb`.
    package static func isColorWanted(stdoutIsTerminal: Bool, environment: [String: String]) -> Bool {
        guard stdoutIsTerminal else { return false }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        if environment["TERM"] == "dumb" { return false }
        return true
    }

    package func paint(_ text: String, _ color: Color?) -> String {
        guard enabled, let color, !text.isEmpty else { return text }
        return "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m"
    }

    /// The colour of a status: settled green, waiting yellow, needing a person red.
    package static func color(of status: OutboxStatus) -> Color {
        switch status {
        case .synced: .green
        case .queued: .yellow
        case .syncing: .blue
        case .pendingApproval: .cyan
        case .failed: .red
        case .blocked, .conflicted: .boldRed
        case .withdrawn, .discarded, .superseded: .dim
        }
    }

    /// The colour of an attempt's disposition.
    package static func color(of disposition: Disposition) -> Color {
        switch disposition {
        case .accepted, .replayed: .green
        case .pendingApproval: .cyan
        case .transientFailure: .yellow
        case .unauthorized: .magenta
        case .rejected, .gaveUp: .red
        case .blocked, .conflicted: .boldRed
        }
    }
}
