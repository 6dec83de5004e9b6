// Kept in one file: one parser: every command's options are read by the same loop, and its errors
// must read alike.

import Foundation
import Outbox
import OutboxAudit

/// The pure parser: arguments in, an ``Invocation`` or a ``UsageError`` out. No I/O.
///
/// `journal-inspect <journal-dir> [<command>] [arguments and options]`. `--json`,
/// `--key-file <path>`, `--tz <zone>` and `--now <moment>` are accepted anywhere; `-h`/`--help` anywhere asks for help (the command's, when one is named);
/// `--option value` and `--option=value` are the same; options that take lists take a
/// comma-separated list, and may be repeated.
package enum CommandLineParser {
    package static func parse(_ arguments: [String]) -> Result<Invocation, UsageError> {
        do {
            return .success(try invocation(arguments))
        } catch let error as UsageError {
            return .failure(error)
        } catch {
            return .failure(UsageError("\(error)"))
        }
    }

    private static func invocation(_ arguments: [String]) throws -> Invocation {
        if arguments.contains(where: { $0 == "-h" || $0 == "--help" }) {
            let named = arguments.lazy.compactMap(CommandName.init(rawValue:)).first
            return .help(named.map(HelpTopic.command) ?? .tool)
        }
        if arguments.first == "help" {
            guard arguments.count <= 2 else { throw UsageError("help takes at most one command name") }
            guard let word = arguments.dropFirst().first else { return .help(.tool) }
            guard let name = CommandName(rawValue: word) else { throw unknownCommand(word) }
            return .help(.command(name))
        }
        if arguments == ["--version"] { return .version }

        var json = false
        var keyFile: String?
        var zoneText: String?
        var nowText: String?
        var rest: [String] = []
        var arguments = arguments[...]
        while let argument = arguments.popFirst() {
            if argument == "--json" {
                json = true
            } else if argument == "--key-file" {
                guard let path = arguments.popFirst(), !path.hasPrefix("-") else {
                    throw UsageError("--key-file needs the path of the journal's key (32 bytes, or 64 hex digits)")
                }
                keyFile = path
            } else if argument.hasPrefix("--key-file=") {
                keyFile = String(argument.dropFirst("--key-file=".count))
            } else if argument == "--tz" || argument == "--now" {
                // A zone may start with "-" (an offset), a moment never does.
                guard let value = arguments.popFirst(), !value.isEmpty, argument == "--tz" || !value.hasPrefix("-") else {
                    throw UsageError(argument == "--tz"
                        ? "--tz needs a zone: UTC, local, member, a name like Europe/Berlin, or an offset like +01:00"
                        : "--now needs a moment, like 2027-01-15T10:30:00Z")
                }
                if argument == "--tz" { zoneText = value } else { nowText = value }
            } else if argument.hasPrefix("--tz=") {
                zoneText = String(argument.dropFirst("--tz=".count))
            } else if argument.hasPrefix("--now=") {
                nowText = String(argument.dropFirst("--now=".count))
            } else {
                rest.append(argument)
            }
        }
        var view = ViewOptions()
        if let zoneText { view.zone = try zone(zoneText) }
        let zoneGiven = view.zone != nil
        if let nowText { view.now = try now(nowText, zoneGiven: zoneGiven) }
        guard let journal = rest.first else {
            throw UsageError("give the journal's directory: journal-inspect <journal-dir> [<command>] [options]")
        }
        if journal.hasPrefix("-") {
            throw UsageError("'\(journal)' is not a journal directory; the directory comes first: journal-inspect <journal-dir> [<command>] [options]")
        }
        var tokens = Tokens(Array(rest.dropFirst()))
        guard let word = tokens.peek, !word.hasPrefix("-") else {
            try tokens.expectEnd(command: .summary)
            return .run(journal: journal, command: .summary, json: json, keyFile: keyFile, view: view)
        }
        tokens.advance()
        guard let name = CommandName(rawValue: word) else { throw unknownCommand(word) }
        let command = try parseCommand(name, &tokens, zoneGiven: zoneGiven)
        if json, case .ledger(let options) = command, options.csv {
            throw UsageError("--csv and --json are two formats: choose one", command: .ledger)
        }
        return .run(journal: journal, command: command, json: json, keyFile: keyFile, view: view)
    }

    private static func unknownCommand(_ word: String) -> UsageError {
        UsageError("unknown command '\(word)'; the commands are \(CommandName.allCases.map(\.rawValue).joined(separator: ", "))")
    }

    private static func parseCommand(_ name: CommandName, _ tokens: inout Tokens, zoneGiven: Bool) throws -> Command {
        func moment(_ value: String, _ option: String, _ command: CommandName) throws -> MomentSpec {
            try CommandLineParser.moment(value, option, command, zoneGiven: zoneGiven)
        }
        switch name {
        case .summary:
            try tokens.expectEnd(command: name)
            return .summary
        case .verify:
            try tokens.expectEnd(command: name)
            return .verify
        case .ops:
            var options = OpsOptions()
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--status", let value?): options.statuses += try list(value, "--status", name, parse: status)
                case ("--category", let value?): options.categories += try list(value, "--category", name) { $0 }
                case ("--type", let value?): options.types += try list(value, "--type", name) { $0 }
                case ("--since", let value?): options.since = try moment(value, "--since", name)
                case ("--until", let value?): options.until = try moment(value, "--until", name)
                case ("--limit", let value?): options.limit = try limit(value, name)
                case ("--search", let value?):
                    guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                        throw UsageError("--search needs some text to look for", command: name)
                    }
                    options.search = value
                default: throw tokens.unexpected(token, command: name)
                }
            }
            try checkOrder(options.since, options.until, name)
            return .ops(options)
        case .timeline:
            var id: String?
            var includePayload = false
            var full = false
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--payload", nil): includePayload = true
                case ("--full", nil), ("--all", nil): full = true
                case (let positional, nil) where !positional.hasPrefix("-") && id == nil: id = positional
                default: throw tokens.unexpected(token, command: name)
                }
            }
            guard let id else { throw UsageError("timeline needs an operation id (its first characters are enough)", command: name) }
            var options = TimelineOptions(id: try operationPrefix(id, name))
            options.includePayload = includePayload
            options.full = full
            return .timeline(options)
        case .attachment:
            var id: String?
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case (let positional, nil) where !positional.hasPrefix("-") && id == nil: id = positional
                default: throw tokens.unexpected(token, command: name)
                }
            }
            guard let id else {
                throw UsageError("attachment needs an attachment id (its first characters are enough): the enqueued event of the "
                    + "write that carries it names it", command: name)
            }
            return .attachment(AttachmentOptions(id: try attachmentPrefix(id, name)))
        case .events:
            var options = EventsOptions()
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--from", let value?): options.from = try seq(value, "--from", name)
                case ("--to", let value?): options.to = try seq(value, "--to", name)
                case ("--kind", let value?): options.kinds += try list(value, "--kind", name, parse: kind)
                case ("--type", let value?): options.types += try list(value, "--type", name) { $0 }
                case ("--operation", let value?): options.operation = try operationPrefix(value, name)
                case ("--since", let value?): options.since = try moment(value, "--since", name)
                case ("--until", let value?): options.until = try moment(value, "--until", name)
                case ("--limit", let value?): options.limit = try limit(value, name)
                case ("--follow", nil): options.follow = true
                default: throw tokens.unexpected(token, command: name)
                }
            }
            if let from = options.from, let to = options.to, from > to {
                throw UsageError("--from \(from) is after --to \(to)", command: name)
            }
            if options.follow, options.to != nil {
                throw UsageError("--follow reads on past the journal's end: it cannot have --to", command: name)
            }
            try checkOrder(options.since, options.until, name)
            return .events(options)
        case .ledger:
            var options = LedgerOptions()
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--status", let value?): options.status = try status(value, name)
                case ("--since", let value?): options.since = try moment(value, "--since", name)
                case ("--until", let value?): options.until = try moment(value, "--until", name)
                case ("--limit", let value?): options.limit = try limit(value, name)
                case ("--csv", nil): options.csv = true
                default: throw tokens.unexpected(token, command: name)
                }
            }
            try checkOrder(options.since, options.until, name)
            return .ledger(options)
        case .export:
            var options = ExportOptions()
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--all", nil): options.all = true
                case ("--payload", nil): options.includePayload = true
                case (let positional, nil) where !positional.hasPrefix("-"): options.ids.append(try operationPrefix(positional, name))
                default: throw tokens.unexpected(token, command: name)
                }
            }
            if options.all && !options.ids.isEmpty {
                throw UsageError("give operation ids or --all, not both", command: name)
            }
            if !options.all && options.ids.isEmpty {
                throw UsageError("export needs operation ids (their first characters are enough) or --all", command: name)
            }
            return .export(options)
        case .report:
            var path: String?
            var ids: [String] = []
            var limit = ReportOptions(htmlPath: "").limit
            var force = false
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--html", let value?): path = value
                case ("--limit", let value?): limit = try self.limit(value, name)
                case ("--force", nil): force = true
                case (let positional, nil) where !positional.hasPrefix("-"): ids.append(try operationPrefix(positional, name))
                default: throw tokens.unexpected(token, command: name)
                }
            }
            guard let path, !path.isEmpty else {
                throw UsageError("report needs --html <file>: where to write the report", command: name)
            }
            var options = ReportOptions(htmlPath: path)
            options.ids = ids
            options.limit = limit
            options.force = force
            return .report(options)
        case .record:
            var key: RecordKey?
            var includeValues = false
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--payload", nil): includeValues = true
                case (let positional, nil) where !positional.hasPrefix("-") && key == nil: key = try recordKey(positional, name)
                default: throw tokens.unexpected(token, command: name)
                }
            }
            guard let key else {
                throw UsageError("record needs a record: <business>/<type>/<id>, like pharmacy-7/product/7d0c3a52", command: name)
            }
            var options = RecordOptions(key: key)
            options.includeValues = includeValues
            return .record(options)
        case .records:
            var scope: (business: String, type: String)?
            var after: String?
            var limit = RecordsOptions(business: "", type: "").limit
            var includeValues = false
            while let token = tokens.next() {
                switch try tokens.option(token, command: name) {
                case ("--after", let value?): after = value
                case ("--limit", let value?): limit = try recordLimit(value, name)
                case ("--payload", nil): includeValues = true
                case (let positional, nil) where !positional.hasPrefix("-") && scope == nil: scope = try recordScope(positional, name)
                default: throw tokens.unexpected(token, command: name)
                }
            }
            guard let scope else {
                throw UsageError("records needs a business and a type: <business>/<type>, like pharmacy-7/product", command: name)
            }
            if let after, let (_, problem) = RecordKey(business: scope.business, type: scope.type, id: after).problem {
                throw UsageError("--after \(shown(after)): a record's id \(problem)", command: name)
            }
            var options = RecordsOptions(business: scope.business, type: scope.type)
            options.after = after
            options.limit = limit
            options.includeValues = includeValues
            return .records(options)
        }
    }

    // MARK: Values

    /// Options that take a value; every other option is a flag.
    static let valueOptions: Set<String> = [
        "--status", "--category", "--type", "--since", "--until", "--limit", "--from", "--to", "--kind",
        "--operation", "--html", "--search", "--after",
    ]

    static func status(_ text: String, _ command: CommandName) throws -> OutboxStatus {
        let normalized = text.lowercased().replacingOccurrences(of: "-", with: "_")
        guard let status = OutboxStatus(rawValue: normalized) else {
            throw UsageError("unknown status '\(text)'; one of \(OutboxStatus.allCases.map(\.rawValue).joined(separator: ", "))",
                             command: command)
        }
        return status
    }

    static func kind(_ text: String, _ command: CommandName) throws -> JournalEventKind {
        guard let kind = JournalEventKind.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
            throw UsageError("unknown event kind '\(text)'; one of \(JournalEventKind.allCases.map(\.rawValue).joined(separator: ", "))",
                             command: command)
        }
        return kind
    }

    private static func list<T>(_ text: String, _ option: String, _ command: CommandName,
                                parse: (String, CommandName) throws -> T) throws -> [T] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !items.contains(where: \.isEmpty) else { throw UsageError("\(option) has an empty item in '\(text)'", command: command) }
        return try items.map { try parse($0, command) }
    }

    private static func list(_ text: String, _ option: String, _ command: CommandName, _ parse: (String) -> String) throws -> [String] {
        try list(text, option, command) { item, _ in parse(item) }
    }

    static func limit(_ text: String, _ command: CommandName) throws -> Int {
        guard let value = Int(text), value > 0 else {
            throw UsageError("--limit takes a whole number above 0, not '\(text)'", command: command)
        }
        return value
    }

    static func seq(_ text: String, _ option: String, _ command: CommandName) throws -> JournalSequence {
        guard let value = UInt64(text), value > 0 else {
            throw UsageError("\(option) takes a seq: a whole number from 1, not '\(text)'", command: command)
        }
        return JournalSequence(rawValue: value)
    }

    /// An id prefix: hex digits and hyphens only.
    static func operationPrefix(_ text: String, _ command: CommandName) throws -> String {
        guard !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == "-" }), text.contains(where: \.isHexDigit) else {
            throw UsageError("'\(text)' is not an operation id or the start of one (hex digits, like 6C4EF3CA)", command: command)
        }
        return text
    }

    /// An attachment id prefix: hex digits and hyphens only.
    static func attachmentPrefix(_ text: String, _ command: CommandName) throws -> String {
        guard !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == "-" }), text.contains(where: \.isHexDigit) else {
            throw UsageError("'\(shown(text))' is not an attachment id or the start of one (hex digits, like 8F1C2A3B)", command: command)
        }
        return text
    }

    /// A record as `business/type/id` (the id is everything after the second `/`), each part
    /// within the engine's bounds for a record's key.
    static func recordKey(_ text: String, _ command: CommandName) throws -> RecordKey {
        guard let key = RecordKey(path: text) else {
            throw UsageError("'\(shown(text))' is not a record: give <business>/<type>/<id>, like pharmacy-7/product/7d0c3a52",
                             command: command)
        }
        if let (field, problem) = key.problem {
            throw UsageError("the record \(shown(text)) cannot be in a journal: its \(field) \(problem)", command: command)
        }
        return key
    }

    /// A business and a record type, `business/type`, each within the engine's bounds.
    static func recordScope(_ text: String, _ command: CommandName) throws -> (business: String, type: String) {
        let parts = text.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty }) else {
            if parts.count == 3, RecordKey(path: text) != nil {
                throw UsageError("records lists the records of a business and a type: give <business>/<type>, like pharmacy-7/product; "
                    + "'record \(shown(text))' shows one record", command: command)
            }
            throw UsageError("'\(shown(text))' is not a business and a type: give <business>/<type>, like pharmacy-7/product",
                             command: command)
        }
        // The id stands in only to check the other two parts.
        if let (field, problem) = RecordKey(business: parts[0], type: parts[1], id: "-").problem {
            throw UsageError("no record of \(shown(text)) can be in a journal: its \(field) \(problem)", command: command)
        }
        return (parts[0], parts[1])
    }

    /// `records --limit`: within what one page of records may hold.
    static func recordLimit(_ text: String, _ command: CommandName) throws -> Int {
        let value = try limit(text, command)
        guard value <= RecordQuery.maxLimit else {
            throw UsageError("--limit takes at most \(RecordQuery.maxLimit) records a page, not \(text); --after pages on", command: command)
        }
        return value
    }

    /// Text from the command line as a message quotes it: control characters escaped, and cut
    /// short past 80 characters (a part over its bounds may be long).
    static func shown(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped.count > 80 ? String(escaped.prefix(77)) + "..." : escaped
    }

    static func moment(_ text: String, _ option: String, _ command: CommandName?, zoneGiven: Bool = false) throws -> MomentSpec {
        switch MomentText.read(text, zoneGiven: zoneGiven) {
        case .moment(let moment):
            return moment
        case .refused(let reason):
            throw UsageError("\(option) \(text) \(reason)", command: command)
        case .unrecognized:
            throw UsageError(
                "\(option) takes a moment: a date (2027-01-15), a date and time (2027-01-15T08:00:00Z), or an age like 90m, 3h, 2d, not '\(text)'",
                command: command)
        }
    }

    /// Reads `2027-01-15` (midnight UTC), `2027-01-15T08:00:00Z` (or with an offset, or
    /// fractional seconds, or without seconds), or an age counted back from now: `90s`, `45m`
    /// (or `45min`), `3h`, `2d`, `1w`; `nil` for anything else, impossible dates included. With
    /// `zoneGiven`, a date or a date and time without a zone is a ``WallClockTime``.
    package static func parseMoment(_ text: String, zoneGiven: Bool = false) -> MomentSpec? {
        if case .moment(let moment) = MomentText.read(text, zoneGiven: zoneGiven) { return moment }
        return nil
    }

    /// `--tz`'s value: `UTC`, `local`, `member`, an IANA name, or an offset like `+01:00`.
    static func zone(_ text: String) throws -> ZoneChoice {
        switch text.lowercased() {
        case "utc", "z", "gmt": return .utc
        case "local": return .local
        case "member", "device": return .member
        default: break
        }
        if let first = text.first, first == "+" || first == "-" {
            switch UTCOffset.read(text[...]) {
            case .seconds(let seconds): return .offset(seconds: seconds)
            case .outOfRange: throw UsageError("--tz \(text) \(UTCOffset.outOfRangeReason)")
            case .unrecognized: break
            }
        } else if TimeZone(identifier: text) != nil {
            return .named(text)
        }
        throw UsageError("--tz \(text) is not a time zone: give UTC, local (this machine's), member (the device's, as the "
            + "journal recorded it), a name like Europe/Berlin, or an offset like +01:00")
    }

    /// `--now`'s value: a moment, never an age (an age of what?).
    static func now(_ text: String, zoneGiven: Bool) throws -> MomentSpec {
        let moment = try moment(text, "--now", nil, zoneGiven: zoneGiven)
        if case .ago = moment {
            throw UsageError("--now \(text) is an age; --now takes a moment, like 2027-01-15T10:30:00Z: the moment the output reads as now")
        }
        return moment
    }

    private static func checkOrder(_ since: MomentSpec?, _ until: MomentSpec?, _ command: CommandName) throws {
        guard let since, let until else { return }
        let reference = Date(timeIntervalSinceReferenceDate: 0)
        let comparable: Bool
        switch (since, until) {
        case (.absolute, .absolute), (.ago, .ago), (.wallClock, .wallClock): comparable = true
        default: comparable = false
        }
        if comparable, since.resolve(now: reference) >= until.resolve(now: reference) {
            throw UsageError("--since must come before --until", command: command)
        }
    }
}

