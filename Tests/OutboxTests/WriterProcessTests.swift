import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxTesting
import Testing

/// What real processes do to one journal: one writes, others are refused and may read; a
/// file-size limit is met mid-write.
@Suite("One writer process per journal", .timeLimit(.minutes(10)))
struct WriterProcessTests {
    @Test func aSecondProcessIsRefusedWhileTheFirstWritesAndReadersAreNot() async throws {
        let journal = TestJournal()
        let first = try journal.open()
        let id = try await first.enqueue(productRequest(1))
        first.close()

        let holder = try ChildProcess("outbox-test-child", ["hold", journal.directory.path, journal.account])
        let line = try holder.readLine()
        let pid = try #require(Int32(line.dropFirst("open ".count)), "\(line)")
        #expect {
            _ = try journal.open()
        } throws: { error in
            error as? OutboxError == .openInAnotherProcess(path: journal.directory.path, processID: pid)
        }
        // Reading is never refused, and nothing was written by the refused open.
        let reader = try JournalReader(directory: journal.directory)
        #expect(try reader.operation(id)?.status == .queued)
        #expect(try reader.verify().isClean)
        reader.close()

        holder.send("done")
        #expect(try holder.readLine() == "closed")
        #expect(holder.wait() == 0)
        let again = try journal.open()
        defer { again.close() }
        #expect(try again.operation(id)?.status == .queued)
    }

    @Test func aWriterKilledReleasesTheJournal() async throws {
        let journal = TestJournal()
        let holder = try ChildProcess("outbox-test-child", ["hold", journal.directory.path, journal.account])
        _ = try holder.readLine()
        #expect(throws: OutboxError.self) { _ = try journal.open() }
        #expect(holder.kill())
        holder.wait()
        let outbox = try journal.open()
        defer { outbox.close() }
        #expect(try outbox.ledger().entries.isEmpty)
    }

    @Test func aFileSizeLimitIsStorageFullWithEFBIGAndEverySavedWriteStays() throws {
        let journal = TestJournal()
        let child = try ChildProcess("outbox-test-child", ["fill-limited", journal.directory.path, String(96 << 10)])
        let refused = try child.readLine()
        let read = try child.readLine()
        #expect(child.wait() == 0)
        let parts = refused.split(separator: " ")
        #expect(parts.count == 4 && parts[0] == "refused", "\(refused)")
        #expect(parts[1] == "\(EFBIG)", "the refusal carries EFBIG: \(refused)")
        let saved = try #require(Int(parts[3]))
        #expect(saved > 10, "writes were saved before the limit")
        #expect(read == "read \(saved)")

        let reader = try JournalReader(directory: journal.directory)
        defer { reader.close() }
        #expect(try reader.ledger().entries.count == saved)
        #expect(try reader.verify().isClean)
    }
}
