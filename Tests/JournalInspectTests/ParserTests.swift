import Foundation
import JournalInspect
import Outbox
import OutboxAudit
import Testing

@Suite("Parsing the command line, in-process")
struct ParserTests {
    private func parse(_ line: String) -> Result<Invocation, UsageError> {
        CommandLineParser.parse(line.split(separator: " ").map(String.init))
    }

    private func command(_ line: String) throws -> (command: Command, json: Bool) {
        guard case .success(.run(let journal, let command, let json, _, _)) = parse(line) else {
            throw FixtureError.unexpected("'\(line)' did not parse to a run: \(parse(line))")
        }
        #expect(journal == "j")
        return (command, json)
    }

    private func usageError(_ line: String) throws -> UsageError {
        guard case .failure(let error) = parse(line) else {
            throw FixtureError.unexpected("'\(line)' parsed: \(parse(line))")
        }
        return error
    }

    @Test func aKeyFileIsAcceptedAnywhere() {
        for line in ["j --key-file k ops", "j ops --key-file k", "j ops --key-file=k --json"] {
            guard case .success(.run(_, _, _, let keyFile, _)) = parse(line) else {
                Issue.record("'\(line)' did not parse")
                continue
            }
            #expect(keyFile == "k")
        }
        guard case .failure(let error) = parse("j ops --key-file") else {
            Issue.record("a key file without a path parsed")
            return
        }
        #expect(error.message.contains("--key-file needs"))
    }

    // MARK: Help and version

    @Test(arguments: ["--help", "-h", "j --help", "help", "j -h"])
    func helpForTheToolAnywhere(_ line: String) {
        #expect(parse(line) == .success(.help(.tool)))
    }

    @Test(arguments: CommandName.allCases)
    func helpForEachCommand(_ name: CommandName) {
        #expect(parse("j \(name.rawValue) --help") == .success(.help(.command(name))))
        #expect(parse("\(name.rawValue) -h") == .success(.help(.command(name))))
        #expect(parse("help \(name.rawValue)") == .success(.help(.command(name))))
        #expect(parse("j \(name.rawValue) --limit x --help") == .success(.help(.command(name))), "help wins over a bad option")
        let text = HelpText.text(for: .command(name))
        #expect(text.contains("journal-inspect <journal-dir> \(name.rawValue)"))
        #expect(text.contains("EXAMPLES"))
    }

