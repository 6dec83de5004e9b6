import Foundation
import JournalInspect
import Outbox
import OutboxAudit
import Testing

@Suite("Formatting: pure functions from data to text")
struct FormattingTests {
    @Test(arguments: [
        (0.2, "less than 1 s"), (1, "1 s"), (45, "45 s"), (60, "1 min"), (303, "5 min 3 s"), (3600, "1 h"),
        (8040, "2 h 14 min"), (8059, "2 h 14 min"), (86_400 * 3 + 7200 + 59, "3 d 2 h"),
        // A span has no sign: the words around it say which way it runs.
        (-90, "1 min 30 s"),
        // A moment read from damaged bytes may be any finite double: no age of it traps.
        (1e300, "forever"), (-1e300, "forever"), (9.3e18, "forever"), (.infinity, "forever"), (1e15, "11574074074 d 1 h"),
    ] as [(Double, String)])
    func durationsReadInTheirTwoLargestUnits(_ seconds: Double, _ text: String) {
        #expect(Moments.duration(seconds) == text)
    }

    @Test(arguments: [
        (0.5, "less than a second"), (1, "1 second"), (60, "1 minute"), (3660, "1 hour 1 minute"), (8040, "2 hours 14 minutes"),
        (328 * 86_400, "328 days"), (-328 * 86_400 - 3600, "328 days 1 hour"),
    ] as [(Double, String)])
    func durationsInSentencesAreSpelledOut(_ seconds: Double, _ text: String) {
        #expect(Moments.durationInWords(seconds) == text)
    }

