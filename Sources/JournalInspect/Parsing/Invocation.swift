public import Foundation
public import Outbox

/// What a command line asks for: the parser's whole output.
public enum Invocation: Equatable, Sendable {
    /// Print help for the tool or one command.
    case help(HelpTopic)
    /// Print the tool's version.
    case version
    /// Run a command on a journal.
    case run(journal: String, command: Command, json: Bool, keyFile: String? = nil)
}

/// Whose help to print.
public enum HelpTopic: Equatable, Sendable {
    case tool
    case command(CommandName)
}

/// The commands, by the word that names them.
public enum CommandName: String, CaseIterable, Sendable {
    case summary
    case ops
    case timeline
    case events
    case ledger
    case verify
    case export
    case report
}

/// One command with its options, parsed and checked.
public enum Command: Equatable, Sendable {
    case summary
    case ops(OpsOptions)
    case timeline(TimelineOptions)
    case events(EventsOptions)
    case ledger(LedgerOptions)
    case verify
    case export(ExportOptions)
    case report(ReportOptions)

    public var name: CommandName {
        switch self {
        case .summary: .summary
        case .ops: .ops
        case .timeline: .timeline
        case .events: .events
        case .ledger: .ledger
        case .verify: .verify
        case .export: .export
        case .report: .report
        }
    }
}

/// A moment given on the command line: absolute, or an age counted back from now.
public enum MomentSpec: Equatable, Sendable {
    case absolute(Date)
    /// This many seconds before now.
    case ago(seconds: Double)

    public func resolve(now: Date) -> Date {
        switch self {
        case .absolute(let date): date
        case .ago(let seconds): now.addingTimeInterval(-seconds)
        }
    }
}

public struct OpsOptions: Equatable, Sendable {
    public var statuses: [OutboxStatus] = []
    public var categories: [String] = []
    public var types: [String] = []
    public var since: MomentSpec?
    public var until: MomentSpec?
    public var limit = 50

    public init() {}
}

public struct TimelineOptions: Equatable, Sendable {
    /// An operation id or its first characters.
    public var id: String
    public var includePayload = false

    public init(id: String) {
        self.id = id
    }
}

public struct EventsOptions: Equatable, Sendable {
    public var from: JournalSequence?
    public var to: JournalSequence?
    public var kinds: [JournalEventKind] = []
    public var types: [String] = []
    /// An operation id or its first characters.
    public var operation: String?
    public var since: MomentSpec?
    public var until: MomentSpec?
    /// The most events printed; without `--from`, the journal's last ones.
    public var limit = 100
    public var follow = false

    public init() {}
}

public struct LedgerOptions: Equatable, Sendable {
    public var status: OutboxStatus?
    public var since: MomentSpec?
    public var until: MomentSpec?
    public var limit = 1000
    public var csv = false

    public init() {}
}

public struct ExportOptions: Equatable, Sendable {
    /// Operation ids or their first characters; empty with ``all``.
    public var ids: [String] = []
    public var all = false
    public var includePayload = false

    public init() {}
}

public struct ReportOptions: Equatable, Sendable {
    /// Where the HTML file is written.
    public var htmlPath: String
    /// Operation ids or prefixes to draw; empty draws the newest ``limit`` operations.
    public var ids: [String] = []
    public var limit = 100

    public init(htmlPath: String) {
        self.htmlPath = htmlPath
    }
}

/// A command line that does not parse: exit 64, with this message and a pointer to the help.
public struct UsageError: Error, Equatable, Sendable {
    public var message: String
    /// The command whose help to point at; `nil` for the tool's.
    public var command: CommandName?

    public init(_ message: String, command: CommandName? = nil) {
        self.message = message
        self.command = command
    }
}
