import Foundation
import TestHarness
@testable import Outbox
import OutboxAudit
import Testing

/// Each test plants one kind of damage in a journal the engine wrote, closed, and checks that
/// `verify` (the library, then the tool's exit code) finds exactly it, with its seq and operation.
@Suite("verify: plant damage, find it", .hangGuard)
struct VerifyTests {
    /// A fresh journal of every status, in its own directory.
    private func journal() async throws -> (TemporaryDirectory, EveryStatusJournal) {
        let directory = TemporaryDirectory()
        return (directory, try await EveryStatusJournal.write(into: directory.url))
    }

    /// The seq of `id`'s `enqueued` event.
    private func firstSeq(of id: OperationID, in directory: URL) throws -> JournalSequence {
        let reader = try JournalReader(directory: directory)
        defer { reader.close() }
        return try #require(try reader.operationStates(matching: OperationQuery(limit: .max)).states.first { $0.id == id }).firstSeq
    }

    private func verify(_ directory: URL) throws -> VerificationReport {
        let reader = try JournalReader(directory: directory)
        defer { reader.close() }
        return try reader.verify()
    }

    @Test func aCleanJournalPasses() async throws {
        let (directory, _) = try await journal()
        let report = try verify(directory.url)
        #expect(report.isClean, "\(report.findings)")
        #expect(report.projectionsCompared)
        let run = inspect([directory.url.path, "verify"])
        #expect(run.code == .success)
        #expect(run.output.hasPrefix("No findings:"))
        #expect(run.errors.isEmpty)
    }

    @Test func aFlippedByteIsADamagedRecordAtItsSeq() async throws {
        let (directory, fixture) = try await journal()
        let seq = try firstSeq(of: fixture.failed, in: directory.url).next // its attemptStarted
        try Tamper.flipByte(directory.url, seq: seq)
        let report = try verify(directory.url)
        let finding = try #require(report.findings.first)
        #expect(report.findings.count == 1, "\(report.findings)")
        #expect(finding.kind == .damagedRecord)
        #expect(finding.seq == seq)
        #expect(finding.operationID == fixture.failed)
        #expect(finding.message.contains("checksum mismatch"))
        #expect(!report.projectionsCompared, "no faithful rebuild past a damaged record")

        let run = inspect([directory.url.path, "verify"])
        #expect(run.code == .findings)
        #expect(run.output.contains("damaged_record"))
        #expect(run.output.contains("1 finding:"))
    }

    /// One flipped byte in the last record's key sends it past every seq an Int counts: the gap
    /// it opens is a finding, and the record a damaged one, never a trap in the arithmetic.
    @Test func aBentKeyFarPastTheEndIsAGapAndADamagedRecord() async throws {
        let (directory, _) = try await journal()
        let last = try {
            let reader = try JournalReader(directory: directory.url)
            defer { reader.close() }
            return try reader.lastSeq()
        }()
        let bent = try Tamper.bendKey(directory.url, seq: last, byte: 0, mask: 0x80)
        #expect(bent.rawValue - last.rawValue > UInt64(Int.max))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.sequenceGap, .damagedRecord], "\(report.findings)")
        let gap = try #require(report.findings.first)
        #expect(gap.seq == last)
        #expect(gap.message.contains("seqs \(last)...\(bent.rawValue - 1) (\(bent.rawValue - last.rawValue)) are missing"))
        let damaged = try #require(report.findings.last)
        #expect(damaged.seq == bent)
        #expect(damaged.message.contains("record says seq \(last), stored under \(bent)"))

        let run = inspect([directory.url.path, "verify"])
        #expect(run.code == .findings)
        #expect(run.output.contains("sequence_gap") && run.output.contains("damaged_record"))
    }