    @Test func theToolsHelpNamesEveryCommandAndExitCode() {
        let text = HelpText.text(for: .tool)
        for name in CommandName.allCases { #expect(text.contains("  \(name.rawValue)")) }
        for code in ["0", "1", "64", "65", "66", "73"] { #expect(text.contains("  \(code)  ")) }
        #expect(text.contains("exists (without --force)"), "exit 73 names what --force allows")
        #expect(text.contains("NO_COLOR"))
        for option in ["--json", "--key-file", "--tz", "--now", "--help", "--version"] { #expect(text.contains(" \(option)"), "\(option)") }
    }

    /// Every option a command takes is in its help.
    @Test func eachCommandsHelpNamesEveryOptionItTakes() {
        let options: [CommandName: [String]] = [
            .ops: ["--status", "--category", "--type", "--since", "--until", "--search", "--limit", "--json"],
            .timeline: ["--payload", "--full", "--json"],
            .attachment: ["--json"],
            .events: ["--from", "--to", "--kind", "--type", "--operation", "--since", "--until", "--limit", "--follow", "--json"],
            .ledger: ["--status", "--since", "--until", "--limit", "--csv", "--json"],
            .export: ["--all", "--payload"],
            .report: ["--html", "--limit", "--force", "--json"],
            .record: ["--payload", "--json"],
            .records: ["--after", "--limit", "--payload", "--json"],
        ]
        for (name, names) in options {
            let text = HelpText.text(for: .command(name))
            for option in names { #expect(text.contains("  \(option)"), "\(name.rawValue) \(option)") }
        }
        for kind in JournalEventKind.allCases { #expect(HelpText.text(for: .command(.events)).contains(kind.rawValue), "\(kind)") }
    }

    @Test func versionAlone() {
        #expect(parse("--version") == .success(.version))
    }

    // MARK: Commands and options

    @Test func summaryIsTheDefaultAndTakesJSON() throws {
        #expect(try command("j").command == .summary)
        #expect(try command("j summary").command == .summary)
        let json = try command("j summary --json")
        #expect(json.command == .summary && json.json)
        #expect(try command("j --json").json, "--json anywhere")
    }

    @Test func opsTakesEveryFilter() throws {
        var expected = OpsOptions()
        expected.statuses = [.queued, .blocked, .pendingApproval]
        expected.categories = ["Products", "Employees"]
        expected.types = ["product.create"]
        expected.since = .ago(seconds: 3 * 86_400)
        expected.until = .absolute(Date(timeIntervalSince1970: 1_800_000_000))
        expected.limit = 7
        let parsed = try command(
            "j ops --status queued,blocked --status pending-approval --category Products,Employees --type=product.create "
                + "--since 3d --until 2027-01-15T08:00:00Z --limit 7 --json")
        #expect(parsed.command == .ops(expected))
        #expect(parsed.json)
        #expect(try command("j ops").command == .ops(OpsOptions()))
    }

    @Test func opsTakesASearch() throws {
        var expected = OpsOptions()
        expected.search = "crème hydratante"
        let parsed = CommandLineParser.parse(["j", "ops", "--search", "crème hydratante"])
        #expect(parsed == .success(.run(journal: "j", command: .ops(expected), json: false)))
        #expect(CommandLineParser.parse(["j", "ops", "--search=gauze"]) == .success(.run(journal: "j", command: .ops({
            var options = OpsOptions()
            options.search = "gauze"
            return options
        }()), json: false)))
    }

