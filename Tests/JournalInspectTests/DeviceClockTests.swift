import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// Every event records the device's uptime and boot, so the timeline tells a gap, a clock moved
/// back and a clock leaping forward apart, measures durations that never print negative, and
/// says after a crash how long the app was not running, at most. Records without an uptime (an
/// older journal, a device that could not read it) hedge in words.
@Suite("Time that survives the device clock's jumps", .hangGuard)
struct DeviceClockTests {
    let directory = TemporaryDirectory()

    private var journal: URL { directory.path("journal") }

    private func open(_ clock: any OutboxClock, _ transport: any OutboxTransport) throws -> Outbox {
        try Outbox(directory: journal, transport: transport, configuration: OutboxConfiguration(
            account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
    }

    private func timeline(_ id: OperationID, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path, "timeline", EventText.shortID(id), "--now", "2027-01-20T00:00:00Z"])
        #expect(try dataFileDigest(journal) == before, sourceLocation: sourceLocation)
        #expect(result.code == .success && result.errors.isEmpty, "\(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    /// The rows of the timeline's table, from the one of `seq` on: each row with the notes under it.
    private func row(_ seq: Int, in text: String) -> String {
        let lines = text.split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(String(format: "%3d  ", seq)) }) else { return "" }
        let notes = lines[(start + 1)...].prefix { $0.hasPrefix("     note: ") }
        return ([lines[start]] + notes).joined(separator: "\n")
    }

    /// Nothing the tool prints is a negative span: no `+-`, no `-3 d`.
    private func expectNoNegativeSpan(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(text.range(of: #"(\+-|[ (]-[0-9]+ (d|h|min|s)\b)"#, options: .regularExpression) == nil, "\(text)",
                sourceLocation: sourceLocation)
    }

    /// A write met a 503 (due again 2 s later); then `move` changed the clock; then it synced.
    private func writeAcross(_ move: (ManualClock) -> Void) async throws -> OperationID {
        let clock = ManualClock()
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":"1"}"#)))
        transport.script(.respond(.error(503, code: "server_unavailable", message: "Try again")))
        let outbox = try open(clock, transport)
        let id = try await outbox.enqueue(product(1))
        await outbox.drain()
        move(clock)
        await outbox.drain()
        clock.advance(by: OperationTypePolicy.RetryPolicy.standard.maxDelaySeconds)
        await outbox.settle()
        outbox.close()
        return id
    }

    @Test func aClockMovedBackIsSaidWhereItMovedAndTheGapIsMeasuredByTheUptime() async throws {
        let id = try await writeAcross { $0.set(to: $0.now().addingTimeInterval(-3 * 3600)) }
        let text = try timeline(id)
        // Seqs: 2 enqueued, 3 and 5 the first attempt (4 the route its answer showed), 6 and 7 the second.
        #expect(row(6, in: text).contains("  2  +5 min  sending (woken by timer)"))
        #expect(row(6, in: text).contains("note: the device clock moved back 3 hours here: by its uptime, 5 min passed since seq 5"))
        #expect(text.contains("Verdict: synced on attempt 2, 5 min after it was saved\n"))
        expectNoNegativeSpan(text)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal.path, "timeline", EventText.shortID(id),
                                                                                          "--json"]).output.utf8)) as? [String: Any])
        #expect(document["clockNotes"] as? [String] == ["seq 6: the device clock moved back 3 hours here: by its uptime, 5 min passed since seq 5"])
        let events = try #require(document["events"] as? [[String: Any]])
        #expect(events.count == 5 && events.allSatisfy { $0["uptimeSeconds"] is Double && $0["bootID"] is String }, "each event's uptime")
        #expect(events.compactMap { $0["uptimeSeconds"] as? Double }.last == Double(3600 + 300))
    }

    @Test func aClockThatLeaptForwardIsToldFromAGap() async throws {
        let id = try await writeAcross { clock in
            clock.set(to: clock.now().addingTimeInterval(2 * 86_400))
            clock.advance(by: 2)
        }
        let text = try timeline(id)
        #expect(row(6, in: text).contains("  2  +2 s  sending"))
        #expect(row(6, in: text).contains("note: the device clock leapt forward 2 days here: by its uptime, only 2 s passed since seq 5"))
        #expect(text.contains("Verdict: synced on attempt 2, 2 s after it was saved\n"))
    }

    @Test func afterACrashTheGapSaysHowLongTheAppWasNotRunningAtMost() async throws {
        // The app is killed while attempt 1 is on its way (the server applied it); it is started
        // again four minutes later, the device still running (one boot), or after a restart.
        for reboots in [false, true] {
            try? FileManager.default.removeItem(at: journal)
            let clock = ManualClock()
            let server = InMemoryServer()
            let dying = DyingTransport(server: server) { if reboots { clock.reboot(downtime: 240) } else { clock.advance(by: 240) } }
            let first = try open(clock, dying)
            dying.attach(first)
            let id = try await first.enqueue(product(1))
            await first.drain()
            await dying.died()
            let second = try open(clock, server)
            await second.drain()
            second.close()

            let text = try timeline(id)
            // Seqs: 2 enqueued, 3 attempt 1 started, 4 the app opened again, 5 abandoned, 6 and 7 attempt 2.
            #expect(row(4, in: text).contains(reboots
                ? "the app started again after the device restarted; it had not run for at most 4 min (since seq 3, by the device clock)"
                : "the app started again (the device kept running); it had not run for at most 4 min (since seq 3)"), "\(text)")
            #expect(row(6, in: text).contains(" +4 min  sending (woken by "), "counted from attempt 1, not from the restart")
            #expect(row(6, in: text).contains("note: the app was not running for at most 4 min of this gap (at most: it may have run a while "
                + "without writing anything)"))
            #expect(text.contains(reboots
                ? "Verdict: synced on attempt 2, 4 min after it was saved by the device clock, across a restart (the server had already applied it"
                : "Verdict: synced on attempt 2, 4 min after it was saved (the server had already applied it"))
            #expect(!text.contains("less than 1 s"))
        }
    }

    @Test func recordsWithoutAnUptimeHedgeInWordsAndNeverPrintANegativeSpan() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":"1"}"#)))
        transport.script(.respond(.error(503, code: "server_unavailable", message: "Try again")))
        let outbox = try open(ClockWithoutUptime(clock), transport)
        let id = try await outbox.enqueue(product(1))
        await outbox.drain()
        clock.set(to: clock.now().addingTimeInterval(-3 * 3600))
        await outbox.drain()
        clock.advance(by: OperationTypePolicy.RetryPolicy.standard.maxDelaySeconds)
        await outbox.settle()
        outbox.close()

        let text = try timeline(id)
        #expect(row(6, in: text).contains("  2  unknown (clock moved back)  sending"))
        #expect(row(6, in: text).contains("note: the device clock reads 2 hours 55 minutes earlier here than at seq 5: it was moved back "
            + "(these records carry no uptime, so how long passed is unknown)"))
        #expect(text.contains("Gaps read the device clock: records before journal format 2 carry no uptime"))
        #expect(text.contains("Verdict: synced on attempt 2, how long after it was saved is unknown: the device clock was moved back in between\n"))
        expectNoNegativeSpan(text)
    }

    @Test func aJournalOfFormatOneSaysItsDurationsAreTheDeviceClocks() throws {
        try FormatOneJournal.plain.copy(into: journal)
        let ids = try FormatOneJournal.plain.live()
        let synced = try timeline(ids[0])
        #expect(synced.contains("Verdict: synced on attempt 1, less than 1 s after it was saved by the device clock\n"))
        let retried = try timeline(ids[6])
        #expect(retried.contains("Gaps read the device clock: records before journal format 2 carry no uptime, so a clock set "
            + "forward or back reads as time passed."))
        #expect(retried.contains("+2 s") && retried.contains("+1 min"))
        let exported = inspect([journal.path, "export", EventText.shortID(ids[6])]).output
        #expect(exported.contains(#""kind" : "attemptStarted""#) && !exported.contains("uptimeSeconds"), "format 1 records none")
    }
}

/// A device clock whose uptime cannot be read: its events carry none, as records written
/// before journal format 2.
private struct ClockWithoutUptime: OutboxClock {
    let clock: ManualClock

    init(_ clock: ManualClock) {
        self.clock = clock
    }

    func now() -> Date { clock.now() }
    func sleep(until deadline: Date) async throws { try await clock.sleep(until: deadline) }
    func uptime() -> Uptime? { nil }
    var timeZone: TimeZone { clock.timeZone }
}
