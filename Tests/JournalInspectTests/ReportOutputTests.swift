import Foundation
import TestHarness
@testable import JournalInspect
import Outbox
import OutboxAudit
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `report --html PATH` writes one new regular file, or with `--force` replaces one regular file
/// whole; it never writes into the journal's directory, through a link, over a FIFO, a device, a
/// directory or a file with other hard links, and a write that fails is exit 73 naming the call
/// and its errno, with nothing half-written left behind. After each refusal the journal is byte
/// for byte what it was, and opens and verifies.
@Suite("A report never replaces what it must not", .hangGuard)
struct ReportOutputTests {
    let directory = TemporaryDirectory()
    var journal: URL { directory.path("journal") }
    /// A directory beside the journal, where reports may go.
    var outside: URL { directory.path("out") }

    /// Writes a small journal and the directory beside it; answers `data.mdb`'s digest.
    private func setUp(operations: Int = 3) async throws -> SHA256Digest {
        _ = try await writeQueuedJournal(into: journal, count: operations)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        return try dataFileDigest(journal)
    }

    private func report(_ path: String, force: Bool = false, journalArgument: String? = nil) -> RunResult {
        inspect([journalArgument ?? journal.path, "report", "--html", path] + (force ? ["--force"] : []))
    }

    private func reportArguments(_ path: String, force: Bool) -> [String] {
        [journal.path, "report", "--html", path] + (force ? ["--force"] : [])
    }

    /// The message a refused or failed write ends with.
    private func refusal(_ path: String, _ reason: String) -> String {
        "journal-inspect: error: cannot write the report to \(path): \(reason)\n"
    }

    private func outsidePath(_ name: String) -> String {
        outside.appendingPathComponent(name).path
    }

    private func names(in url: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }

