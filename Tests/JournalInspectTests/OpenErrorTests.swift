import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxStorage
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What cannot be opened exits 66, each case with its own message; nothing is created or changed.
@Suite("Opening what is not a readable journal", .hangGuard)
struct OpenErrorTests {
    let directory = TemporaryDirectory()

    @Test func aMissingPath() {
        let missing = directory.path("nowhere").path
        let result = inspect([missing, "summary"])
        #expect(result.code == .cannotOpen)
        #expect(result.errors == "journal-inspect: error: no journal at \(missing): nothing exists at this path. "
            + "Give the journal's directory (the one holding data.mdb).\n")
        #expect(result.output.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: missing), "nothing was created")
    }

    @Test func anEmptyDirectory() throws {
        let empty = directory.path("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let result = inspect([empty.path, "ops"])
        #expect(result.code == .cannotOpen)
        #expect(result.errors.contains("no journal at \(empty.path): the directory holds no data.mdb"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty.path).isEmpty, "nothing was created")
    }

    @Test func aFileThatIsNotAJournal() throws {
        let file = directory.path("notes.txt")
        try Data("ticket 4411: the antiseptic never showed up\n".utf8).write(to: file)
        let result = inspect([file.path])
        #expect(result.code == .cannotOpen)
        #expect(result.errors.contains("\(file.path) is a file, not a journal"))

        let fake = directory.path("fake")
        try FileManager.default.createDirectory(at: fake, withIntermediateDirectories: true)
        try Data(repeating: 0x2A, count: 64 * 1024).write(to: fake.appendingPathComponent("data.mdb"))
        let garbage = inspect([fake.path, "verify"])
        #expect(garbage.code == .cannotOpen)
        #expect(garbage.errors.contains("\(fake.path) is not an outbox journal: LMDB cannot read it"))
    }

    @Test func anLMDBEnvironmentThatIsNotAJournal() throws {
        let other = directory.path("other-app")
        let environment = try LMDBEnvironment.open(directory: other)
        let table = try environment.openDatabase("settings")
        try environment.write { txn in try txn.put(table, key: Array("theme".utf8), value: Array("dark".utf8)) }
        environment.close()
        let result = inspect([other.path])
        #expect(result.code == .cannotOpen)
        #expect(result.errors.contains("\(other.path) is not an outbox journal: an LMDB environment without the journal's 'meta' database"))
    }

    @Test func aJournalOfANewerFormat() async throws {
        let journal = directory.path("journal")
        _ = try await writeQueuedJournal(into: journal, count: 1)
        try Tamper.setMeta(journal, key: "format-version", to: UInt32(RecordCodec.formatVersion + 1))
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path, "timeline", "abc"])
        #expect(result.code == .cannotOpen)
        #expect(result.errors == "journal-inspect: error: \(journal.path) was written in journal format \(RecordCodec.formatVersion + 1), "
            + "newer than this tool reads (up to format \(RecordCodec.formatVersion)): use a newer journal-inspect.\n")
        #expect(try dataFileDigest(journal) == before)
    }

    @Test func aFIFONamedDataMdbIsRefusedAtOnce() throws {
        let journal = directory.path("fifo")
        try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
        let data = journal.appendingPathComponent("data.mdb")
        #expect(mkfifo(data.path, 0o644) == 0)
        // Nothing ever writes to the FIFO: anything that opened it would block until the deadline.
        for arguments in [[journal.path], [data.path, "verify"], [journal.path, "events", "--follow"]] {
            let result = try runBinary(arguments)
            #expect(!result.timedOut, "\(arguments) blocked on the FIFO")
            #expect(result.status == 66)
            #expect(result.errors == "journal-inspect: error: \(journal.path) is not an outbox journal: data.mdb is not a regular "
                + "file (a FIFO).\n")
        }
    }

    @Test func anEmptyDataFileSaysNothingWasEverSavedInIt() throws {
        let journal = directory.path("empty-data")
        try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
        let data = journal.appendingPathComponent("data.mdb")
        #expect(FileManager.default.createFile(atPath: data.path, contents: nil))
        for command in ["summary", "verify", "ops"] {
            let result = inspect([journal.path, command])
            #expect(result.code == .cannotOpen)
            #expect(result.errors == "journal-inspect: error: \(journal.path) holds no journal: \(data.path) is empty (0 bytes), "
                + "so nothing was ever saved in it. An app stopped while creating its journal leaves this, and creates the "
                + "journal anew at its next open; if this is a copy, copy the journal's directory again.\n")
        }
        #expect(try Data(contentsOf: data).isEmpty, "left as it was")
    }

    @Test func aJournalCutShortIsDamagedAndNothingOfItIsRead() async throws {
        let journal = directory.path("journal")
        _ = try await writeQueuedJournal(into: journal, count: 40)
        let data = journal.appendingPathComponent("data.mdb")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: data.path)[.size] as? Int)
        let cut = size / 2 / 4096 * 4096
        try FileHandle(forWritingTo: data).truncate(atOffset: UInt64(cut))
        for command in ["summary", "verify", "events"] {
            let result = inspect([journal.path, command])
            #expect(result.code == .damaged)
            #expect(result.output.isEmpty)
            #expect(result.errors.hasPrefix("journal-inspect: error: \(journal.path): the journal is damaged: data.mdb is \(cut) "
                + "bytes but its last committed transaction uses"), "\(result.errors)")
            #expect(result.errors.contains("journal-inspect reads nothing of it"))
            #expect(result.errors.contains("Outbox.moveAsideDamagedJournal(at:)"))
        }
    }

    @Test func theDataFileItselfStandsForItsDirectory() async throws {
        let journal = directory.path("journal")
        _ = try await writeQueuedJournal(into: journal, count: 2)
        let result = inspect([journal.appendingPathComponent("data.mdb").path, "ops"])
        #expect(result.code == .success)
        #expect(result.output.split(separator: "\n").count == 3)
    }
}
