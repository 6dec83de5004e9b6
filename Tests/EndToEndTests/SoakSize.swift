import Foundation
import TestHarness

/// How big the crash suites' runs are, and from which seed, read from the environment in one
/// place.
///
/// A default `swift test` runs each suite small and from a fixed seed, so that every default run
/// makes the same children, kills each at the same durable step and checks the same things.
/// `OUTBOX_SOAK=1` selects the soak's sizes (and the soak's kills at random moments, see
/// ``RandomKillPace``) wherever a suite's own variable is unset; `OUTBOX_SEED` picks another
/// seed, to replay one a failure printed or to explore.
enum SoakSize {
    private static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The seed every default run uses.
    static let defaultSeed: UInt64 = 44

    /// `OUTBOX_SEED`'s, else ``defaultSeed``.
    static var seed: UInt64 { environment["OUTBOX_SEED"].flatMap(UInt64.init) ?? defaultSeed }

    /// Whether this is a soak run (`OUTBOX_SOAK=1`, read by ``Soak``).
    static var soaking: Bool { Soak.isOn }

    /// How many of something a suite does: `variable`'s number when it is set, else `soak` while
    /// soaking, else `quick` (``Soak/size(_:quick:soak:)``).
    static func count(_ variable: String, quick: Int, soak: Int) -> Int {
        Soak.size(variable, quick: quick, soak: soak)
    }

    /// `OUTBOX_CRASH_VERBOSE=1` prints every child of the crash suites.
    static var verbose: Bool { environment["OUTBOX_CRASH_VERBOSE"] != nil }

    /// The hang guard of every child the crash suites start: a child still running after five
    /// minutes is stuck, and is killed so that its test fails (never to decide an outcome).
    static let hangGuardSeconds = 5.0 * 60
}

/// When the soak's random kills land: anywhere from a little before a child has opened the
/// journal to a little past its usual end, both learnt from the children (first guesses of 0.05
/// and 0.3 s, blended with each one's moments), so that the kills spread over the whole run on a
/// faster or a busier machine. Only the soak kills so: where such a kill lands depends on the
/// machine, so the checks after it are only those that hold wherever it lands.
struct RandomKillPace {
    private(set) var opened = 0.05
    private(set) var done = 0.3

    func killDelay(using random: inout SeededRandom) -> Double {
        random.double(in: (opened * 0.7)...(done * 1.1))
    }

    /// Learns from a child that printed "opened" and "done" at these seconds after its start.
    mutating func observe(openedAt: Double?, doneAt: Double?) {
        if let openedAt { opened = 0.8 * opened + 0.2 * openedAt }
        if let doneAt { done = 0.8 * done + 0.2 * doneAt }
    }
}
