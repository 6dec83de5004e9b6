import Foundation
import TestHarness
import JournalInspect
import Outbox
import OutboxAudit
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths and options a careless or hostile command line gives: a key file, a journal path or a
/// lock file that is not what it should be, moments and offsets at their bounds. Each is answered
/// with its exit code and a message naming what it is; nothing blocks, nothing is written, and
/// the journal still opens and verifies afterwards.
@Suite("Hostile journal paths, key files, lock files and moments", .hangGuard)
struct HostileInputTests {
    let directory = TemporaryDirectory()
    var journal: URL { directory.path("journal") }

    private func setUp() async throws -> SHA256Digest {
        _ = try await writeQueuedJournal(into: journal, count: 3)
        return try dataFileDigest(journal)
    }

    private func usage(_ message: String, command: String? = nil) -> String {
        "journal-inspect: error: \(message)\nRun 'journal-inspect \(command.map { "\($0) " } ?? "")--help' for usage.\n"
    }

    private func expectIntact(_ digest: SHA256Digest, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try dataFileDigest(journal) == digest, "data.mdb changed", sourceLocation: sourceLocation)
        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .success, "\(verify.errors)", sourceLocation: sourceLocation)
    }

    // MARK: Key files

    /// What a `--key-file` path is made to be, and the words the refusal ends with.
    @Test(arguments: [
        ("a directory", "it is a directory; give the file that holds the journal's key"),
        ("/dev/null", "it is a character device, not a regular file; give the file that holds the journal's key"),
        ("/dev/zero", "it is a character device, not a regular file; give the file that holds the journal's key"),
        ("a symbolic link loop", "it is a symbolic link loop (ELOOP)"),
        ("a dangling link", "it is a symbolic link to %@/gone.key, which does not exist"),
        ("a path through a file", "a part of its path is not a directory (ENOTDIR)"),
        ("missing", "it does not exist"),
    ])
    func aKeyFileThatIsNotAReadableFileSaysWhatItIs(_ shape: String, _ reason: String) async throws {
        let digest = try await setUp()
        let key = try makeKeyPath(shape)
        let result = inspect([journal.path, "summary", "--key-file", key])
        #expect(result.code == .usage)
        let words = reason.replacingOccurrences(of: "%@", with: directory.url.path)
        #expect(result.errors == usage("cannot read the key file \(key): \(words)"), "\(result.errors)")
        try expectIntact(digest)
    }

    private func makeKeyPath(_ shape: String) throws -> String {
        switch shape {
        case "a directory":
            return directory.url.path
        case "a symbolic link loop":
            let first = directory.path("key-a").path
            let second = directory.path("key-b").path
            try FileManager.default.createSymbolicLink(atPath: first, withDestinationPath: second)
            try FileManager.default.createSymbolicLink(atPath: second, withDestinationPath: first)
            return first
        case "a dangling link":
            let link = directory.path("key-link").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory.path("gone.key").path)
            return link
        case "a path through a file":
            try Data(String(repeating: "ab", count: 32).utf8).write(to: directory.path("key.hex"))
            return directory.path("key.hex").path + "/key"
        case "missing":
            return directory.path("no.key").path
        default:
            return shape
        }
    }

    @Test func aKeyFileThatIsAFIFOIsRefusedWithoutBlocking() async throws {
        let digest = try await setUp()
        let fifo = directory.path("key.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let result = try runBinary([journal.path, "summary", "--key-file", fifo])
        #expect(!result.timedOut, "it blocked on the FIFO")
        #expect(result.status == ExitCode.usage.rawValue)
        #expect(result.errors == usage("cannot read the key file \(fifo): it is a FIFO, not a regular file; give the file that holds "
            + "the journal's key"), "\(result.errors)")
        try expectIntact(digest)
    }

    @Test func aHugeKeyFileIsRefusedByItsSizeWithoutBeingReadWhole() async throws {
        let digest = try await setUp()
        let key = directory.path("huge.key")
        try Data(repeating: 0x61, count: 1 << 20).write(to: key)
        let result = inspect([journal.path, "summary", "--key-file", key.path])
        #expect(result.code == .usage)
        #expect(result.errors == usage("the key file \(key.path) holds 1048576 bytes: give 32 bytes, or 64 hex digits"), "\(result.errors)")
        try expectIntact(digest)
    }

    // MARK: Journal paths

    @Test(arguments: [
        ("a symbolic link loop", "no journal at %@: it is a symbolic link loop (ELOOP). Give the journal's directory (the one holding data.mdb)."),
        ("a dangling link", "no journal at %@: it is a symbolic link to %@.moved, which does not exist. Give the journal's directory (the one holding data.mdb)."),
        ("a path through a file", "no journal at %@: a part of its path is not a directory (ENOTDIR). Give the journal's directory (the one holding data.mdb)."),
        ("/dev/null", "%@ is a character device, not a journal: give the journal's directory (the one holding data.mdb)."),
    ])
    func aJournalPathThatLeadsNowhereSaysWhy(_ shape: String, _ message: String) async throws {
        let digest = try await setUp()
        let path: String
        switch shape {
        case "a symbolic link loop":
            path = directory.path("loop-a").path
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: directory.path("loop-b").path)
            try FileManager.default.createSymbolicLink(atPath: directory.path("loop-b").path, withDestinationPath: path)
        case "a dangling link":
            path = directory.path("old-journal").path
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".moved")
        case "a path through a file":
            path = journal.appendingPathComponent("data.mdb").path + "/journal"
        default:
            path = shape
        }
        for command in ["summary", "verify"] {
            let result = inspect([path, command])
            #expect(result.code == .cannotOpen)
            #expect(result.errors == "journal-inspect: error: \(message.replacingOccurrences(of: "%@", with: path))\n", "\(result.errors)")
            #expect(result.output.isEmpty)
        }
        try expectIntact(digest)
    }

    @Test func aFIFOAsTheJournalIsRefusedWithoutBlocking() async throws {
        let fifo = directory.path("journal.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let result = try runBinary([fifo, "summary"])
        #expect(!result.timedOut)
        #expect(result.status == ExitCode.cannotOpen.rawValue)
        #expect(result.errors == "journal-inspect: error: \(fifo) is a FIFO, not a journal: give the journal's directory (the one "
            + "holding data.mdb).\n", "\(result.errors)")
    }

    // MARK: lock.mdb

    @Test(arguments: ["a directory", "a link to /dev/null", "a link to a file outside", "a dangling link"])
    func aLockFileThatIsNotARegularFileIsRefusedNamingIt(_ shape: String) async throws {
        let digest = try await setUp()
        let lock = journal.appendingPathComponent("lock.mdb").path
        #expect(unlink(lock) == 0)
        let outside = directory.path("elsewhere.txt").path
        let kind: String
        switch shape {
        case "a directory":
            #expect(mkdir(lock, 0o755) == 0)
            kind = "a directory"
        case "a link to /dev/null":
            #expect(symlink("/dev/null", lock) == 0)
            kind = "a symbolic link"
        case "a link to a file outside":
            try Data("not LMDB's\n".utf8).write(to: URL(fileURLWithPath: outside))
            #expect(symlink(outside, lock) == 0)
            kind = "a symbolic link"
        default:
            #expect(symlink(outside, lock) == 0)
            kind = "a symbolic link"
        }
        let before = (FileShape(lock), FileShape(outside))
        for command in ["summary", "verify"] {
            let result = inspect([journal.path, command])
            #expect(result.code == .cannotOpen)
            #expect(result.errors == lockRefusal(kind), "\(result.errors)")
        }
        #expect(FileShape(lock) == before.0 && FileShape(outside) == before.1, "lock.mdb and what it points to are untouched")
        #expect(try dataFileDigest(journal) == digest)
        // Moved aside, the journal reads again.
        #expect(rename(lock, directory.path("lock.mdb.aside").path) == 0)
        try expectIntact(digest)
    }

    private func lockRefusal(_ kind: String) -> String {
        "journal-inspect: error: cannot open \(journal.path): its lock.mdb is \(kind), not a regular file. LMDB keeps the table of "
            + "a journal's readers in lock.mdb and writes to it, so journal-inspect does not open the journal through this one. "
            + "Move \(journal.path)/lock.mdb aside (LMDB creates a new one), or work on a copy of the journal's directory without it.\n"
    }

    @Test func aLockFileThatIsAFIFOIsRefusedWithoutBlocking() async throws {
        let digest = try await setUp()
        let lock = journal.appendingPathComponent("lock.mdb").path
        #expect(unlink(lock) == 0 && mkfifo(lock, 0o644) == 0)
        let result = try runBinary([journal.path, "summary"])
        #expect(!result.timedOut)
        #expect(result.status == ExitCode.cannotOpen.rawValue)
        #expect(result.errors == lockRefusal("a FIFO"), "\(result.errors)")
        #expect(FileShape(lock)?.type == S_IFIFO)
        #expect(unlink(lock) == 0)
        try expectIntact(digest)
    }

    // MARK: Offsets and moments at their bounds

    /// ISO 8601 offsets run to ±23:59 (hours 00 to 23, minutes 00 to 59), past the ±18:00 of
    /// Foundation's fixed-offset zones: `--tz` and a moment's own offset follow the one rule.
    @Test(arguments: [("+23:59", "2027-01-16T07:59:00+23:59"), ("-23:59", "2027-01-14T08:01:00-23:59"),
                      ("+18:01", "2027-01-16T02:01:00+18:01"), ("+05:45", "2027-01-15T13:45:00+05:45")])
    func anOffsetUpTo2359ReadsTheSameInTzAndInAMoment(_ offset: String, _ firstSaved: String) async throws {
        let digest = try await setUp()
        let tz = inspect([journal.path, "ops", "--tz", offset])
        #expect(tz.code == .success, "\(tz.errors)")
        #expect(tz.output.contains(firstSaved), "\(tz.output)")
        let summary = inspect([journal.path, "--tz", offset])
        #expect(summary.code == .success && summary.output.contains("Shown in        UTC\(offset)"), "\(summary.output)")
        let since = inspect([journal.path, "ops", "--since", "2027-01-15T08:00\(offset)", "--until", "2027-01-15T08:00:30\(offset)"])
        #expect(since.code == .success, "\(since.errors)")
        let wallClock = inspect([journal.path, "ops", "--tz", offset, "--since", String(firstSaved.prefix(16))])
        #expect(wallClock.code == .success && wallClock.output.split(separator: "\n").count == 4, "a wall-clock time in that zone: \(wallClock)")
        try expectIntact(digest)
    }

    @Test(arguments: ["+24:00", "-24:00", "+23:60", "+99:99"])
    func anOffsetPast2359IsRefusedByTzAndByAMomentWithTheSameRule(_ offset: String) async throws {
        let digest = try await setUp()
        let rule = "has an offset no zone has: an offset runs from -23:59 to +23:59"
        let tz = inspect([journal.path, "ops", "--tz", offset])
        #expect(tz.code == .usage)
        #expect(tz.errors == usage("--tz \(offset) \(rule)"), "\(tz.errors)")
        let moment = "2027-01-15T08:00\(offset)"
        let since = inspect([journal.path, "ops", "--since", moment])
        #expect(since.code == .usage)
        #expect(since.errors == usage("--since \(moment) \(rule)", command: "ops"), "\(since.errors)")
        try expectIntact(digest)
    }

    @Test(arguments: [
        ["ops", "--since", "0001-01-01"], ["ops", "--until", "9999-12-31T23:59:59Z"],
        ["ops", "--since", "0001-01-01T00:00:00+23:59"], ["events", "--until", "9999-12-31T23:59:59.999-23:59"],
        ["summary", "--now", "9999-12-31T23:59:59-23:59"], ["summary", "--now", "0001-01-01T00:00:00+23:59"],
        ["ops", "--since", "1000000w"],
    ])
    func aMomentAtTheCalendarsEdgeReadsWithoutTrapping(_ arguments: [String]) async throws {
        let digest = try await setUp()
        let result = inspect([journal.path] + arguments)
        #expect(result.code == .success, "\(arguments): \(result.errors)")
        #expect(!result.output.isEmpty)
        try expectIntact(digest)
    }

    @Test(arguments: [
        ("0000-01-01", "is not a date: there is no year 0"),
        ("2027-01-15T23:59:60Z", "is not a time: seconds run from 00 to 59, not 60"),
        ("2027-01-15T24:00Z", "is not a time: hours run from 00 to 23, not 24"),
        ("2028-02-30", "is not a date: February 2028 has 29 days, from 01 to 29"),
    ])
    func aMomentPastTheCalendarsEdgeIsRefusedNamingIt(_ moment: String, _ reason: String) async throws {
        let digest = try await setUp()
        let result = inspect([journal.path, "ops", "--since", moment])
        #expect(result.code == .usage)
        #expect(result.errors == usage("--since \(moment) \(reason)", command: "ops"), "\(result.errors)")
        try expectIntact(digest)
    }
}
