import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// The `journal-inspect` executable itself: exit statuses, streams, a live journal.
@Suite("The journal-inspect binary", .hangGuard)
struct BinaryTests {
    let directory = TemporaryDirectory()

    @Test func everyCommandRunsAndLeavesTheDataFileByteForByteUnchanged() async throws {
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let path = directory.url.path
        // Beside the journal, never in its directory.
        let reports = TemporaryDirectory()
        let report = reports.path("report.html").path
        let before = try dataFileDigest(directory.url)
        let runs: [([String], Int32)] = [
            ([path], 0),
            ([path, "summary", "--json"], 0),
            ([path, "ops", "--status", "queued"], 0),
            ([path, "timeline", String(journal.blocked.idempotencyKey.prefix(8))], 0),
            ([path, "events", "--limit", "5", "--json"], 0),
            ([path, "ledger", "--csv"], 0),
            ([path, "verify"], 0),
            ([path, "export", "--all"], 0),
            ([path, "report", "--html", report], 0),
            // The options that change how moments print and what is listed read the same way.
            ([path, "--tz", "member", "--now", "2027-01-16T08:00:00Z"], 0),
            ([path, "ops", "--search", "antiseptic", "--tz", "Europe/Berlin", "--since", "2027-01-15T09:00"], 0),
            ([path, "timeline", String(journal.synced.idempotencyKey.prefix(8)), "--full", "--tz", "+05:30", "--json"], 0),
            ([path, "events", "--tz", "local", "--now", "2027-01-16T08:00:00Z", "--limit", "3"], 0),
            ([path, "ledger", "--csv", "--tz", "member"], 0),
            ([path, "export", "--all", "--now", "2027-01-16T08:00:00Z"], 0),
            ([path, "report", "--html", report, "--force", "--tz", "member", "--now", "2027-01-16T08:00:00Z"], 0),
        ]
        for (arguments, status) in runs {
            // The machine's zone, for --tz local, is set: no output depends on where the test runs.
            let result = try runBinary(arguments, environment: ["TZ": "Africa/Lagos"])
            #expect(result.status == status, "\(arguments): \(result.errors)")
            #expect(!result.output.isEmpty, "\(arguments)")
            #expect(!result.output.contains("\u{1B}["), "no colour when standard output is not a terminal")
            #expect(try dataFileDigest(directory.url) == before, "\(arguments) changed data.mdb")
        }
        let timeline = try runBinary([path, "timeline", String(journal.blocked.idempotencyKey.prefix(8))])
        #expect(timeline.output.contains("Verdict: blocked: 403 on attempt 1, waiting for a person"))
        #expect(FileManager.default.fileExists(atPath: report))
    }

    @Test func exitStatusesAndMessagesGoWhereTheyBelong() async throws {
        let journal = directory.path("journal")
        let ids = try await writeQueuedJournal(into: journal, count: 2)

        let usage = try runBinary([journal.path, "ops", "--limit", "zero"])
        #expect(usage.status == 64 && usage.output.isEmpty)
        #expect(usage.errors.contains("--limit takes a whole number above 0, not 'zero'"))

        let help = try runBinary(["timeline", "--help"])
        #expect(help.status == 0 && help.output == HelpText.text(for: .command(.timeline)) && help.errors.isEmpty)

        let missing = try runBinary([directory.path("gone").path])
        #expect(missing.status == 66 && missing.errors.contains("nothing exists at this path"))

        let unknown = try runBinary([journal.path, "timeline", ids[0].idempotencyKey.replacingOccurrences(of: "-", with: "") + "0"])
        #expect(unknown.status == 64 && unknown.errors.contains("no operation's id starts with"))

        try Tamper.appendRaw(journal, operation: ids[1], body: .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)))
        try Tamper.appendRaw(journal, operation: ids[1], body: .requeued(Requeued(requestedBy: .member)))
        let findings = try runBinary([journal.path, "verify"])
        #expect(findings.status == 1)
        #expect(findings.output.contains("illegal_transition") || findings.output.contains("event_after_terminal"))

        try Tamper.flipByte(journal, seq: 2)
        let damaged = try runBinary([journal.path, "timeline", ids[0].idempotencyKey])
        #expect(damaged.status == 65)
        #expect(damaged.errors.contains("the record at seq 2 is damaged"))

        try Tamper.setMeta(journal, key: "format-version", to: 9)
        let newer = try runBinary([journal.path])
        #expect(newer.status == 66 && newer.errors.contains("written in journal format 9"))
    }

    @Test func followPrintsWhatARunningEngineWritesAsItWritesIt() async throws {
        let clock = ManualClock(now: fixtureStart)
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try Outbox(directory: directory.url, transport: server,
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        defer { outbox.close() }
        let first = try await outbox.enqueue(product(1))

        let inspector = try RunningInspector([directory.url.path, "events", "--follow", "--json"])
        var printed: [[String: Any]] = []
        func read(through seq: JournalSequence) throws {
            while (printed.last?["seq"] as? Int).map({ $0 < Int(seq.rawValue) }) ?? true {
                guard let line = inspector.nextLine() else { throw FixtureError.unexpected("the follower ended early") }
                printed.append(try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
            }
        }
        try read(through: try outbox.lastSeq())
        #expect(printed.map { $0["kind"] as? String } == ["journalOpened", "enqueued"])
        #expect(printed.last?["operationID"] as? String == first.idempotencyKey)

        // The engine keeps writing while the follower runs in another process.
        var more: [OperationID] = []
        for number in 2...4 { more.append(try await outbox.enqueue(product(number))) }
        try read(through: try outbox.lastSeq())
        // Offline, a pass stops at its first unanswered attempt: one pass per row.
        for _ in 1...4 { await outbox.drain() }
        try read(through: try outbox.lastSeq())

        let seqs = printed.compactMap { $0["seq"] as? Int }
        #expect(seqs == Array(1...Int(try outbox.lastSeq().rawValue)), "every event once, in order")
        let enqueued = printed.filter { $0["kind"] as? String == "enqueued" }.compactMap { $0["operationID"] as? String }
        #expect(enqueued == ([first] + more).map(\.idempotencyKey))
        #expect(printed.filter { $0["kind"] as? String == "attemptFinished" }.count == 4)
        #expect(inspector.stop() == 0, "interrupted, it ends cleanly")
    }

    @Test func recordAndRecordsRunAsTheBinaryAndABadKeyExitsSixtyFour() async throws {
        let journal = try await EverySyncStateJournal.write(into: directory.url)
        let path = directory.url.path
        let before = try dataFileDigest(directory.url)
        let shown = try runBinary([path, "record", journal.rolledBack.description, "--now", "2027-01-15T10:00:00Z"])
        #expect(shown.status == 0 && shown.errors.isEmpty, "\(shown.errors)")
        #expect(shown.output.contains("Sync    rolled back: \(EventText.shortID(journal.refusedWrite)) failed, validation_failed: "
            + "\"Price must be positive\""))
        #expect(shown.output.contains("\nVerdict: shows value "))
        let page = try runBinary([path, "records", "pharmacy-7/product", "--json"])
        #expect(page.status == 0)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(page.output.utf8)) as? [String: Any])
        #expect((document["records"] as? [[String: Any]])?.count == journal.listedProducts.count)
        let bad = try runBinary([path, "record", "pharmacy-7/product/" + String(repeating: "x", count: 256)])
        #expect(bad.status == 64 && bad.output.isEmpty)
        #expect(bad.errors.contains("cannot be in a journal: its id is 256 bytes (UTF-8), over the limit of 255"))
        #expect(try dataFileDigest(directory.url) == before)
    }
}
