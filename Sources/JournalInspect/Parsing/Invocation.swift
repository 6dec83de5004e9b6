package import Foundation
package import Outbox
package import OutboxAudit

/// What a command line asks for: the parser's whole output.
package enum Invocation: Equatable, Sendable {
    /// Print help for the tool or one command.
    case help(HelpTopic)
    /// Print the tool's version.
    case version
    /// Run a command on a journal.
    case run(journal: String, command: Command, json: Bool, keyFile: String? = nil, view: ViewOptions = ViewOptions())
}

/// How every command shows moments: in which zone, and as of when. Accepted anywhere on the line.
package struct ViewOptions: Equatable, Sendable {
    /// `--tz`: the zone moments print in and zone-less moments are read in; `nil` is UTC.
    package var zone: ZoneChoice?
    /// `--now`: the moment ages ("2 h ago") and "has not run since" count to, instead of the
    /// clock's: the same command prints the same text tomorrow.
    package var now: MomentSpec?

    package init(zone: ZoneChoice? = nil, now: MomentSpec? = nil) {
        self.zone = zone
        self.now = now
    }
}

/// A `--tz` value.
package enum ZoneChoice: Equatable, Sendable {
    case utc
    /// This machine's zone (the support engineer's).
    case local
    /// The zone of the member's device, as the engine recorded it when it last opened the journal.
    case member
    /// An IANA zone name, like `Europe/Berlin`.
    case named(String)
    /// A fixed offset from UTC, like `+01:00`: any ISO 8601 allows, up to ±23:59.
    case offset(seconds: Int)
}

/// Whose help to print.
package enum HelpTopic: Equatable, Sendable {
    case tool
    case command(CommandName)
}

/// The commands, by the word that names them.
package enum CommandName: String, CaseIterable, Sendable {
    case summary
    case ops
    case timeline
    case attachment
    case events
    case ledger
    case verify
    case export
    case report
    case record
    case records
}

/// One command with its options, parsed and checked.
package enum Command: Equatable, Sendable {
    case summary
    case ops(OpsOptions)
    case timeline(TimelineOptions)
    case attachment(AttachmentOptions)
    case events(EventsOptions)
    case ledger(LedgerOptions)
    case verify
    case export(ExportOptions)
    case report(ReportOptions)
    case record(RecordOptions)
    case records(RecordsOptions)

    package var name: CommandName {
        switch self {
        case .summary: .summary
        case .ops: .ops
        case .timeline: .timeline
        case .attachment: .attachment
        case .events: .events
        case .ledger: .ledger
        case .verify: .verify
        case .export: .export
        case .report: .report
        case .record: .record
        case .records: .records
        }
    }
}

/// A moment given on the command line: absolute, an age counted back from now, or a time on
/// the wall clock of the `--tz` zone.
package enum MomentSpec: Equatable, Sendable {
    case absolute(Date)
    /// This many seconds before now.
    case ago(seconds: Double)
    /// A date and time with no zone of its own (`--tz` given), read in the `--tz` zone.
    case wallClock(WallClockTime)

    package func resolve(now: Date, zone: MomentZone = .utc) -> Date {
        switch self {
        case .absolute(let date): date
        case .ago(let seconds): now.addingTimeInterval(-seconds)
        case .wallClock(let time): time.moment(in: zone)
        }
    }
}

/// A civil date and time of day, as a clock on a wall in some zone shows it.
package struct WallClockTime: Equatable, Sendable {
    /// Days from 1970-01-01 in the proleptic Gregorian calendar.
    package var day: Int
    /// Seconds since that day's midnight.
    package var seconds: Double

    package init(day: Int, seconds: Double) {
        self.day = day
        self.seconds = seconds
    }

    /// The moment this wall-clock time is in `zone`. A time the zone skips (the hour a
    /// daylight-saving change jumps over) reads with the offset before the change; a time it
    /// shows twice, as the first of the two.
    package func moment(in zone: MomentZone) -> Date {
        let asUTC = Double(day) * 86_400 + seconds
        func offset(at moment: Double) -> Double { Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: moment))) }
        // The offsets the zone has around that day; the moments that show this time with their
        // own offset are the answers, the earliest first.
        let offsets = Set([offset(at: asUTC - 86_400), offset(at: asUTC), offset(at: asUTC + 86_400)])
        let shown = offsets.map { asUTC - $0 }.filter { offset(at: $0) == asUTC - $0 }
        return Date(timeIntervalSince1970: shown.min() ?? asUTC - offset(at: asUTC - 86_400))
    }
}