    /// `--tz` and `--now` are accepted anywhere, before or after the command; a zone-less time
    /// is a wall-clock time only when `--tz` is given.
    @Test func theZoneAndTheMomentReadAsNowAreAcceptedAnywhere() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for (line, zone) in [("j --tz member ops", ZoneChoice.member), ("j ops --tz=Europe/Berlin", .named("Europe/Berlin")),
                             ("j ops --tz -03:00", .offset(seconds: -10_800)), ("j ops --tz +05:30", .offset(seconds: 19_800)),
                             ("j ops --tz local", .local), ("j ops --tz UTC", .utc), ("j ops --tz z", .utc)] {
            guard case .success(.run(_, _, _, _, let view)) = parse(line + " --now 2027-01-15T08:00:00Z") else {
                Issue.record("'\(line)' did not parse")
                continue
            }
            #expect(view == ViewOptions(zone: zone, now: .absolute(now)), "\(line)")
        }
        guard case .success(.run(_, .ops(let options), _, _, _)) = parse("j ops --since 2027-01-15T09:00 --tz member") else {
            Issue.record("a zone-less --since with --tz did not parse")
            return
        }
        #expect(options.since == .wallClock(WallClockTime(day: 20_833, seconds: 9 * 3600)))
        #expect(try usageError("j ops --tz Mars/Base").message.hasPrefix("--tz Mars/Base is not a time zone: give UTC, local"))
        #expect(try usageError("j ops --tz +24:00").message == "--tz +24:00 has an offset no zone has: an offset runs from -23:59 to +23:59")
        #expect(try usageError("j ops --tz +05:7x").message.hasPrefix("--tz +05:7x is not a time zone"))
        #expect(try usageError("j ops --tz").message.hasPrefix("--tz needs a zone"))
        #expect(try usageError("j ops --now").message.hasPrefix("--now needs a moment"))
        #expect(try usageError("j ops --now 2d").message.hasPrefix("--now 2d is an age; --now takes a moment"))
        #expect(try usageError("j ops --now 2027-02-30").message.hasPrefix("--now 2027-02-30 is not a date"))
    }

    @Test func timelineTakesAnIDAndPayload() throws {
        var expected = TimelineOptions(id: "6c4ef3ca")
        #expect(try command("j timeline 6c4ef3ca").command == .timeline(expected))
        expected.includePayload = true
        #expect(try command("j timeline --payload 6c4ef3ca").command == .timeline(expected))
        let full = "6C4EF3CA-1B2C-4D5E-8F90-0A1B2C3D4E5F"
        #expect(try command("j timeline \(full) --json").command == .timeline(TimelineOptions(id: full)))
        expected.full = true
        #expect(try command("j timeline --payload 6c4ef3ca --full").command == .timeline(expected))
    }

    @Test func eventsTakesRangeKindTypeOperationTimeLimitAndFollow() throws {
        var expected = EventsOptions()
        expected.from = 10
        expected.to = 20
        expected.kinds = [.attemptFinished, .enqueued]
        expected.types = ["product.create"]
        expected.operation = "abc1"
        expected.since = .ago(seconds: 5400)
        expected.until = .ago(seconds: 60)
        expected.limit = 5
        #expect(try command("j events --from 10 --to=20 --kind attemptfinished,enqueued --type product.create "
            + "--operation abc1 --since 90m --until 60s --limit 5").command == .events(expected))
        var follow = EventsOptions()
        follow.follow = true
        follow.from = 3
        #expect(try command("j events --follow --from 3").command == .events(follow))
    }

    @Test func ledgerTakesStatusTimeLimitAndCSV() throws {
        var expected = LedgerOptions()
        expected.status = .failed
        expected.since = .absolute(Date(timeIntervalSince1970: 1_799_971_200))
        expected.until = .ago(seconds: 3600)
        expected.limit = 10
        expected.csv = true
        #expect(try command("j ledger --status failed --since 2027-01-15 --until 1h --limit 10 --csv").command == .ledger(expected))
        #expect(try command("j ledger --json").json)
    }

    @Test func verifyTakesJSON() throws {
        #expect(try command("j verify").command == .verify)
        #expect(try command("j verify --json").json)
    }

    @Test func exportTakesIDsOrAllAndPayload() throws {
        var ids = ExportOptions()
        ids.ids = ["abc", "def0"]
        #expect(try command("j export abc def0").command == .export(ids))
        var all = ExportOptions()
        all.all = true
        all.includePayload = true
        #expect(try command("j export --all --payload --json").command == .export(all))
    }

    @Test func reportTakesHTMLIDsAndLimit() throws {
        var expected = ReportOptions(htmlPath: "out.html")
        expected.ids = ["abc"]
        expected.limit = 3
        #expect(try command("j report --html out.html abc --limit 3").command == .report(expected))
        #expect(try command("j report --html=r.html").command == .report(ReportOptions(htmlPath: "r.html")))
        var forced = ReportOptions(htmlPath: "r.html")
        forced.force = true
        #expect(try command("j report --force --html r.html").command == .report(forced))
        #expect(try usageError("j ops --force").message == "unknown option '--force' for ops", "only report writes a file")
    }

    // MARK: Records

    private func arguments(_ words: String...) -> Result<Invocation, UsageError> {
        CommandLineParser.parse(["j"] + words)
    }

    @Test func recordTakesAKeyAndPayload() throws {
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
        #expect(try command("j record pharmacy-7/product/7d0c3a52").command == .record(RecordOptions(key: key)))
        var withValues = RecordOptions(key: key)
        withValues.includeValues = true
        let parsed = try command("j record --payload pharmacy-7/product/7d0c3a52 --json")
        #expect(parsed.command == .record(withValues) && parsed.json)
        // The id is everything after the second slash, byte for byte.
        let slashed = RecordOptions(key: RecordKey(business: "b", type: "t", id: "shelf/3/left"))
        #expect(try command("j record b/t/shelf/3/left").command == .record(slashed))
        let nfd = "cre\u{301}me"
        guard case .success(.run(_, .record(let options), _, _, _)) = arguments("record", "b/t/\(nfd)") else {
            Issue.record("a decomposed id did not parse")
            return
        }
        #expect(Array(options.key.id.utf8) == Array(nfd.utf8), "the id's bytes as typed, not normalized")
    }

    @Test func recordsTakesABusinessAndTypeAfterLimitAndPayload() throws {
        #expect(try command("j records pharmacy-7/product").command == .records(RecordsOptions(business: "pharmacy-7", type: "product")))
        var expected = RecordsOptions(business: "pharmacy-7", type: "product")
        expected.after = "7d0c3a52"
        expected.limit = 20
        expected.includeValues = true
        #expect(try command("j records pharmacy-7/product --after 7d0c3a52 --limit=20 --payload").command == .records(expected))
        #expect(RecordsOptions(business: "b", type: "t").limit == 100)
        var largest = RecordsOptions(business: "b", type: "t")
        largest.limit = RecordQuery.maxLimit
        #expect(try command("j records b/t --limit 10000").command == .records(largest))
    }

    /// Keys at their bounds parse; one byte over is refused naming the part, its size and the limit.
    @Test func recordKeyPartsAreBoundedInBytes() throws {
        let business = String(repeating: "b", count: RecordKey.maxBusinessBytes)
        let type = String(repeating: "t", count: RecordKey.maxTypeBytes)
        let id = String(repeating: "i", count: RecordKey.maxIDBytes)
        guard case .success(.run(_, .record(let options), _, _, _)) = arguments("record", "\(business)/\(type)/\(id)") else {
            Issue.record("a key at its bounds did not parse")
            return
        }
        #expect(options.key == RecordKey(business: business, type: type, id: id))
        let over: [(String, String)] = [
            ("\(business)b/\(type)/\(id)", "its business is 129 bytes (UTF-8), over the limit of 128"),
            ("\(business)/\(type)t/\(id)", "its type is 65 bytes (UTF-8), over the limit of 64"),
            ("\(business)/\(type)/\(id)i", "its id is 256 bytes (UTF-8), over the limit of 255"),
            // 65 characters of two bytes each: bytes are what count.
            ("\(String(repeating: "é", count: 65))/t/x", "its business is 130 bytes (UTF-8), over the limit of 128"),
            ("b/t/gauze\u{7}10", "its id must not contain control characters"),
        ]
        for (key, problem) in over {
            guard case .failure(let error) = arguments("record", key) else {
                Issue.record("\(key.prefix(20))... parsed")
                continue
            }
            #expect(error.message.hasPrefix("the record ") && error.message.hasSuffix("cannot be in a journal: \(problem)"),
                    "\(error.message)")
            #expect(error.command == .record)
            #expect(!error.message.contains("\u{7}"), "a control character is shown escaped")
        }
        guard case .failure(let long) = arguments("record", "\(business)/\(type)/\(id)i") else { return }
        #expect(long.message.count < 200, "a long key is cut short in the message")
        guard case .failure(let records) = arguments("records", "b/\(type)t") else {
            Issue.record("an over-long type parsed for records")
            return
        }
        #expect(records.message.hasSuffix("its type is 65 bytes (UTF-8), over the limit of 64") && records.command == .records)
        guard case .failure(let after) = arguments("records", "b/t", "--after", id + "i") else {
            Issue.record("an over-long --after parsed")
            return
        }
        #expect(after.message.hasSuffix("a record's id is 256 bytes (UTF-8), over the limit of 255"), "\(after.message)")
    }

    @Test(arguments: [
        ("j record", "record needs a record: <business>/<type>/<id>"),
        ("j record pharmacy-7/product", "'pharmacy-7/product' is not a record: give <business>/<type>/<id>, like pharmacy-7/product/7d0c3a52"),
        ("j record pharmacy-7//7d0c3a52", "is not a record"),
        ("j record /product/7d0c3a52", "is not a record"),
        ("j record pharmacy-7/product/", "is not a record"),
        ("j record b/t/x b/t/y", "unexpected argument 'b/t/y' for record"),
        ("j record b/t/x --full", "unknown option '--full' for record"),
        ("j records", "records needs a business and a type: <business>/<type>"),
        ("j records pharmacy-7", "'pharmacy-7' is not a business and a type: give <business>/<type>"),
        ("j records pharmacy-7/", "is not a business and a type"),
        ("j records pharmacy-7/product/7d0c3a52", "give <business>/<type>, like pharmacy-7/product; 'record pharmacy-7/product/7d0c3a52' shows one record"),
        ("j records b/t --limit 10001", "--limit takes at most 10000 records a page, not 10001"),
        ("j records b/t --limit 0", "--limit takes a whole number above 0"),
        ("j records b/t --after", "--after needs a value"),
    ])
    func aBadRecordOrScopeSaysWhatToGive(_ line: String, _ message: String) throws {
        let error = try usageError(line)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(error.command == (line.hasPrefix("j records") ? .records : .record))
    }

    @Test func aBadRecordKeyRunExitsSixtyFourBeforeAnyJournalIsOpened() {
        let run = inspect(["/nonexistent/journal", "record", "pharmacy-7/product"])
        #expect(run.code == .usage && run.output.isEmpty)
        #expect(run.errors == "journal-inspect: error: 'pharmacy-7/product' is not a record: give <business>/<type>/<id>, like "
            + "pharmacy-7/product/7d0c3a52\nRun 'journal-inspect record --help' for usage.\n")
    }

    @Test(arguments: [
        ("2027-01-15", MomentSpec.absolute(Date(timeIntervalSince1970: 1_799_971_200))),
        ("2027-01-15T08:00:00Z", .absolute(Date(timeIntervalSince1970: 1_800_000_000))),
        ("2027-01-15T09:00:00+01:00", .absolute(Date(timeIntervalSince1970: 1_800_000_000))),
        ("2027-01-15T08:00:00.500Z", .absolute(Date(timeIntervalSince1970: 1_800_000_000.5))),
        ("90s", .ago(seconds: 90)), ("45m", .ago(seconds: 2700)), ("45min", .ago(seconds: 2700)),
        ("3h", .ago(seconds: 10_800)), ("2d", .ago(seconds: 172_800)), ("1w", .ago(seconds: 604_800)),
        ("1.5h", .ago(seconds: 5400)),
        ("2028-02-29", .absolute(Date(timeIntervalSince1970: 1_835_395_200))),
        ("2000-02-29T00:00:00Z", .absolute(Date(timeIntervalSince1970: 951_782_400))),
        ("1970-01-01T00:00Z", .absolute(Date(timeIntervalSince1970: 0))),
        ("2027-01-15T08:00Z", .absolute(Date(timeIntervalSince1970: 1_800_000_000))),
        ("2027-01-15t08:00:00z", .absolute(Date(timeIntervalSince1970: 1_800_000_000))),
        ("2027-01-15T02:30:00-05:30", .absolute(Date(timeIntervalSince1970: 1_800_000_000))),
        ("2027-01-15T23:59:59.25+00:00", .absolute(Date(timeIntervalSince1970: 1_800_057_599.25))),
        ("2027-12-31", .absolute(Date(timeIntervalSince1970: 1_830_211_200))),
    ])
    func momentsAreDatesOrAges(_ text: String, _ expected: MomentSpec) {
        #expect(CommandLineParser.parseMoment(text) == expected)
    }

    /// Each moment that does not exist is refused naming the option, the value and the field
    /// out of range: none rolls forward into the next day or month.
    @Test(arguments: [
        ("2027-02-29", "is not a date: February 2027 has 28 days, from 01 to 28"),
        ("1900-02-29", "is not a date: February 1900 has 28 days"),
        ("2027-13-01", "is not a date: there is no month 13"),
        ("2027-00-10", "is not a date: there is no month 0"),
        ("2027-04-31", "is not a date: April 2027 has 30 days, from 01 to 30"),
        ("2027-01-32", "is not a date: January 2027 has 31 days"),
        ("2027-01-00", "is not a date: January 2027 has 31 days"),
        ("0000-01-01", "is not a date: there is no year 0"),
        ("2027-01-15T25:00", "is not a time: hours run from 00 to 23, not 25"),
        ("2027-01-15T24:00:00Z", "is not a time: hours run from 00 to 23, not 24"),
        ("2027-01-15T08:60:00Z", "is not a time: minutes run from 00 to 59, not 60"),
        ("2027-01-15T23:59:60Z", "is not a time: seconds run from 00 to 59, not 60"),
        ("2027-01-15T08:00:00+25:00", "has an offset no zone has: an offset runs from -23:59 to +23:59"),
        ("2027-01-15T08:00:00+01:75", "has an offset no zone has: an offset runs from -23:59 to +23:59"),
        ("2027-01-15T08:00:00", "has no zone: add Z for UTC"),
        ("2027-02-29T08:00:00Z", "is not a date: February 2027 has 28 days"),
    ])
    func anImpossibleMomentIsRefusedNamingTheOptionAndTheValue(_ text: String, _ reason: String) throws {
        #expect(CommandLineParser.parseMoment(text) == nil)
        for option in ["--since", "--until"] {
            let error = try usageError("j ops \(option) \(text)")
            #expect(error.message.hasPrefix("\(option) \(text) \(reason)"), "\(error.message)")
            #expect(error.command == .ops)
        }
        let run = inspect(["j", "events", "--since", text])
        #expect(run.code == .usage && run.output.isEmpty)
        #expect(run.errors.hasPrefix("journal-inspect: error: --since \(text) \(reason)"))
    }

    @Test(arguments: ["2027-1-15", "27-01-15", "2027-01-15T8:00Z", "2027-01-15T08:00:00ZZ",
                      "2027-01-15T08:00:00.Z", "2027-01-15T08:00:00+0100", "2027/01/15", "0x10h", "h", "-3h", "1e3s", "١h"])
    func somethingThatIsNotAMomentIsRefusedWithTheFormsAccepted(_ text: String) throws {
        #expect(CommandLineParser.parseMoment(text) == nil)
        let error = try usageError("j ops --until \(text)")
        #expect(error.message.hasPrefix("--until takes a moment: a date (2027-01-15)"), "\(error.message)")
    }

    /// The calendar arithmetic agrees with Foundation's Gregorian calendar on every day from
    /// 1968 to 2104 (2000 a leap year, 2100 not).
    @Test func everyRealDayReadsAsFoundationsCalendarHasIt() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let first = try #require(calendar.date(from: DateComponents(year: 1968, month: 1, day: 1)))
        let last = try #require(calendar.date(from: DateComponents(year: 2104, month: 12, day: 31)))
        var day = first
        var checked = 0
        while day <= last {
            let parts = calendar.dateComponents([.year, .month, .day], from: day)
            let text = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
            guard CommandLineParser.parseMoment(text) == .absolute(day) else {
                Issue.record("\(text) does not read as \(day)")
                return
            }
            day = day.addingTimeInterval(86_400)
            checked += 1
        }
        #expect(checked == 50_039)
    }

    @Test func anAgeIsCountedBackFromNow() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(MomentSpec.ago(seconds: 60).resolve(now: now) == now.addingTimeInterval(-60))
        #expect(MomentSpec.absolute(now).resolve(now: .distantFuture) == now)
    }

    // MARK: Usage errors

    @Test(arguments: [
        ("", "give the journal's directory", nil),
        ("--json", "give the journal's directory", nil),
        ("--limit 5 j", "is not a journal directory", nil),
        ("j frobnicate", "unknown command 'frobnicate'", nil),
        ("help frobnicate", "unknown command 'frobnicate'", nil),
        ("help ops verify", "help takes at most one command name", nil),
        ("j summary extra", "unexpected argument 'extra' for summary", CommandName.summary),
        ("j summary --limit", "unknown option '--limit' for summary", .summary),
        ("j verify --csv", "unknown option '--csv' for verify", .verify),
        ("j ops --status done", "unknown status 'done'", .ops),
        ("j ops --status queued,", "--status has an empty item", .ops),
        ("j ops --limit", "--limit needs a value", .ops),
        ("j ops --limit=", "--limit needs a value", .ops),
        ("j ops --limit 0", "--limit takes a whole number above 0", .ops),
        ("j ops --limit ten", "--limit takes a whole number above 0", .ops),
        ("j ops --since yesterday", "--since takes a moment", .ops),
        ("j ops --until 2027-13-45", "--until 2027-13-45 is not a date: there is no month 13", .ops),
        ("j ops --since 1d --until 2d", "--since must come before --until", .ops),
        ("j ops --json=yes", "--json", nil),
        ("j ops --payload", "unknown option '--payload' for ops", .ops),
        ("j ops -s queued", "unknown option '-s' for ops", .ops),
        ("j ops queued", "unexpected argument 'queued' for ops", .ops),
        ("j timeline", "timeline needs an operation id", .timeline),
        ("j timeline abc def", "unexpected argument 'def' for timeline", .timeline),
        ("j timeline xyz", "'xyz' is not an operation id", .timeline),
        ("j timeline abc --payload=1", "--payload takes no value", .timeline),
        ("j timeline abc --limit 3", "unknown option '--limit' for timeline", .timeline),
        ("j events --from 0", "--from takes a seq", .events),
        ("j events --to -3", "--to takes a seq", .events),
        ("j events --from 9 --to 3", "--from 9 is after --to 3", .events),
        ("j events --kind enqueud", "unknown event kind 'enqueud'", .events),
        ("j events --follow --to 9", "--follow reads on past the journal's end", .events),
        ("j events --operation zz", "'zz' is not an operation id", .events),
        ("j ledger --status queued,failed", "unknown status 'queued,failed'", .ledger),
        ("j ledger --csv --json", "--csv and --json are two formats", .ledger),
        ("j export", "export needs operation ids", .export),
        ("j export abc --all", "give operation ids or --all, not both", .export),
        ("j export --limit 3 --all", "unknown option '--limit' for export", .export),
        ("j report", "report needs --html <file>", .report),
        ("j report --html", "--html needs a value", .report),
        ("j report --html r.html --csv", "unknown option '--csv' for report", .report),
    ] as [(String, String, CommandName?)])
    func eachUsageErrorSaysWhatIsWrong(_ line: String, _ message: String, _ command: CommandName?) throws {
        let error = try usageError(line)
        #expect(error.message.contains(message), "\(error.message)")
        if let command { #expect(error.command == command) }
    }

    @Test func aUsageErrorRunExitsSixtyFourAndPointsAtTheHelp() {
        let run = inspect(["j", "ops", "--status", "done"])
        #expect(run.code == .usage)
        #expect(run.output.isEmpty)
        #expect(run.errors.hasPrefix("journal-inspect: error: unknown status 'done'"))
        #expect(run.errors.contains("Run 'journal-inspect ops --help' for usage."))
        let help = inspect(["--help"])
        #expect(help.code == .success && help.output == HelpText.text(for: .tool) && help.errors.isEmpty)
        let version = inspect(["--version"])
        #expect(version.code == .success && version.output.hasPrefix("journal-inspect \(JournalInspect.version)"))
    }
}
