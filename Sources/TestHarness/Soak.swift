import Foundation

/// How large a test's loop runs: small by default, so `swift test` is quick and gives the same
/// answer every run, and large in a soak run.
///
/// A test names its own variable (`OUTBOX_SIM_SEEDS`, say) and two sizes. The variable, when set
/// to a whole number, wins; else `OUTBOX_SOAK=1` chooses the soak size; else the quick one. The
/// quick size must still be one at which the test can fail.
public enum Soak {
    /// The umbrella variable: `OUTBOX_SOAK=1 swift test` runs every loop at its soak size.
    public static let variable = "OUTBOX_SOAK"

    /// Whether this is a soak run (`OUTBOX_SOAK=1`).
    public static var isOn: Bool {
        isOn(in: ProcessInfo.processInfo.environment)
    }

    /// The size of a loop: `variable`'s whole number when set, else `soak` in a soak run, else
    /// `quick`.
    public static func size(_ variable: String, quick: Int, soak: Int) -> Int {
        size(variable, quick: quick, soak: soak, in: ProcessInfo.processInfo.environment)
    }

    /// ``size(_:quick:soak:)`` read from `environment` instead of the process's.
    public static func size(_ variable: String, quick: Int, soak: Int, in environment: [String: String]) -> Int {
        if let text = environment[variable], let given = Int(text.trimmingCharacters(in: .whitespaces)), given >= 0 {
            return given
        }
        return isOn(in: environment) ? soak : quick
    }

    static func isOn(in environment: [String: String]) -> Bool {
        environment[variable].map { $0.trimmingCharacters(in: .whitespaces) == "1" } ?? false
    }
}
