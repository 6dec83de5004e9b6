import Foundation

/// What the command line asked for.
struct Options: Sendable, Equatable {
    var quick = false
    var json = false
    var filter: String?
    var repeats: Int?
    var directory: String?

    /// Repeats measured after the warm-up: 1 in quick mode, 5 otherwise, unless given.
    var effectiveRepeats: Int { repeats ?? (quick ? 1 : 5) }
}

/// A parsed command line.
enum Command: Sendable, Equatable {
    case run(Options)
    case help
    /// Internal: measure one open in this fresh process (see ``Probe``).
    case probe(Probe.Kind, path: String)
}

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

enum CommandLineParser {
    static let usage = """
        OVERVIEW: Measures the Outbox engine against a mutable SQLite outbox and the disk's floor,
        side by side in one run, and prints the ratios.

        USAGE: outbox-bench [--quick] [--json] [--filter <substring>] [--repeats <n>] [--dir <path>]

        OPTIONS:
          --quick               Every scenario at tiny sizes, once, no warm-up: a smoke run in seconds.
          --json                Print one JSON document instead of tables (progress goes to stderr).
          --filter <substring>  Run only the scenarios whose id, name or title contains it
                                (case-insensitive), e.g. "lifecycle", "9.", "sync-tab".
                                The floors (scenario 0) always run.
          --repeats <n>         Measured repeats per scenario after one warm-up (default 5; 1 with --quick).
          --dir <path>          Where temporary journals go (default: a temporary directory on the
                                working directory's disk); everything created there is removed.
          -h, --help            Show this help.

        Exit status: 0 on success, 64 on a usage error, 1 when a scenario fails. Nothing is judged
        on timing: missed targets are reported, never fatal.
        """

    static func parse(_ arguments: [String]) throws(UsageError) -> Command {
        var options = Options()
        var remaining = arguments[...]
        func value(for flag: String) throws(UsageError) -> String {
            guard let next = remaining.popFirst(), !next.hasPrefix("--") else {
                throw UsageError(description: "\(flag) needs a value")
            }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "-h", "--help":
                return .help
            case "--quick":
                options.quick = true
            case "--json":
                options.json = true
            case "--filter":
                options.filter = try value(for: argument)
            case "--repeats":
                let text = try value(for: argument)
                guard let count = Int(text), (1...1000).contains(count) else {
                    throw UsageError(description: "--repeats needs a whole number from 1 to 1000, got '\(text)'")
                }
                options.repeats = count
            case "--dir":
                options.directory = try value(for: argument)
            case "--probe":
                let kindText = try value(for: argument)
                guard let kind = Probe.Kind(rawValue: kindText) else {
                    throw UsageError(description: "--probe needs one of \(Probe.Kind.allCases.map(\.rawValue)), got '\(kindText)'")
                }
                return .probe(kind, path: try value(for: argument))
            default:
                throw UsageError(description: "unknown argument '\(argument)'")
            }
        }
        return .run(options)
    }
}
