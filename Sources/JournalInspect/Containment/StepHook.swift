import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The follower's steps, told to a test that must signal or kill it in a given one.
///
/// A test about "a Ctrl-C while the follower writes" cannot wait a while and hope: it reads
/// where the follower is. `JOURNAL_INSPECT_STEPS` (read by the tool only; a test sets it):
/// - `announce`: each step is told on standard error as it is reached,
///   `journal-inspect: step <name> (pid <pid>)`, and the follower goes on;
/// - `hold:<name>`: the step is told, then the follower stops there for good, as a read or a
///   write that does not return would; only a signal or its parent's end ends it;
/// - either followed by `,pipe-only`: the reading child sets no parent-death signal, so the
///   ``Lifeline`` pipe alone must end it when its parent dies.
enum StepHook {
    static let variable = "JOURNAL_INSPECT_STEPS"

    /// A step of `events --follow`.
    enum Step: String {
        /// Its interruption handler is installed: from here SIGINT and SIGTERM end it cleanly.
        case following
        /// About to read a page of the journal.
        case reading
        /// About to write what it read.
        case writing
        /// About to wait for the next commit.
        case waiting
    }

    private struct Setting {
        var announce = false
        var hold: Step?
        var pipeOnly = false
    }

    private static let setting: Setting = {
        guard let value = getenv(variable).map({ String(cString: $0) }) else { return Setting() }
        var setting = Setting()
        for part in value.split(separator: ",") {
            if part == "announce" { setting.announce = true }
            if part == "pipe-only" { setting.pipeOnly = true }
            if part.hasPrefix("hold:") { setting.hold = Step(rawValue: String(part.dropFirst(5))) }
        }
        return setting
    }()

    /// Whether the reading child leaves the parent-death signal unset.
    static var pipeOnly: Bool { setting.pipeOnly }

    /// Marks `step` reached: told when asked, and held there when it is the one to hold at.
    static func reached(_ step: Step) {
        let held = setting.hold == step
        guard setting.announce || held else { return }
        let line = "journal-inspect: \(held ? "held at" : "step") \(step.rawValue) (pid \(getpid()))\n"
        let bytes = Array(line.utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        guard held else { return }
        while true { pause() }
    }
}