    @Test func momentsAreISOInUTCAndRelativeToNow() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(Moments.absolute(now) == "2027-01-15T08:00:00Z")
        #expect(Moments.absolute(now.addingTimeInterval(0.7)) == "2027-01-15T08:00:00Z")
        #expect(Moments.relative(now.addingTimeInterval(-8040), now: now) == "2 h 14 min ago")
        #expect(Moments.relative(now.addingTimeInterval(180), now: now) == "in 3 min")
        #expect(Moments.relative(now.addingTimeInterval(-0.5), now: now) == "just now")
        #expect(Moments.both(now.addingTimeInterval(-60), now: now) == "2027-01-15T07:59:00Z (1 min ago)")
        #expect(Moments.bytes(512) == "512 B")
        #expect(Moments.bytes(12_595) == "12.3 KB")
        #expect(Moments.bytes(3 << 20) == "3.0 MB")
    }

    @Test func tableColumnsAlignWhetherOrNotColoured() {
        var table = TextTable(headers: ["ID", "STATUS", "N"], rightAligned: [2])
        table.add(["a", TextTable.Cell("queued", .yellow), "7"])
        table.add(["bbbb", TextTable.Cell("pending_approval", .cyan), "12"])
        let plain = table.render(.plain)
        #expect(plain == """
            ID    STATUS             N
            a     queued             7
            bbbb  pending_approval  12

            """)
        let coloured = table.render(Style(enabled: true))
        #expect(coloured.contains("\u{1B}[33mqueued\u{1B}[0m"))
        let stripped = coloured.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
        #expect(stripped == plain, "escapes add no width")
    }

    @Test func fieldsPadTheirLabels() {
        var fields = FieldList()
        fields.add("Journal", "/j")
        fields.add("Oldest pending", "none")
        #expect(fields.render(.plain) == "Journal         /j\nOldest pending  none\n")
    }

    @Test func colourOnlyOnATerminalAndNeverWithNoColor() {
        #expect(Style.isColorWanted(stdoutIsTerminal: true, environment: [:]))
        #expect(!Style.isColorWanted(stdoutIsTerminal: false, environment: [:]))
        #expect(!Style.isColorWanted(stdoutIsTerminal: true, environment: ["NO_COLOR": "1"]))
        #expect(!Style.isColorWanted(stdoutIsTerminal: true, environment: ["TERM": "dumb"]))
        #expect(Style.plain.paint("x", .red) == "x")
        #expect(Style(enabled: true).paint("x", .red) == "\u{1B}[31mx\u{1B}[0m")
    }

    @Test func csvQuotesOnlyWhatNeedsIt() {
        #expect(CSV.line(["a", "b,c", "say \"hi\"", "two\nlines", ""]) == "a,\"b,c\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n")
    }

    @Test func htmlEscapesEveryMarkupCharacter() {
        #expect(HTMLReport.escape(#"<script>alert("x & 'y'")</script>"#)
            == "&lt;script&gt;alert(&quot;x &amp; &#39;y&#39;&quot;)&lt;/script&gt;")
    }

    @Test func eventDetailsNeverShowThePayload() throws {
        let id = OperationID()
        let request = OutboxRequest(businessID: "b", operationType: "product.create", endpoint: "/products",
                                    payload: Data(#"{"secret":"s3cr3t"}"#.utf8), category: "Products", entityLabel: "Soap",
                                    summary: "New product")
        let enqueued = JournalEvent(seq: 2, operationID: id, recordedAt: Date(), body: .enqueued(Enqueued(
            request: request, requestHash: SHA256Digest(of: request.payload), account: "a")))
        let detail = EventText.detail(enqueued)
        #expect(detail == #"product.create POST /products "Soap" [Products], 19 bytes"#)
        #expect(!detail.contains("s3cr3t"))
        let finished = JournalEvent(seq: 4, operationID: id, recordedAt: Date(), body: .attemptFinished(AttemptFinished(
            attempt: 2, outcome: .response(statusCode: 503), disposition: .transientFailure, errorCode: "server_unavailable",
            errorMessage: "Later", nextAttemptAt: Date(timeIntervalSince1970: 1_800_000_004))))
        #expect(EventText.detail(finished)
            == "attempt 2: 503 -> transient_failure, next at 2027-01-15T08:00:04Z; server_unavailable: Later")
        #expect(EventText.shortID(id).count == 8)
    }
}

/// Verdicts, from timelines built event by event with the engine's own fold.
@Suite("The verdict line")
struct VerdictTests {
    private let id = OperationID()
    private let saved = Date(timeIntervalSince1970: 1_800_000_000)

    private let boot = UUID()

    /// A timeline of `bodies`, the first an `enqueued`, each `gaps[i]` seconds after the one before,
    /// within one boot (its uptime recorded, as since journal format 2; without, as before).
    private func timeline(_ bodies: [JournalEventBody], gaps: [Double]? = nil, uptime: Bool = true) throws -> OperationTimeline {
        let request = product(1)
        let all: [JournalEventBody] = [.enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload),
                                                          account: "member-42"))] + bodies
        var moment = saved
        var events: [JournalEvent] = []
        for (index, body) in all.enumerated() {
            if index > 0 { moment = moment.addingTimeInterval(gaps?[index - 1] ?? 1) }
            let sinceBoot = uptime ? Uptime(seconds: 3600 + moment.timeIntervalSince(saved), bootID: boot) : nil
            events.append(JournalEvent(seq: JournalSequence(rawValue: UInt64(index + 1)), operationID: id, recordedAt: moment,
                                       uptime: sinceBoot, body: body))
        }
        return OperationTimeline(id: id, state: try Fold.replay(events), events: events, damaged: [],
                                 attempts: OperationTimeline.attempts(of: events),
                                 payload: PayloadCheck(payload: request.payload, recordedHash: SHA256Digest(of: request.payload)))
    }

    private func started(_ attempt: Int) -> JournalEventBody {
        .attemptStarted(AttemptStarted(attempt: AttemptNumber(rawValue: attempt), trigger: .timer))
    }

    private func finished(_ attempt: Int, _ outcome: AttemptOutcome, _ disposition: Disposition, code: String? = nil,
                          next: Date? = nil) -> JournalEventBody {
        .attemptFinished(AttemptFinished(attempt: AttemptNumber(rawValue: attempt), outcome: outcome, disposition: disposition,
                                         errorCode: code, errorMessage: code.map { "message for \($0)" }, nextAttemptAt: next))
    }

    @Test func syncedOnItsThirdAttemptHoursAfterItWasSaved() throws {
        let subject = try timeline([
            started(1), finished(1, .noResponse(.offline), .transientFailure, code: "offline"),
            started(2), finished(2, .response(statusCode: 503), .transientFailure, code: "server_unavailable"),
            started(3), finished(3, .response(statusCode: 201), .accepted),
        ], gaps: [60, 1, 3600, 1, 4373, 6])
        #expect(Verdict.text(for: subject, engine: EngineState()) == "synced on attempt 3, 2 h 14 min after it was saved")
    }

    @Test func withoutUptimeADurationIsSaidToBeTheDeviceClocks() throws {
        let subject = try timeline([started(1), finished(1, .response(statusCode: 201), .accepted)], gaps: [60, 1], uptime: false)
        #expect(Verdict.text(for: subject, engine: EngineState()) == "synced on attempt 1, 1 min 1 s after it was saved by the device clock")
    }

    @Test func aReplayedAnswerIsSaidToBeOne() throws {
        let subject = try timeline([started(1), finished(1, .response(statusCode: 201), .replayed)])
        #expect(Verdict.text(for: subject, engine: EngineState()).hasPrefix("synced on attempt 1, 2 s after it was saved (the server had already applied it"))
    }

    @Test func blockedByAForbiddenWaitsForAPerson() throws {
        let subject = try timeline([started(1), finished(1, .response(statusCode: 403), .blocked, code: "forbidden")])
        #expect(Verdict.text(for: subject, engine: EngineState())
            == #"blocked: 403 on attempt 1, waiting for a person (forbidden: "message for forbidden")"#)
    }

    @Test func queuedWithItsAttemptsAndNextMoment() throws {
        var bodies: [JournalEventBody] = []
        for attempt in 1...4 {
            bodies += [started(attempt), finished(attempt, .response(statusCode: 503), .transientFailure, code: "server_unavailable",
                                                  next: Date(timeIntervalSince1970: 1_800_003_600))]
        }
        let subject = try timeline(bodies)
        #expect(Verdict.text(for: subject, engine: EngineState())
            == #"queued: 4 attempts, next at 2027-01-15T09:00:00Z; all 4 attempts: 503 (server_unavailable: "message for server_unavailable"), "#
            + "first 2027-01-15T08:00:01Z, last 2027-01-15T08:00:07Z")
        let two = try timeline(Array(bodies.prefix(4)))
        #expect(Verdict.text(for: two, engine: EngineState())
            == #"queued: 2 attempts, next at 2027-01-15T09:00:00Z; the last one met 503 (server_unavailable: "message for server_unavailable")"#)
        var paused = EngineState()
        paused.isPaused = true
        paused.pauseReason = "token_expired"
        #expect(Verdict.text(for: subject, engine: paused)
            .hasSuffix("the worker is paused (token_expired): nothing is sent until the session is refreshed (the member signs in again)"))
        #expect(Verdict.text(for: try timeline([]), engine: EngineState()) == "queued: not attempted yet, due now")
        let cutOff = try timeline([started(1), .attemptAbandoned(AttemptAbandoned(attempt: 1))])
        #expect(Verdict.text(for: cutOff, engine: EngineState()).contains("attempt 1 was cut off when the app ended"))
    }

    @Test func withdrawnDiscardedFailedPendingAndSyncing() throws {
        let rejected = [started(1), finished(1, .response(statusCode: 422), .rejected, code: "validation_failed")]
        #expect(Verdict.text(for: try timeline(rejected + [.withdrawn(Withdrawn(errorCode: "validation_failed", errorMessage: "Bad"))]),
                             engine: EngineState()) == #"withdrawn: the server rejected it as invalid (validation_failed: "Bad")"#)
        #expect(Verdict.text(for: try timeline(rejected), engine: EngineState())
            == #"failed: 422 on attempt 1, the payload needs correcting (validation_failed: "message for validation_failed")"#)
        #expect(Verdict.text(for: try timeline([.discarded(Discarded(requestedBy: .member, reason: .signOut))]), engine: EngineState())
            == "discarded on sign-out on 2027-01-15T08:00:01Z: the member signed out and chose to drop what was waiting")
        #expect(Verdict.text(for: try timeline([.discarded(Discarded(requestedBy: .member, reason: .memberDiscarded))]),
                             engine: EngineState()) == "discarded by the member on 2027-01-15T08:00:01Z")
        let held = [started(1), JournalEventBody.attemptFinished(AttemptFinished(
            attempt: 1, outcome: .response(statusCode: 202), disposition: .pendingApproval, approvalRequestID: "apr-9"))]
        #expect(Verdict.text(for: try timeline(held), engine: EngineState())
            == "pending approval: the server holds it (request apr-9) since attempt 1, waiting for a decision")
        #expect(Verdict.text(for: try timeline(held + [.approvalDecided(ApprovalDecided(approved: false, reference: nil))]),
                             engine: EngineState()) == "failed: the approver rejected it, waiting for a correction (approval_rejected)")
        #expect(Verdict.text(for: try timeline(held + [.approvalDecided(ApprovalDecided(approved: true, reference: "D-1"))]),
                             engine: EngineState()).hasPrefix("synced: approved (D-1) after it was held for approval on attempt 1"))
        #expect(Verdict.text(for: try timeline([started(1)]), engine: EngineState())
            .hasPrefix("syncing: attempt 1 in flight since 2027-01-15T08:00:01Z"))
    }
}
