import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// `--tz` prints every moment of every command in one zone (the member's own, as the engine
/// recorded it, by default UTC) and reads zone-less `--since`/`--until` in it; `--now` fixes the
/// moment every age counts to. Every test names its zone: none depends on the machine's.
@Suite("Moments in the member's zone, ages as of a given now", .hangGuard)
struct TimeZoneTests {
    let directory = TemporaryDirectory()

    private var journal: URL { directory.path("journal") }

    /// A member in São Paulo (UTC-03:00): an order at 08:40 her time, synced; one at 09:15, met
    /// by a 503 and due again at 09:15:02; both written through the engine, which records her zone.
    private func write() async throws -> (synced: OperationID, queued: OperationID) {
        let clock = ManualClock(now: Ticket.moment("2027-01-15T11:40:00Z"))
        clock.setTimeZone(try #require(TimeZone(identifier: "America/Sao_Paulo")))
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":"1"}"#)))
        let outbox = try Outbox(directory: journal, transport: transport, configuration: OutboxConfiguration(
            account: "lucia", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        let synced = try await outbox.enqueue(product(1, label: "Order 1187", category: "Orders", type: "order.create"))
        await outbox.drain()
        clock.advance(by: 35 * 60)
        transport.script(.respond(.error(503, code: "server_unavailable", message: "Try again in a moment")))
        let queued = try await outbox.enqueue(product(2, label: "Order 1188", category: "Orders", type: "order.create"))
        await outbox.drain()
        outbox.close()
        return (synced, queued)
    }

    private func run(_ arguments: [String], now: Date = fixtureStart, sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path] + arguments, now: now)
        #expect(try dataFileDigest(journal) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        #expect(result.errors.isEmpty, "\(arguments): \(result.errors)", sourceLocation: sourceLocation)
        return result
    }

    @Test func everyCommandThatPrintsMomentsPrintsThemInTheZoneAsked() async throws {
        let ids = try await write()
        let queued = EventText.shortID(ids.queued)
        let html = directory.path("report.html").path
        for zone in ["member", "America/Sao_Paulo", "-03:00"] {
            let tz = ["--tz", zone, "--now", "2027-01-15T16:00:00Z"]
            let summary = try run(tz).output
            #expect(summary.contains("Last event      2027-01-15T09:15:00-03:00 (3 h 45 min ago)"), "\(zone)")
            #expect(summary.contains("Device zone     America/Sao_Paulo"))
            #expect(summary.contains(zone == "-03:00" ? "Shown in        UTC-03:00" : "Shown in        America/Sao_Paulo (UTC-03:00 on 2027-01-15)"))
            #expect(try run(["ops"] + tz).output.contains("\(queued)  2027-01-15T09:15:00-03:00  3 h 45 min ago"))
            let timeline = try run(["timeline", queued] + tz).output
            #expect(timeline.contains("Saved       2027-01-15T09:15:00-03:00 (3 h 45 min ago)"))
            #expect(timeline.contains("2027-01-15T09:15:02-03:00  server_unavailable: Try again in a moment"), "the NEXT DUE column")
            #expect(timeline.contains("Verdict: queued: 1 attempt, due since 2027-01-15T09:15:02-03:00"))
            #expect(try run(["events", "--limit", "1"] + tz).output.contains("2027-01-15T09:15:00-03:00  attemptFinished"))
            #expect(try run(["events", "--limit", "1"] + tz).output.contains("next at 2027-01-15T09:15:02-03:00"))
            #expect(try run(["ledger"] + tz).output.contains("2027-01-15T08:40:00-03:00"))
            #expect(try run(["ledger", "--csv"] + tz).output.contains(",2027-01-15T09:15:00-03:00,"))
            #expect(try run(["report", "--html", html, "--force"] + tz).code == .success)
            #expect(try String(contentsOfFile: html, encoding: .utf8).contains("saved 2027-01-15T09:15:00-03:00 (3 h 45 min ago)"))
            // JSON keeps its moments in UTC; the verdict is a sentence, in the zone asked.
            let export = try run(["export", queued] + tz).output
            #expect(export.contains(#""createdAt" : "2027-01-15T12:15:00Z""#))
            #expect(export.contains("due since 2027-01-15T09:15:02-03:00"))
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(try run(["--json"]).output.utf8)) as? [String: Any])
        #expect((summary["lastOpened"] as? [String: Any])?["timeZone"] as? String == "America/Sao_Paulo")
        let utc = try run(["timeline", queued, "--now", "2027-01-15T16:00:00Z"]).output
        #expect(utc.contains("Saved       2027-01-15T12:15:00Z (3 h 45 min ago)") && !utc.contains("Shown in"), "UTC is the default")
        #expect(try run(["timeline", queued, "--tz", "UTC", "--now", "2027-01-15T16:00:00Z"]).output == utc)
    }