package struct OpsOptions: Equatable, Sendable {
    package var statuses: [OutboxStatus] = []
    package var categories: [String] = []
    package var types: [String] = []
    package var since: MomentSpec?
    package var until: MomentSpec?
    package var limit = 50
    /// Only operations whose label, summary, category, entity or type contains this text, case
    /// and accents ignored.
    package var search: String?

    package init() {}
}

package struct TimelineOptions: Equatable, Sendable {
    /// An operation id or its first characters.
    package var id: String
    package var includePayload = false
    /// Every row: a run of identical attempts is not folded into one.
    package var full = false

    package init(id: String) {
        self.id = id
    }
}

package struct AttachmentOptions: Equatable, Sendable {
    /// An attachment id or its first characters.
    package var id: String

    package init(id: String) {
        self.id = id
    }
}

package struct EventsOptions: Equatable, Sendable {
    package var from: JournalSequence?
    package var to: JournalSequence?
    package var kinds: [JournalEventKind] = []
    package var types: [String] = []
    /// An operation id or its first characters.
    package var operation: String?
    package var since: MomentSpec?
    package var until: MomentSpec?
    /// The most events printed; without `--from`, the journal's last ones.
    package var limit = 100
    package var follow = false

    package init() {}
}

package struct LedgerOptions: Equatable, Sendable {
    package var status: OutboxStatus?
    package var since: MomentSpec?
    package var until: MomentSpec?
    package var limit = 1000
    package var csv = false

    package init() {}
}

package struct ExportOptions: Equatable, Sendable {
    /// Operation ids or their first characters; empty with ``all``.
    package var ids: [String] = []
    package var all = false
    package var includePayload = false

    package init() {}
}

package struct ReportOptions: Equatable, Sendable {
    /// Where the HTML file is written.
    package var htmlPath: String
    /// Operation ids or prefixes to draw; empty draws the newest ``limit`` operations.
    package var ids: [String] = []
    package var limit = 100
    /// `--force`: an existing regular file at ``htmlPath`` may be replaced (never a link, a
    /// FIFO, a device, a directory or a file with other hard links).
    package var force = false

    package init(htmlPath: String) {
        self.htmlPath = htmlPath
    }
}

package struct RecordOptions: Equatable, Sendable {
    /// The record, `business/type/id` on the command line.
    package var key: RecordKey
    /// `--payload`: the values themselves, as JSON text; they are named by their SHA-256
    /// otherwise (they are the member's data, as payloads are).
    package var includeValues = false

    package init(key: RecordKey) {
        self.key = key
    }
}

package struct RecordsOptions: Equatable, Sendable {
    package var business: String
    package var type: String
    /// Only ids after this one, by their bytes: the previous page's last.
    package var after: String?
    /// The most records a page holds (1 to `RecordQuery.maxLimit`).
    package var limit = 100
    /// `--payload`: each view's JSON text instead of its SHA-256.
    package var includeValues = false

    package init(business: String, type: String) {
        self.business = business
        self.type = type
    }
}

/// A command line that does not parse: exit 64, with this message and a pointer to the help.
package struct UsageError: Error, Equatable, Sendable {
    package var message: String
    /// The command whose help to point at; `nil` for the tool's.
    package var command: CommandName?

    package init(_ message: String, command: CommandName? = nil) {
        self.message = message
        self.command = command
    }
}

extension ViewOptions {
    /// The zone and now these options ask for, on this journal: `member` is the zone the engine
    /// recorded when it last opened it.
    /// - Throws: a ``UsageError`` for `--tz member` on a journal that recorded no zone.
    func moments(reader: JournalReader, clock: Date) throws -> MomentFormat {
        let zone: MomentZone
        switch self.zone {
        case nil, .utc?:
            zone = .utc
        case .local?:
            zone = .system(.current)
        case .named(let name)?:
            guard let named = TimeZone(identifier: name) else { throw UsageError("--tz \(name) is not a time zone this machine knows") }
            zone = .system(named)
        case .offset(let seconds)?:
            zone = .fixed(seconds: seconds)
        case .member?:
            let recorded = try reader.engineState().lastOpened?.timeZone
            guard let recorded, let member = TimeZone(identifier: recorded) else {
                throw UsageError(recorded.map { "--tz member: the journal recorded the zone \($0), which this machine does not know; "
                    + "install tzdata, or give an offset with --tz" }
                    ?? "--tz member: the journal records no device zone (the app last opened it with an engine older than "
                        + "journal format 2); give the member's zone by name, like --tz Europe/Berlin")
            }
            zone = .system(member)
        }
        return MomentFormat(zone: zone, now: now?.resolve(now: clock, zone: zone) ?? clock)
    }
}