/// The arguments after the command, consumed one by one.
private struct Tokens {
    private var items: [String]
    private var index = 0

    init(_ items: [String]) {
        self.items = items
    }

    var peek: String? { index < items.count ? items[index] : nil }

    mutating func advance() { index += 1 }

    mutating func next() -> String? {
        defer { index += 1 }
        return peek
    }

    /// Splits an option from its value (`--limit 5`, `--limit=5`); a flag or positional comes
    /// back with no value.
    mutating func option(_ token: String, command: CommandName) throws -> (String, String?) {
        guard token.hasPrefix("--") else {
            if token.hasPrefix("-") && token.count > 1 {
                throw UsageError("unknown option '\(token)' for \(command.rawValue); options are long, like --limit", command: command)
            }
            return (token, nil)
        }
        if let equals = token.firstIndex(of: "=") {
            let name = String(token[..<equals])
            let value = String(token[token.index(after: equals)...])
            guard CommandLineParser.valueOptions.contains(name) else {
                throw UsageError("\(name) takes no value", command: command)
            }
            guard !value.isEmpty else { throw UsageError("\(name) needs a value", command: command) }
            return (name, value)
        }
        guard CommandLineParser.valueOptions.contains(token) else { return (token, nil) }
        guard let value = next() else { throw UsageError("\(token) needs a value", command: command) }
        return (token, value)
    }

    func unexpected(_ token: String, command: CommandName) -> UsageError {
        if token.hasPrefix("-") {
            return UsageError("unknown option '\(token)' for \(command.rawValue)", command: command)
        }
        return UsageError("unexpected argument '\(token)' for \(command.rawValue)", command: command)
    }

    mutating func expectEnd(command: CommandName) throws {
        if let token = next() { throw unexpected(token, command: command) }
    }
}
