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

/// A journal attached to a ticket is often read-only (saved with `chmod -R a-w`, or on read-only
/// media): it is read without LMDB's lock file, and the tool says so once. What this user may
/// not read at all is refused, naming the directory or file.
///
/// The binary runs as another user (``OtherUser``): as root, which CI is, permission bits do
/// not bind, so the test would prove nothing.
@Suite("Read-only and unreadable journals", .hangGuard,
       .enabled(if: OtherUser.available != nil, "running as root needs setpriv to run the tool as another user"))
struct ReadOnlyMediaTests {
    let directory = TemporaryDirectory()
    let user = OtherUser.available

    /// A copy of a journal of every status, as a ticket's attachment: readable by all.
    private func ticketCopy(keepingLockFile: Bool) async throws -> (URL, EveryStatusJournal) {
        let original = directory.path("original")
        let journal = try await EveryStatusJournal.write(into: original)
        let copy = directory.path("ticket-4411")
        try FileManager.default.copyItem(at: original, to: copy)
        let lock = copy.appendingPathComponent("lock.mdb")
        if !keepingLockFile { try? FileManager.default.removeItem(at: lock) }
        #expect(FileManager.default.fileExists(atPath: lock.path) == keepingLockFile)
        try setMode(0o755, of: directory.url)
        return (copy, journal)
    }

    private func setMode(_ mode: mode_t, of url: URL) throws {
        guard chmod(url.path, mode) == 0 else { throw FixtureError.unexpected("chmod \(url.path): \(errno)") }
    }

    /// `chmod -R a-w` (and readable by all): the directory and every file in it.
    private func makeReadOnly(_ copy: URL) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: copy.path) {
            try setMode(0o444, of: copy.appendingPathComponent(name))
        }
        try setMode(0o555, of: copy)
    }

    /// Gives the owner back write access, so the temporary directory can be removed.
    private func restore(_ copy: URL) {
        _ = chmod(copy.path, 0o755)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: copy.path)) ?? [] {
            _ = chmod(copy.appendingPathComponent(name).path, 0o644)
        }
    }

    @Test(arguments: [false, true])
    func aReadOnlyCopyIsReadWithoutLMDBsLockFileAndTheToolSaysSoOnce(keepingLockFile: Bool) async throws {
        let (copy, journal) = try await ticketCopy(keepingLockFile: keepingLockFile)
        try makeReadOnly(copy)
        defer { restore(copy) }
        let outputs = directory.path("out")
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        try setMode(0o777, of: outputs)
        let before = try dataFileDigest(copy)
        let path = copy.path
        let runs: [[String]] = [
            [path], [path, "ops"], [path, "timeline", journal.failed.idempotencyKey], [path, "events", "--limit", "5"],
            [path, "ledger", "--csv"], [path, "verify"], [path, "export", "--all"],
            [path, "report", "--html", outputs.appendingPathComponent("report.html").path],
        ]
        for arguments in runs {
            let result = try runBinary(arguments, user: user)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
            #expect(!result.output.isEmpty)
            let reason = keepingLockFile ? "this user may not write its lock.mdb" : "this user may not create lock.mdb in its directory"
            #expect(result.errors == "journal-inspect: warning: \(path): read without LMDB's lock file, because \(reason); "
                + "a writer's changes made meanwhile may not show consistently\n", "\(arguments)")
        }
        #expect(try dataFileDigest(copy) == before)
        #expect(FileManager.default.fileExists(atPath: copy.appendingPathComponent("lock.mdb").path) == keepingLockFile)
        let timeline = try runBinary([path, "timeline", journal.failed.idempotencyKey], user: user)
        #expect(timeline.output.contains("Verdict: failed: 422 on attempt 1"))
    }

    @Test func aDataFileThisUserMayNotReadIsNamed() async throws {
        let (copy, _) = try await ticketCopy(keepingLockFile: false)
        let data = copy.appendingPathComponent("data.mdb")
        try setMode(0o000, of: data)
        defer { restore(copy) }
        for arguments in [[copy.path, "ops"], [data.path, "verify"]] {
            let result = try runBinary(arguments, user: user)
            #expect(result.status == 66)
            #expect(result.errors.hasPrefix("journal-inspect: error: permission denied for \(data.path): this user may not read it"),
                    "\(result.errors)")
            #expect(result.output.isEmpty)
        }
    }

    @Test func aDirectoryThisUserMayNotEnterIsNamed() async throws {
        let (copy, _) = try await ticketCopy(keepingLockFile: false)
        try setMode(0o600, of: copy)
        defer { restore(copy) }
        for arguments in [[copy.path], [copy.appendingPathComponent("data.mdb").path, "ledger"]] {
            let result = try runBinary(arguments, user: user)
            #expect(result.status == 66)
            #expect(result.errors.hasPrefix("journal-inspect: error: permission denied for \(copy.path): this user may not enter "
                + "this directory"), "\(result.errors)")
        }
        let inner = directory.path("locked/deeper/journal")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        try setMode(0o000, of: directory.path("locked"))
        defer { _ = chmod(directory.path("locked").path, 0o755) }
        let nested = try runBinary([inner.path, "ops"], user: user)
        #expect(nested.status == 66)
        #expect(nested.errors.hasPrefix("journal-inspect: error: permission denied for \(directory.path("locked").path): "))
    }

    @Test func aKeyFileThisUserMayNotReadIsNamed() async throws {
        let (copy, _) = try await ticketCopy(keepingLockFile: false)
        let key = directory.path("key.hex")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: key)
        try setMode(0o000, of: key)
        let result = try runBinary([copy.path, "ops", "--key-file", key.path], user: user)
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("journal-inspect: error: cannot read the key file \(key.path): this user may not read it"))
    }
}
