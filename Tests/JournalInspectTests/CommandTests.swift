import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// Every command, human and JSON, run in-process on a journal the engine wrote with an
/// operation of every status. After each run, `data.mdb` must be byte-for-byte what it was.
@Suite("Each command on a journal of every status", .hangGuard)
struct CommandTests {
    let directory = TemporaryDirectory()

    private func fixture() async throws -> EveryStatusJournal {
        try await EveryStatusJournal.write(into: directory.url)
    }

    /// Runs the tool and checks the data file did not change.
    private func run(_ arguments: [String], color: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        let before = try dataFileDigest(directory.url)
        let result = inspect([directory.url.path] + arguments, color: color)
        #expect(try dataFileDigest(directory.url) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        return result
    }

    private func json(_ result: RunResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
        return try #require(object as? [String: Any], sourceLocation: sourceLocation)
    }

    private func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    // MARK: summary

    @Test func summaryShowsVersionsRangeCountsThePauseAndTheOldestPendingRow() async throws {
        let journal = try await fixture()
        let result = try run(["summary"])
        #expect(result.code == .success && result.errors.isEmpty)
        let text = result.output
        #expect(text.contains("journal format \(RecordCodec.formatVersion), projections layout \(JournalSchema.projectionVersion)"))
        #expect(text.contains("member-42"))
        #expect(text.contains("seq 1...37: 37 events"))
        #expect(text.contains("Last event      2027-01-15T09:11:06Z (48 min 54 s ago)"))
        #expect(text.contains("paused since 2027-01-15T09:10:06Z (49 min 54 s ago): token_expired, met by operation \(EventText.shortID(journal.paused))"))
        #expect(text.contains("Oldest pending  \(EventText.shortID(journal.queued)) \"Antiseptic 7\""))
        #expect(text.contains("by engine \(Outbox.engineVersion), app 2.3.1"))
        // The synced write waited 4 s with a route (from the 503 to its 201); the approval's answer
        // came at once. The queued writes wait behind the 401's pause, for a person to sign in; the
        // syncing one waits on the engine. A route seen at the last event counts up to it: the
        // oldest write, saved at 09:10:06 as the 401 came, has 1 min of connected age at 09:11:06.
        #expect(text.contains("Objective       2 of 2 writes acknowledged within 1 min of connected age (100.0 %)"))
        #expect(text.contains("Connected age   1 min of it with a route to the server; a route was seen at the last event"))
        #expect(text.contains("Oldest healthy  \(EventText.shortID(journal.syncing)), waiting 48 min 54 s, less than 1 s of it connected"))
        #expect(text.contains("Interrupted     0 attempts abandoned at an open, 0 cancelled by an expiry"))
        for (status, count) in [("queued", 2), ("syncing", 1), ("synced", 1), ("pending_approval", 1), ("failed", 1), ("blocked", 1),
                                ("withdrawn", 1), ("discarded", 1), ("total", 9)] {
            #expect(lines(text).contains { $0.hasPrefix(status + " ") && $0.hasSuffix(" \(count)") }, "\(status)")
        }
        #expect(try run([]).output == text, "summary is the default command")
        #expect(!text.contains("\u{1B}["), "no colour unless asked")
        let coloured = try run(["summary"], color: true)
        #expect(coloured.output.contains("\u{1B}[35mpaused\u{1B}[0m"))

        let document = try json(try run(["summary", "--json"]))
        #expect(document["formatVersion"] as? Int == RecordCodec.formatVersion)
        #expect(document["lastSeq"] as? Int == 37 && document["eventCount"] as? Int == 37)
        let objective = try #require(document["acknowledgement"] as? [String: Any])
        #expect(objective["acknowledged"] as? Int == 2 && objective["withinInterval"] as? Int == 2 && objective["intervalSeconds"] as? Double == 60)
        #expect(document["statusCounts"] as? [String: Int] == ["queued": 2, "syncing": 1, "synced": 1, "pending_approval": 1, "failed": 1,
                                                              "blocked": 1, "withdrawn": 1, "discarded": 1, "conflicted": 0, "superseded": 0])
        #expect(document["operationCount"] as? Int == 9)
        let worker = try #require(document["worker"] as? [String: Any])
        #expect(worker["paused"] as? Bool == true && worker["pauseReason"] as? String == "token_expired")
        #expect(worker["pausedBy"] as? String == journal.paused.idempotencyKey)
        let oldest = try #require(document["oldestPending"] as? [String: Any])
        #expect(oldest["operationID"] as? String == journal.queued.idempotencyKey)
        #expect(oldest["ageSeconds"] as? Double == 2994)
        #expect(document["lastEventAt"] as? String == "2027-01-15T09:11:06Z")
        #expect((document["damaged"] as? [Any])?.isEmpty == true)
    }

    // MARK: ops

    @Test func opsListsNewestFirstWithTypeLabelStatusAttemptsAndLastError() async throws {
        let journal = try await fixture()
        let result = try run(["ops"])
        #expect(result.code == .success)
        let rows = lines(result.output).filter { !$0.isEmpty }
        #expect(rows.first?.hasPrefix("ID        SAVED") == true)
        #expect(rows.dropFirst().map { String($0.prefix(8)) } == journal.all.reversed().map(EventText.shortID))
        let failedRow = try #require(rows.first { $0.hasPrefix(EventText.shortID(journal.failed)) })
        #expect(failedRow.contains("product.create") && failedRow.contains("Antiseptic 3") && failedRow.contains("failed"))
        #expect(failedRow.hasSuffix("validation_failed: Price must be positive"))
        #expect(failedRow.contains("2027-01-15T09:00:06Z  59 min 54 s ago"))

        let filtered = try run(["ops", "--status", "failed,blocked", "--category", "products", "--type", "product.create"])
        #expect(lines(filtered.output).filter { !$0.isEmpty }.dropFirst().map { String($0.prefix(8)) }
            == [journal.blocked, journal.failed].map(EventText.shortID))
        let recent = try run(["ops", "--since", "55m", "--limit", "2"])
        #expect(lines(recent.output).filter { !$0.isEmpty }.dropFirst().map { String($0.prefix(8)) }
            == [journal.syncing, journal.paused].map(EventText.shortID))
        let none = try run(["ops", "--until", "2027-01-15"])
        #expect(none.output == "No operations match.\n" && none.code == .success)

        let document = try json(try run(["ops", "--status", "pending_approval", "--json"]))
        let operations = try #require(document["operations"] as? [[String: Any]])
        #expect(operations.count == 1)
        let held = operations[0]
        #expect(held["operationID"] as? String == journal.pendingApproval.idempotencyKey)
        #expect(held["status"] as? String == "pending_approval")
        #expect(held["approvalRequestID"] as? String == "apr-7")
        #expect(held["operationType"] as? String == "employee.create")
        #expect(held["attempts"] as? Int == 1)
        #expect(held["payload"] == nil && held["payloadBytes"] as? Int == 53)
    }

    // MARK: timeline

    @Test func timelineProvesEachEventAndEndsWithTheVerdict() async throws {
        let journal = try await fixture()
        let prefix = String(journal.synced.idempotencyKey.prefix(8)).lowercased()
        let result = try run(["timeline", prefix])
        #expect(result.code == .success && result.errors.isEmpty)
        let text = result.output
        #expect(text.contains("Operation   \(journal.synced.idempotencyKey)"))
        #expect(text.contains("Saved       2027-01-15T08:00:00Z (2 h ago), seq 2"))
        #expect(text.contains("58 bytes, SHA-256 "))
        #expect(text.contains("matches the SHA-256 recorded when it was saved; redacted (--payload shows it)"))
        #expect(!text.contains("price"), "the payload is redacted")
        let rows = lines(text).filter { $0.range(of: #"^\s*\d+  2027"#, options: .regularExpression) != nil }
        #expect(rows.count == 7)
        #expect(rows[2].contains("no response (offline)") && rows[2].contains("transient_failure") && rows[2].contains("2027-01-15T08:00:02Z"))
        #expect(rows[3].contains("+2 s"))
        #expect(rows[4].contains("503") && rows[4].contains("server_unavailable: Try again later"))
        #expect(rows[5].contains("+4 s"))
        #expect(rows[6].contains("201") && rows[6].contains("accepted"))
        #expect(text.hasSuffix("Verdict: synced on attempt 3, 6 s after it was saved\n"))

        let shown = try run(["timeline", prefix, "--payload"])
        #expect(shown.output.contains(#"{"id":"product-1","name":"Antiseptic 500 ml","price":12.5}"#))

        for (id, verdict) in [
            (journal.blocked, #"blocked: 403 on attempt 1, waiting for a person (forbidden: "Only the owner may add products")"#),
            (journal.withdrawn, #"withdrawn: the server rejected it as invalid (validation_failed: "Name is required")"#),
            (journal.paused, #"queued: 1 attempt, due now; the last one met 401 (token_expired: "Sign in again"); "#
                + "the worker is paused since 2027-01-15T09:10:06Z by this write's 401 (token_expired): nothing is sent until "
                + "the session is refreshed (the member signs in again)\n"),
        ] {
            #expect(try run(["timeline", id.idempotencyKey]).output.contains("Verdict: \(verdict)"))
        }

        let document = try json(try run(["timeline", prefix, "--json"]))
        #expect(document["verdict"] as? String == "synced on attempt 3, 6 s after it was saved")
        #expect(document["complete"] as? Bool == true)
        let attempts = try #require(document["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["disposition"] as? String } == ["transient_failure", "transient_failure", "accepted"])
        #expect(attempts.map { $0["secondsSincePreviousAttempt"] as? Double } == [nil, 2, 4])
        #expect(attempts[1]["httpStatus"] as? Int == 503 && attempts[0]["transportFailure"] as? String == "offline")
        let payload = try #require(document["payload"] as? [String: Any])
        #expect(payload["matches"] as? Bool == true && payload["bytes"] as? Int == 58 && payload["content"] == nil)
        #expect(payload["sha256"] as? String == payload["recordedSHA256"] as? String)
        let events = try #require(document["events"] as? [[String: Any]])
        // Seq 6 is the engine's: the route seen with attempt 2's answer.
        #expect(events.map { $0["seq"] as? Int } == [2, 3, 4, 5, 7, 8, 9])
        #expect(events.first?["payload"] == nil)
        let withPayload = try json(try run(["timeline", prefix, "--json", "--payload"]))
        #expect((withPayload["payload"] as? [String: Any])?["content"] as? String == #"{"id":"product-1","name":"Antiseptic 500 ml","price":12.5}"#)
    }

    @Test func anUnknownOrAmbiguousPrefixIsAUsageErrorListingTheCandidates() async throws {
        // Seventeen ids: two of them must share a first hex digit.
        let ids = try await writeQueuedJournal(into: directory.url, count: 17)
        let digit = try #require("0123456789ABCDEF".first { digit in ids.filter { $0.idempotencyKey.first == digit }.count >= 2 })
        let ambiguous = try run(["timeline", String(digit)])
        #expect(ambiguous.code == .usage)
        #expect(ambiguous.errors.contains("'\(digit)' starts"))
        for id in ids where id.idempotencyKey.first == digit {
            #expect(ambiguous.errors.contains(id.idempotencyKey))
        }
        #expect(ambiguous.output.isEmpty)
        let unknown = try run(["timeline", "ffffffff-ffff"])
        if !ids.contains(where: { $0.idempotencyKey.hasPrefix("FFFFFFFF-FFFF") }) {
            #expect(unknown.code == .usage)
            #expect(unknown.errors.contains("no operation's id starts with 'ffffffff-ffff'"))
        }
    }

    // MARK: events

    @Test func eventsPrintsTheTailARangeAndFilteredKinds() async throws {
        let journal = try await fixture()
        let tail = try run(["events", "--limit", "3"])
        #expect(tail.code == .success)
        let tailRows = lines(tail.output).filter { !$0.isEmpty }
        #expect(tailRows[0].hasPrefix("SEQ  MOMENT"))
        #expect(tailRows.dropFirst().prefix(3).map { $0.prefix(3).trimmingCharacters(in: .whitespaces) } == ["35", "36", "37"])
        #expect(tailRows.last == "(the latest 3 shown; earlier ones end at --to 34)")
        let range = try run(["events", "--from", "2", "--to", "4"])
        let rangeRows = lines(range.output).filter { !$0.isEmpty }.dropFirst()
        #expect(rangeRows.count == 3)
        #expect(rangeRows.first?.contains("enqueued          \(EventText.shortID(journal.synced))") == true)
        let paused = try run(["events", "--kind", "sessionPaused"])
        let pausedRows = lines(paused.output).filter { !$0.isEmpty }.dropFirst()
        #expect(pausedRows.count == 1)
        #expect(pausedRows.first?.contains("worker paused: token_expired (operation \(EventText.shortID(journal.paused)))") == true)
        let oneOperation = try run(["events", "--operation", journal.blocked.idempotencyKey])
        #expect(lines(oneOperation.output).filter { !$0.isEmpty }.count == 4)
        let employees = try run(["events", "--type", "employee.create", "--since", "2027-01-15T09:00:00Z"])
        #expect(lines(employees.output).filter { !$0.isEmpty }.count == 4)

        let document = try json(try run(["events", "--from", "33", "--limit", "2", "--json"]))
        let events = try #require(document["events"] as? [[String: Any]])
        #expect(events.map { $0["seq"] as? Int } == [33, 34])
        #expect(events[1]["kind"] as? String == "attemptFinished" && events[1]["httpStatus"] as? Int == 401)
        #expect(events[1]["disposition"] as? String == "unauthorized")
        #expect(document["nextSeq"] as? Int == 35)
        #expect((document["damaged"] as? [Any])?.isEmpty == true)
    }

    // MARK: ledger

    @Test func ledgerAsTableCSVAndJSON() async throws {
        let journal = try await fixture()
        let table = try run(["ledger"])
        let rows = lines(table.output).filter { !$0.isEmpty }
        #expect(rows.count == 10)
        #expect(rows[1].hasPrefix(EventText.shortID(journal.synced)) && rows[1].hasSuffix("synced (final)"))
        #expect(rows[1].contains("accepted"))
        #expect(!table.output.contains("Antiseptic"), "the ledger names no field value")

        let csv = try run(["ledger", "--csv", "--status", "queued"])
        let csvRows = csv.output.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(csvRows.first == "operationID,operationType,entityType,seq,createdAt,attempts,latestOutcome,serverRevision,status,isTerminal,decision")
        #expect(csvRows.dropFirst() == [
            "\(journal.queued.idempotencyKey),product.create,product,28,2027-01-15T09:10:06Z,1,transient_failure,,queued,false,",
            "\(journal.paused.idempotencyKey),product.create,product,31,2027-01-15T09:10:06Z,1,unauthorized,,queued,false,",
        ])

        let document = try json(try run(["ledger", "--json"]))
        let ledger = try #require(document["ledger"] as? [[String: Any]])
        #expect(ledger.count == 9)
        #expect(Set(ledger[0].keys) == ["operationID", "operationType", "entityType", "seq", "createdAt", "attempts", "latestOutcome",
                                       "serverRevision", "status", "isTerminal"])
        #expect(ledger[0]["serverRevision"] as? String == "1" && ledger[0]["isTerminal"] as? Bool == true)
    }

    // MARK: verify, export, report

    @Test func verifyPassesTheJournalInHumanAndJSON() async throws {
        _ = try await fixture()
        let human = try run(["verify"])
        #expect(human.code == .success)
        #expect(human.output.contains("37 records and 9 operations checked"))
        let document = try json(try run(["verify", "--json"]))
        #expect(document["clean"] as? Bool == true)
        #expect(document["recordsChecked"] as? Int == 37 && document["operationsChecked"] as? Int == 9)
        #expect(document["projectionsCompared"] as? Bool == true)
        #expect((document["findings"] as? [Any])?.isEmpty == true)
    }

    @Test func exportWritesTimelinesAndLedgerRowsForATicket() async throws {
        let journal = try await fixture()
        let result = try run(["export", String(journal.failed.idempotencyKey.prefix(6)), journal.synced.idempotencyKey])
        #expect(result.code == .success)
        let document = try json(result)
        #expect(document["payloadsIncluded"] as? Bool == false)
        #expect(document["exportedAt"] as? String == "2027-01-15T10:00:00Z")
        let operations = try #require(document["operations"] as? [[String: Any]])
        #expect(operations.map { $0["operationID"] as? String } == [journal.failed, journal.synced].map(\.idempotencyKey))
        #expect(operations[0]["verdict"] as? String
            == #"failed: 422 on attempt 1, the payload needs correcting (validation_failed: "Price must be positive")"#)
        #expect(!result.output.contains("price"), "payloads redacted")
        let ledger = try #require(document["ledger"] as? [[String: Any]])
        #expect(Set(ledger.compactMap { $0["operationID"] as? String }) == [journal.failed.idempotencyKey, journal.synced.idempotencyKey])

        let all = try json(try run(["export", "--all", "--payload"]))
        #expect((all["operations"] as? [Any])?.count == 9 && (all["ledger"] as? [Any])?.count == 9)
        #expect(all["payloadsIncluded"] as? Bool == true)
        let first = try #require((all["operations"] as? [[String: Any]])?.first)
        #expect((first["payload"] as? [String: Any])?["content"] as? String == #"{"id":"product-1","name":"Antiseptic 500 ml","price":12.5}"#)
    }

    @Test func reportWritesOneSelfContainedHTMLFile() async throws {
        let journal = try await fixture()
        let output = TemporaryDirectory()
        let file = output.path("ticket.html")
        let result = try run(["report", "--html", file.path])
        #expect(result.code == .success)
        #expect(result.output.hasPrefix("Wrote \(file.path) ("))
        let html = try String(contentsOf: file, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<style>") && html.contains("<svg class=\"chart\""))
        #expect(!html.lowercased().contains("<script"), "no scripts")
        #expect(!html.contains("src=") && !html.contains("href=") && !html.contains("http://") && !html.contains("https://"),
                "no outside assets")
        for id in journal.all { #expect(html.contains("id=\"op-\(id.idempotencyKey)\"")) }
        #expect(html.contains("synced on attempt 3, 6 s after it was saved"))
        #expect(html.contains("class=\"attempt o-transient_failure\""))
        #expect(html.contains("class=\"attempt o-accepted\""))
        #expect(html.contains("class=\"attempt o-blocked\""))
        #expect(!html.contains("price"), "no payloads")
        // Tags open and close in balance (the SVG and tables are well formed).
        for tag in ["svg", "table", "section", "article", "details", "title", "text"] {
            #expect(html.components(separatedBy: "<\(tag)").count == html.components(separatedBy: "</\(tag)>").count, "\(tag)")
        }

        let json = try json(try run(["report", "--html", output.path("one.html").path, journal.blocked.idempotencyKey, "--json"]))
        #expect(json["operations"] as? Int == 1 && json["file"] as? String == output.path("one.html").path)
    }

    @Test func reportEscapesTextFromTheJournal() async throws {
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "<b>member</b>", clock: ManualClock(now: fixtureStart),
                                                                   defaultPolicy: .idempotent, durability: .processCrash))
        var request = product(1, category: "<i>Products</i>")
        request.entityLabel = #"<script>alert("owned")</script> & co"#
        _ = try await outbox.enqueue(request)
        outbox.close()
        let output = TemporaryDirectory()
        let file = output.path("escaped.html")
        #expect(try run(["report", "--html", file.path]).code == .success)
        let html = try String(contentsOf: file, encoding: .utf8)
        #expect(!html.contains("<script>") && !html.contains("<b>member"))
        #expect(html.contains("&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt; &amp; co"))
        #expect(html.contains("&lt;b&gt;member&lt;/b&gt;"))
    }

    @Test func aReportThatCannotBeWrittenExitsSeventyThree() async throws {
        _ = try await fixture()
        let result = try run(["report", "--html", directory.path("no-such-dir/report.html").path])
        #expect(result.code == .cannotCreate)
        #expect(result.errors.contains("cannot write the report to"))
    }
}
