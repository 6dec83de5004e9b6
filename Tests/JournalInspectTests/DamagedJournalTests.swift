import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import Testing

/// A damaged record is reported with its seq, and every command carries on with what it can
/// read: exit 65 only when the damage touched what was asked.
@Suite("Reading a damaged journal", .hangGuard)
struct DamagedJournalTests {
    let directory = TemporaryDirectory()

    /// The journal of every status, with the `failed` operation's `attemptStarted` (seq 14) damaged.
    private func damagedJournal() async throws -> EveryStatusJournal {
        let journal = try await EveryStatusJournal.write(into: directory.url)
        try Tamper.flipByte(directory.url, seq: 14)
        return journal
    }

    @Test func eventsPrintEveryReadableRecordAndMarkTheDamagedOne() async throws {
        let journal = try await damagedJournal()
        let result = inspect([directory.url.path, "events", "--from", "13", "--to", "15"])
        #expect(result.code == .damaged)
        let rows = result.output.split(separator: "\n").dropFirst()
        #expect(rows.count == 3)
        #expect(rows.dropFirst().first?.contains("DAMAGED           \(EventText.shortID(journal.failed))   checksum mismatch") == true)
        #expect(result.errors.contains("warning: the record at seq 14 is damaged (checksum mismatch"))
        #expect(result.errors.contains("its header names operation \(journal.failed.idempotencyKey)"))
        #expect(result.errors.contains("verify"))

        let json = inspect([directory.url.path, "events", "--from", "13", "--to", "15", "--json"])
        #expect(json.code == .damaged)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect((document["events"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [13, 15])
        let damaged = try #require((document["damaged"] as? [[String: Any]])?.first)
        #expect(damaged["seq"] as? Int == 14 && damaged["claimedOperationID"] as? String == journal.failed.idempotencyKey)

        // A range that avoids the damage reads cleanly.
        #expect(inspect([directory.url.path, "events", "--from", "21"]).code == .success)
    }

    @Test func theTimelineOfTheDamagedOperationIsIncompleteAndOthersAreNot() async throws {
        let journal = try await damagedJournal()
        let damaged = inspect([directory.url.path, "timeline", journal.failed.idempotencyKey])
        #expect(damaged.code == .damaged)
        #expect(damaged.output.contains(" 14  -                     DAMAGED"))
        #expect(damaged.output.contains(#"Verdict: failed: 422 on attempt 1, the payload needs correcting (validation_failed: "Price must be positive")"#))
        #expect(damaged.output.contains("Incomplete: 1 of its records could not be read"))

        let json = inspect([directory.url.path, "timeline", journal.failed.idempotencyKey, "--json"])
        #expect(json.code == .damaged)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(document["complete"] as? Bool == false)
        #expect((document["damaged"] as? [[String: Any]])?.first?["seq"] as? Int == 14)

        let other = inspect([directory.url.path, "timeline", journal.synced.idempotencyKey])
        #expect(other.code == .success && other.errors.isEmpty)
        #expect(inspect([directory.url.path, "ops"]).code == .success, "ops reads the projections, not the damaged record")
        #expect(inspect([directory.url.path, "ledger"]).code == .success)
        let export = inspect([directory.url.path, "export", "--all"])
        #expect(export.code == .damaged)
        #expect(export.output.contains("\"complete\" : false"))
    }

    /// With `--all` (or a report of the newest), the ids come from the journal: one it holds
    /// nothing of is damage (65), reported and left out, never a usage error.
    @Test func anOperationListedOnlyByADamagedProjectionIsLeftOutAsDamage() async throws {
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let bent = try Tamper.bendStoredID(directory.url, operation: journal.blocked)
        #expect(bent != journal.blocked)
        let warning = "journal-inspect: warning: the journal's projections list operation \(bent), but it holds no event of "
            + "it (a damaged projection); left out\n"

        let export = inspect([directory.url.path, "export", "--all"])
        #expect(export.code == .damaged)
        #expect(export.errors.hasPrefix(warning), "\(export.errors)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.output.utf8)) as? [String: Any])
        #expect((document["operations"] as? [Any])?.count == journal.all.count - 1)

        let output = TemporaryDirectory()
        let report = inspect([directory.url.path, "report", "--html", output.path("report.html").path])
        #expect(report.code == .damaged)
        #expect(report.errors.hasPrefix(warning))
        #expect(FileManager.default.fileExists(atPath: output.path("report.html").path), "the report is still written")

        let asked = inspect([directory.url.path, "timeline", bent.idempotencyKey])
        #expect(asked.code == .usage, "an id a person gives that the journal does not hold stays a usage error")
    }

    @Test func aDamagedLastRecordStillLeavesASummaryFromTheOneBefore() async throws {
        _ = try await EveryStatusJournal.write(into: directory.url)
        try Tamper.flipByte(directory.url, seq: 37)
        let result = inspect([directory.url.path, "summary"])
        #expect(result.code == .damaged)
        #expect(result.output.contains("Last event      2027-01-15T09:11:06Z"), "seq 36, recorded at the same moment")
        #expect(result.output.contains("total                      9"))
        #expect(result.errors.contains("the record at seq 37 is damaged"))
    }

    @Test func aFoldedJournalReportsTheRecordsItCouldNotFold() async throws {
        _ = try await damagedJournal()
        try Tamper.setMeta(directory.url, key: "projection-version", to: 0)
        let reader = try JournalReader(directory: directory.url)
        #expect(reader.recordsSkippedByFold.map(\.seq) == [14])
        reader.close()
        let ops = inspect([directory.url.path, "ops"])
        #expect(ops.code == .damaged, "a fold past damage may miss operations")
        #expect(ops.output.split(separator: "\n").count == 10)
        let verify = inspect([directory.url.path, "verify"])
        #expect(verify.code == .findings)
        #expect(verify.output.contains("another layout"))
    }

    @Test func anOperationWhoseEnqueueIsDamagedStillHasATimelineInAFoldedJournal() async throws {
        let journal = try await EveryStatusJournal.write(into: directory.url)
        try Tamper.flipByte(directory.url, seq: 13)
        try Tamper.setMeta(directory.url, key: "projection-version", to: 0)
        // The fold never saw its enqueue, so no prefix finds it: the whole id still does.
        let result = inspect([directory.url.path, "timeline", journal.failed.idempotencyKey])
        #expect(result.code == .damaged)
        #expect(result.output.contains(" 13  -                     DAMAGED"))
        #expect(result.output.contains("attemptStarted") && result.output.contains("attemptFinished"))
        #expect(result.output.contains("unreadable: the enqueued record is damaged"))
        let unknown = OperationID()
        let missing = inspect([directory.url.path, "timeline", unknown.idempotencyKey])
        #expect(missing.code == .usage)
        #expect(missing.errors.contains("no operation \(unknown.idempotencyKey) in this journal"))
    }
}
