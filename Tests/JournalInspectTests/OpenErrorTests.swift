import Foundation
import JournalInspect
@testable import Outbox
import OutboxStorage
import Testing

/// What cannot be opened exits 66, each case with its own message; nothing is created or changed.
@Suite("Opening what is not a readable journal", .timeLimit(.minutes(1)))
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

    @Test func theDataFileItselfStandsForItsDirectory() async throws {
        let journal = directory.path("journal")
        _ = try await writeQueuedJournal(into: journal, count: 2)
        let result = inspect([journal.appendingPathComponent("data.mdb").path, "ops"])
        #expect(result.code == .success)
        #expect(result.output.split(separator: "\n").count == 3)
    }
}