    /// The journal is as it was: `data.mdb` unchanged, `lock.mdb` a regular file, and it opens
    /// and verifies.
    private func expectIntact(_ digest: SHA256Digest, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try dataFileDigest(journal) == digest, "data.mdb changed", sourceLocation: sourceLocation)
        #expect(FileShape(journal.appendingPathComponent("data.mdb").path)?.links == 1, sourceLocation: sourceLocation)
        let lock = FileShape(journal.appendingPathComponent("lock.mdb").path)
        #expect(lock == nil || lock?.isRegularFile == true, "lock.mdb: \(lock.map(\.description) ?? "")", sourceLocation: sourceLocation)
        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .success, "\(verify.errors)", sourceLocation: sourceLocation)
    }

    // MARK: The journal's directory

    @Test(arguments: ["journal/data.mdb", "journal/lock.mdb", "journal/report.html", "journal/./report.html",
                      "linked/report.html", "out/../journal/report.html"])
    func aPathInTheJournalsDirectoryIsRefusedHoweverItIsSpelled(_ relative: String) async throws {
        let digest = try await setUp()
        try FileManager.default.createSymbolicLink(atPath: directory.path("linked").path, withDestinationPath: journal.path)
        let before = try names(in: journal)
        let path = directory.url.path + "/" + relative
        for force in [false, true] {
            let result = report(path, force: force)
            #expect(result.code == .cannotCreate, "\(relative) --force \(force)")
            #expect(result.errors == refusal(path, "its directory, \(resolvedPath(journal.path)), is the journal's: journal-inspect "
                + "writes nothing beside data.mdb; give a path outside it"), "\(result.errors)")
            #expect(result.output.isEmpty)
        }
        #expect(try names(in: journal) == before, "nothing was added to the journal's directory")
        try expectIntact(digest)
    }

    @Test func theJournalNamedByItsDataFileIsGuardedTheSame() async throws {
        let digest = try await setUp()
        let path = journal.appendingPathComponent("report.html").path
        let result = report(path, journalArgument: journal.appendingPathComponent("data.mdb").path)
        #expect(result.code == .cannotCreate)
        #expect(result.errors.contains("is the journal's: journal-inspect writes nothing beside data.mdb"))
        #expect(FileShape(path) == nil)
        try expectIntact(digest)
    }

    // MARK: What is not a regular file

    @Test(arguments: ["a file outside", "data.mdb", "nothing"])
    func aSymbolicLinkIsRefusedEvenWithForce(_ target: String) async throws {
        let digest = try await setUp()
        let destination: String
        switch target {
        case "data.mdb": destination = journal.appendingPathComponent("data.mdb").path
        case "nothing": destination = outsidePath("missing.html")
        default:
            destination = outsidePath("notes.txt")
            try Data("ticket 4411 notes\n".utf8).write(to: URL(fileURLWithPath: destination))
        }
        let before = FileShape(destination)
        let link = outsidePath("link.html")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: destination)
        for force in [false, true] {
            let result = report(link, force: force)
            #expect(result.code == .cannotCreate)
            #expect(result.errors == refusal(link, "it is a symbolic link; journal-inspect neither writes through a link nor "
                + "replaces one, even with --force: give the path of a regular file"), "\(result.errors)")
        }
        #expect(FileShape(link)?.type == S_IFLNK)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == destination)
        #expect(FileShape(destination) == before, "what the link points to is untouched")
        try expectIntact(digest)
    }

    @Test func aFIFOIsRefusedWithoutBeingOpenedEvenWithForce() async throws {
        let digest = try await setUp()
        let fifo = outsidePath("pipe.html")
        #expect(mkfifo(fifo, 0o644) == 0)
        let before = FileShape(fifo)
        // Nobody reads the FIFO: a tool that opened it to write would block until the deadline.
        for force in [false, true] {
            let result = try runBinary(reportArguments(fifo, force: force))
            #expect(!result.timedOut, "it blocked on the FIFO")
            #expect(result.status == ExitCode.cannotCreate.rawValue)
            #expect(result.errors == refusal(fifo, "it is a FIFO, not a regular file; journal-inspect replaces only a regular "
                + "file, even with --force"), "\(result.errors)")
        }
        #expect(FileShape(fifo) == before)
        try expectIntact(digest)
    }

    @Test func aDeviceIsRefusedEvenWithForce() async throws {
        let digest = try await setUp()
        // A node of the null device made here when this user may (root may): a tool that
        // replaced it would replace a file of this test, not the system's /dev/null.
        let node = outsidePath("null")
        let device = mknod(node, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 ? node : "/dev/null"
        let before = FileShape(device)
        try #require(before?.type == S_IFCHR)
        for force in [false, true] {
            let result = try runBinary(reportArguments(device, force: force))
            try #require(result.status == ExitCode.cannotCreate.rawValue, "\(result.errors)")
            #expect(result.errors == refusal(device, "it is a character device, not a regular file; journal-inspect replaces "
                + "only a regular file, even with --force"), "\(result.errors)")
        }
        #expect(FileShape(device) == before)
        // The system's own node, once the one made here was refused.
        let system = FileShape("/dev/null")
        let result = report("/dev/null", force: true)
        #expect(result.code == .cannotCreate && result.errors.contains("it is a character device"))
        #expect(FileShape("/dev/null") == system)
        try expectIntact(digest)
    }

    @Test func aDirectoryIsRefusedEvenWithForce() async throws {
        let digest = try await setUp()
        let sub = outside.appendingPathComponent("reports")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        for force in [false, true] {
            let result = report(sub.path, force: force)
            #expect(result.code == .cannotCreate)
            #expect(result.errors == refusal(sub.path, "it is a directory, not a regular file; journal-inspect replaces only a "
                + "regular file, even with --force"), "\(result.errors)")
        }
        for path in [sub.path + "/", outsidePath("new-reports") + "/"] {
            let result = report(path, force: true)
            #expect(result.code == .cannotCreate)
            #expect(result.errors == refusal(path, "it ends with /, so it names a directory; give the path of a file"), "\(result.errors)")
        }
        #expect(try names(in: sub).isEmpty)
        #expect(FileShape(outsidePath("new-reports")) == nil)
        try expectIntact(digest)
    }

    @Test(arguments: ["another file", "data.mdb"])
    func aFileWithMoreThanOneHardLinkIsRefusedEvenWithForce(_ linkedTo: String) async throws {
        let digest = try await setUp()
        let original: String
        if linkedTo == "data.mdb" {
            original = journal.appendingPathComponent("data.mdb").path
        } else {
            original = outsidePath("first.html")
            try Data("the first report\n".utf8).write(to: URL(fileURLWithPath: original))
        }
        let path = outsidePath("second.html")
        #expect(link(original, path) == 0)
        let before = FileShape(path)
        for force in [false, true] {
            let result = report(path, force: force)
            #expect(result.code == .cannotCreate)
            #expect(result.errors == refusal(path, "it has 2 hard links; replacing it would split them, so journal-inspect does "
                + "not, even with --force: give another path"), "\(result.errors)")
        }
        #expect(FileShape(path) == before && FileShape(original) == before, "both names still name one file, unchanged")
        #expect(unlink(path) == 0)
        try expectIntact(digest)
    }

    // MARK: An existing regular file

    @Test func anExistingFileIsRefusedWithoutForce() async throws {
        let digest = try await setUp()
        let path = outsidePath("ticket-4411.html")
        try Data("the report sent last week\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o600) == 0)
        let before = FileShape(path)
        let result = report(path)
        #expect(result.code == .cannotCreate)
        #expect(result.errors == refusal(path, "a file is there already; give --force to replace it"), "\(result.errors)")
        #expect(FileShape(path) == before)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "the report sent last week\n")
        try expectIntact(digest)
    }

    @Test(arguments: [mode_t(0o600), 0o640, 0o444])
    func withForceAnExistingFileIsReplacedWholeAndKeepsItsMode(_ mode: mode_t) async throws {
        let digest = try await setUp()
        let path = outsidePath("ticket-4411.html")
        try Data("the report sent last week\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, mode) == 0)
        let result = report(path, force: true)
        #expect(result.code == .success, "\(result.errors)")
        #expect(result.output.hasPrefix("Wrote \(path) ("))
        let after = try #require(FileShape(path))
        #expect(after.isRegularFile && after.permissions == mode && after.links == 1, "\(after)")
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("<!DOCTYPE html>"))
        #expect(try names(in: outside) == ["ticket-4411.html"], "no temporary file is left beside it")
        try expectIntact(digest)
    }

    @Test func aNewFileGetsTheUsualModeAndNothingIsLeftBesideIt() async throws {
        let digest = try await setUp()
        let path = outsidePath("new.html")
        let result = report(path)
        #expect(result.code == .success, "\(result.errors)")
        #expect(FileShape(path)?.permissions == 0o644 & ~currentUmask())
        #expect(try names(in: outside) == ["new.html"])

        let masked = outsidePath("masked.html")
        let binary = try runBinary(reportArguments(masked, force: false), through: ["/bin/sh", "-c", #"umask 027 && exec "$0" "$@""#])
        #expect(binary.status == 0, "\(binary.errors)")
        #expect(FileShape(masked)?.permissions == 0o640, "0644 less the umask")
        try expectIntact(digest)
    }

    // MARK: Writes that fail

    @Test func aDirectoryThatCannotBeReachedIsNamedWithItsErrno() async throws {
        let digest = try await setUp()
        let missing = outsidePath("no-such-dir/report.html")
        let result = report(missing)
        #expect(result.code == .cannotCreate)
        #expect(result.errors == refusal(missing, "its directory, \(outsidePath("no-such-dir")), cannot be reached: "
            + "\(errnoWords(ENOENT)) (ENOENT)"), "\(result.errors)")
        try Data("x".utf8).write(to: outside.appendingPathComponent("plain.txt"))
        let throughFile = outsidePath("plain.txt/report.html")
        let notDirectory = report(throughFile)
        #expect(notDirectory.code == .cannotCreate)
        #expect(notDirectory.errors == refusal(throughFile, "its directory, \(outsidePath("plain.txt")), cannot be reached: "
            + "\(errnoWords(ENOTDIR)) (ENOTDIR)"), "\(notDirectory.errors)")
        try expectIntact(digest)
    }

    /// As another user than root (``OtherUser``): root may write anywhere.
    @Test(.enabled(if: OtherUser.available != nil, "running as root needs setpriv to run the tool as another user"))
    func aDirectoryThisUserMayNotWriteExitsSeventyThreeNamingTheErrno() async throws {
        let digest = try await setUp()
        // The journal readable by all; the directory for the report writable by nobody but root.
        #expect(chmod(directory.url.path, 0o755) == 0 && chmod(journal.path, 0o755) == 0)
        for name in try names(in: journal) { #expect(chmod(journal.appendingPathComponent(name).path, 0o644) == 0) }
        let locked = outside.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        let existing = locked.appendingPathComponent("old.html").path
        try Data("the report sent last week\n".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(chmod(existing, 0o666) == 0 && chmod(locked.path, 0o555) == 0)
        defer { _ = chmod(locked.path, 0o755) }
        let before = FileShape(existing)

        let fresh = locked.appendingPathComponent("new.html").path
        let created = try runBinary(reportArguments(fresh, force: false), user: OtherUser.available)
        #expect(created.status == ExitCode.cannotCreate.rawValue)
        #expect(created.errors.hasSuffix(refusal(fresh, "creating it failed: \(errnoWords(EACCES)) (EACCES)")), "\(created.errors)")
        let replaced = try runBinary(reportArguments(existing, force: true), user: OtherUser.available)
        #expect(replaced.status == ExitCode.cannotCreate.rawValue)
        #expect(replaced.errors.hasSuffix(refusal(existing, "creating a temporary file beside it failed: \(errnoWords(EACCES)) "
            + "(EACCES); the file there is as it was")), "\(replaced.errors)")
        #expect(FileShape(existing) == before)
        #expect(try names(in: locked) == ["old.html"])
        try expectIntact(digest)
    }

    /// The calls that fail on a full, over-quota or failing disk, made to fail in this process:
    /// a write after the first 4 KiB went down, the flush, the close.
    @Test(arguments: [("writing it", ENOSPC), ("writing it", EDQUOT), ("flushing it to disk (fsync)", EIO), ("closing it", EIO)])
    func aCallThatFailsIsNamedWithItsErrnoAndNothingIsHalfWritten(_ call: String, _ code: Int32) async throws {
        let digest = try await setUp()
        let existing = outsidePath("old.html")
        try Data("the report sent last week\n".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(chmod(existing, 0o640) == 0)
        let before = FileShape(existing)
        let fresh = outsidePath("fresh.html")
        for (path, force) in [(fresh, false), (existing, true)] {
            let errors = CapturedOutput()
            var context = InspectContext(now: fixtureStart, standardOutput: CapturedOutput(), standardError: errors)
            context.fileWriteCalls = Self.failing(call, code)
            let exit = JournalInspect.run(reportArguments(path, force: force), context: context)
            #expect(exit == .cannotCreate)
            let aftermath = force ? "the file there is as it was" : "nothing was left at \(path)"
            #expect(errors.text == refusal(path, "\(call) failed: \(errnoWords(code)) (\(SystemErrno(code).name)); \(aftermath)"),
                    "\(errors.text)")
        }
        #expect(FileShape(fresh) == nil)
        #expect(FileShape(existing) == before)
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "the report sent last week\n")
        #expect(try names(in: outside) == ["old.html"], "no temporary file is left")
        try expectIntact(digest)
    }

    /// The system's calls, but `call` fails with `code`; a write fails once 4 KiB are down.
    private static func failing(_ call: String, _ code: Int32) -> FileWriteCalls {
        var calls = FileWriteCalls.system
        let system = FileWriteCalls.system
        switch call {
        case "writing it":
            calls.write = { descriptor, bytes, count in
                guard lseek(descriptor, 0, SEEK_CUR) < 4096 else {
                    errno = code
                    return -1
                }
                return system.write(descriptor, bytes, min(count, 4096))
            }
        case "flushing it to disk (fsync)":
            calls.fsync = { _ in
                errno = code
                return -1
            }
        default:
            calls.close = { descriptor in
                _ = system.close(descriptor)
                errno = code
                return -1
            }
        }
        return calls
    }

    /// A file-size limit in the child (RLIMIT_FSIZE, as `ulimit -f` sets it) makes the kernel
    /// refuse the write past it, as a full disk refuses one: no root, no special file system.
    @Test func aWriteTheSystemRefusesExitsSeventyThreeAndLeavesNothingHalfWritten() async throws {
        let digest = try await setUp(operations: 12)
        // 16 blocks: 8 KiB in dash's 512-byte blocks, 16 KiB in bash's 1024-byte ones; the
        // journal's lock file is already that long or shorter, the report longer.
        let limited = ["/bin/sh", "-c", #"ulimit -f 16 && exec "$0" "$@""#]
        let unlimited = outsidePath("unlimited.html")
        #expect(report(unlimited).code == .success)
        try #require((FileShape(unlimited)?.size ?? 0) > 16 * 1024, "the report outgrows the limit")

        let fresh = outsidePath("fresh.html")
        let created = try runBinary(reportArguments(fresh, force: false), through: limited)
        #expect(created.signal == nil && created.status == ExitCode.cannotCreate.rawValue, "\(created.errors)")
        #expect(created.errors == refusal(fresh, "writing it failed: \(errnoWords(EFBIG)) (EFBIG); nothing was left at \(fresh)"),
                "\(created.errors)")
        #expect(FileShape(fresh) == nil)

        let existing = outsidePath("old.html")
        try Data("the report sent last week\n".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(chmod(existing, 0o600) == 0)
        let before = FileShape(existing)
        let replaced = try runBinary(reportArguments(existing, force: true), through: limited)
        #expect(replaced.signal == nil && replaced.status == ExitCode.cannotCreate.rawValue, "\(replaced.errors)")
        #expect(replaced.errors == refusal(existing, "writing it failed: \(errnoWords(EFBIG)) (EFBIG); the file there is as it was"),
                "\(replaced.errors)")
        #expect(FileShape(existing) == before)
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "the report sent last week\n")
        #expect(try names(in: outside) == ["old.html", "unlimited.html"], "no temporary file is left")
        try expectIntact(digest)
    }
}