    @Test func aPayloadThatNoLongerMatchesItsHashIsFound() async throws {
        let (directory, fixture) = try await journal()
        let seq = try firstSeq(of: fixture.blocked, in: directory.url)
        try Tamper.alterPayload(directory.url, seq: seq)
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.payloadHashMismatch])
        #expect(report.findings.first?.seq == seq)
        #expect(report.findings.first?.operationID == fixture.blocked)
        #expect(report.projectionsCompared, "the record itself is sound, so the rebuild goes on")

        // The timeline says so too, beside the hash.
        let timeline = inspect([directory.url.path, "timeline", fixture.blocked.idempotencyKey])
        #expect(timeline.code == .success)
        #expect(timeline.output.contains("DOES NOT MATCH"))
    }

    @Test func anOutcomeForAnAttemptThatNeverStartedIsFound() async throws {
        let (directory, fixture) = try await journal()
        // `queued` is queued after one attempt: an outcome for attempt 2 was never started.
        let seq = try Tamper.appendRaw(directory.url, operation: fixture.queued, body: .attemptFinished(AttemptFinished(
            attempt: 2, outcome: .response(statusCode: 201), disposition: .accepted
        )))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.attemptNumbering], "\(report.findings)")
        #expect(report.findings.first?.seq == seq)
        #expect(report.findings.first?.operationID == fixture.queued)
        #expect(report.findings.first?.message.contains("never started") == true)
    }

    @Test func anEventAfterATerminalStatusIsFound() async throws {
        let (directory, fixture) = try await journal()
        let seq = try Tamper.appendRaw(directory.url, operation: fixture.synced, body: .requeued(Requeued(requestedBy: .member)))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.eventAfterTerminal], "\(report.findings)")
        #expect(report.findings.first?.seq == seq)
        #expect(report.findings.first?.operationID == fixture.synced)
        #expect(inspect([directory.url.path, "verify"]).code == .findings)
    }

    @Test func aStatusChangeTheFoldRefusesIsAnIllegalTransition() async throws {
        let (directory, fixture) = try await journal()
        // A queued row cannot be withdrawn: only a rejected inline save can.
        let seq = try Tamper.appendRaw(directory.url, operation: fixture.queued,
                                       body: .withdrawn(Withdrawn(errorCode: "validation_failed", errorMessage: "no")))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.illegalTransition], "\(report.findings)")
        #expect(report.findings.first?.seq == seq)
        #expect(report.findings.first?.message.contains("withdrawn") == true)
    }

    @Test func aSecondEnqueueAndAnEventOfAnUnknownOperationAreFound() async throws {
        let (directory, fixture) = try await journal()
        let reader = try JournalReader(directory: directory.url)
        let enqueued = try #require(try reader.timeline(of: fixture.queued).events.first)
        reader.close()
        let duplicate = try Tamper.appendRaw(directory.url, operation: fixture.queued, body: enqueued.body)
        let stranger = OperationID()
        let orphan = try Tamper.appendRaw(directory.url, operation: stranger,
                                          body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .timer)))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.duplicateEnqueue, .missingEnqueue], "\(report.findings)")
        #expect(report.findings.map(\.seq) == [duplicate, orphan])
        #expect(report.findings.map(\.operationID) == [fixture.queued, stranger])
    }

    @Test func aSecondAttemptStartedBeforeTheFirstHadAnOutcomeIsFound() async throws {
        let (directory, fixture) = try await journal()
        let seq = try Tamper.appendRaw(directory.url, operation: fixture.syncing,
                                       body: .attemptStarted(AttemptStarted(attempt: 2, trigger: .timer)))
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.attemptNumbering])
        #expect(report.findings.first?.seq == seq)
        #expect(report.findings.first?.message.contains("has no outcome") == true)
    }

    @Test func projectionsThatDifferFromARebuildAreFound() async throws {
        let (directory, _) = try await journal()
        try Tamper.setStatusCounter(directory.url, status: .queued, to: 7)
        let report = try verify(directory.url)
        #expect(report.findings.map(\.kind) == [.projectionMismatch], "\(report.findings)")
        #expect(report.findings.first?.message.contains("counters [status/queued]") == true)

        let json = inspect([directory.url.path, "verify", "--json"])
        #expect(json.code == .findings)
        let document = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(document?["clean"] as? Bool == false)
        let findings = document?["findings"] as? [[String: Any]]
        #expect(findings?.first?["kind"] as? String == "projection_mismatch")
    }

    @Test func aMissingRecordIsASequenceGap() async throws {
        let (directory, fixture) = try await journal()
        let seq = try firstSeq(of: fixture.discarded, in: directory.url).next
        try Tamper.write(directory.url) { txn, db in _ = try txn.delete(db.events, key: seq.key) }
        let report = try verify(directory.url)
        #expect(report.findings.contains { $0.kind == .sequenceGap && $0.seq == seq })
        // Its operation's history lost an attempt's start, so its outcome breaks the numbering.
        #expect(report.findings.contains { $0.kind == .attemptNumbering && $0.operationID == fixture.discarded })
    }
}