    @Test func sinceAndUntilWithoutAZoneAreReadInTheZoneAsked() async throws {
        let ids = try await write()
        func listed(_ arguments: [String]) throws -> [String] {
            try run(["ops"] + arguments).output.split(separator: "\n").dropFirst().map { String($0.prefix(8)) }
        }
        #expect(try listed(["--tz", "member", "--since", "2027-01-15T09:00", "--until", "2027-01-15T09:30"]) == [EventText.shortID(ids.queued)])
        #expect(try listed(["--since", "2027-01-15T09:00Z", "--until", "2027-01-15T09:30Z"]).isEmpty, "09:15 in São Paulo is 12:15 UTC")
        #expect(try listed(["--tz", "member", "--since", "2027-01-15T08:40", "--until", "2027-01-15T08:41"]) == [EventText.shortID(ids.synced)])
        #expect(try listed(["--tz", "Asia/Tokyo", "--since", "2027-01-15T21:15"]) == [EventText.shortID(ids.queued)], "21:15 in Tokyo")
        // A date alone is the zone's midnight: the member's 15th began at 03:00 UTC.
        #expect(try listed(["--tz", "member", "--until", "2027-01-15"]).isEmpty)
        #expect(try listed(["--tz", "Asia/Tokyo", "--until", "2027-01-15"]).isEmpty, "Tokyo's 15th began at 15:00 UTC on the 14th")
        #expect(try listed(["--tz", "Asia/Tokyo", "--until", "2027-01-16"]).count == 2, "and its 16th at 15:00 UTC on the 15th")
        let events = try run(["events", "--tz", "member", "--since", "2027-01-15T09:15", "--kind", "enqueued"]).output
        #expect(events.contains(EventText.shortID(ids.queued)) && !events.contains(EventText.shortID(ids.synced)))
        #expect(try run(["ledger", "--tz", "member", "--until", "2027-01-15T09:00"]).output.contains(ids.synced.idempotencyKey.prefix(8)))

        let refused = inspect([journal.path, "ops", "--since", "2027-01-15T09:00"])
        #expect(refused.code == .usage && refused.errors.contains("has no zone: add Z for UTC, or an offset like +01:00, or give --tz"))
    }

    @Test func aZoneThatCannotBeReadIsAUsageErrorThatSaysWhatToGive() async throws {
        _ = try await write()
        let unknown = inspect([journal.path, "--tz", "Mars/Olympus_Mons"])
        #expect(unknown.code == .usage && unknown.errors.contains("--tz Mars/Olympus_Mons is not a time zone: give UTC, local"))
        let age = inspect([journal.path, "--now", "3d"])
        #expect(age.code == .usage && age.errors.contains("--now 3d is an age; --now takes a moment"))

        let old = directory.path("format1")
        try FormatOneJournal.plain.copy(into: old)
        let member = inspect([old.path, "ops", "--tz", "member"])
        #expect(member.code == .usage)
        #expect(member.errors.contains("--tz member: the journal records no device zone"))
        #expect(member.errors.contains("give the member's zone by name, like --tz Europe/Berlin"))
        #expect(inspect([old.path, "ops", "--tz", "Africa/Lagos"]).code == .success)
        #expect(inspect([old.path]).output.contains("Device zone     not recorded (the app last opened the journal with an engine older than journal format 2)"))
    }

    @Test func localIsTheZoneOfTheMachineTheToolRunsOn() async throws {
        let ids = try await write()
        let tokyo = try runBinary([journal.path, "ops", "--tz", "local", "--now", "2027-01-15T16:00:00Z"], environment: ["TZ": "Asia/Tokyo"])
        #expect(tokyo.status == 0 && tokyo.output.contains("\(EventText.shortID(ids.queued))  2027-01-15T21:15:00+09:00"), "\(tokyo.errors)")
        let lagos = try runBinary([journal.path, "ops", "--tz", "local", "--now", "2027-01-15T16:00:00Z"], environment: ["TZ": "Africa/Lagos"])
        #expect(lagos.output.contains("2027-01-15T13:15:00+01:00"))
    }

    @Test func nowFixesEveryAgeWhateverTheClock() async throws {
        let ids = try await write()
        let html = directory.path("report.html").path
        let commands = [[String](), ["ops"], ["timeline", EventText.shortID(ids.queued)], ["report", "--html", html, "--force"]]
        for command in commands {
            var printed: [String] = []
            for clock in [fixtureStart, fixtureStart.addingTimeInterval(30 * 86_400)] {
                let result = try run(command + ["--now", "2027-01-15T16:00:00Z"], now: clock)
                printed.append(command.first == "report" ? try String(contentsOfFile: html, encoding: .utf8) : result.output)
            }
            #expect(printed[0] == printed[1], "\(command): the same as of the same moment")
            #expect(printed[0].contains("3 h 45 min ago"), "\(command)")
        }
        let later = try run(["ops"], now: Ticket.moment("2027-01-16T16:00:00Z")).output
        #expect(later.contains("1 d 3 h ago"), "without --now, ages count to the clock")
        #expect(try run(["--now", "2027-01-15T16:00:00Z"]).output.contains("waiting 3 h 45 min since 2027-01-15T12:15:00Z"))
    }

    @Test(arguments: [
        // Berlin springs forward at 02:00 on 2027-03-28: 02:30 is skipped, read with the offset before.
        ("2027-03-28T02:30", "2027-03-28T01:30:00Z"),
        // It falls back at 03:00 on 2027-10-31: 02:30 comes twice, read as the first.
        ("2027-10-31T02:30", "2027-10-31T00:30:00Z"),
        ("2027-01-15T09:00", "2027-01-15T08:00:00Z"),
        ("2027-07-15", "2027-07-14T22:00:00Z"),
    ])
    func aWallClockTimeIsTheMomentTheZoneShowedIt(_ text: String, _ moment: String) throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        guard case .wallClock(let time)? = CommandLineParser.parseMoment(text, zoneGiven: true) else {
            Issue.record("\(text) did not read as a wall-clock time")
            return
        }
        #expect(Moments.absolute(time.moment(in: .system(berlin))) == moment)
    }
}
