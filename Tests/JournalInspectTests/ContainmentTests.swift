import Foundation
import TestHarness
@testable import JournalInspect
import Outbox
import OutboxAudit
import OutboxStorage
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read that faults on a damaged file ends the reading child, never the tool: the tool exits
/// 65 and says what happened and what to do; an interruption from outside still ends it as it
/// ends any program.
@Suite("A read that faults is contained", .hangGuard)
struct ContainmentTests {
    let directory = TemporaryDirectory()

    /// A busy journal whose last record's node claims 16 MiB of data: LMDB hands the reader a
    /// value running past the end of the file, and copying it faults. Which signal the kernel
    /// raises (SIGBUS for a page of the map past the file's end, SIGSEGV past the map) depends on
    /// how the copy walks the value and on what lies beyond the map: it varies from run to run
    /// and under load, so no test here depends on it. The open-time check reads the file's
    /// outline, not every node, and lets it through.
    private func faultingJournal() async throws -> [OperationID] {
        let ids = try await writeBusyJournal(into: directory.url)
        let data = directory.path("data.mdb")
        var pages = try DataFilePages(data)
        let leaf = try pages.rightmostLeaf(of: "events")
        pages.setDataSize(ofLeaf: leaf, index: pages.nodeCount(leaf) - 1, to: 16 << 20)
        try pages.write(to: data)
        return ids
    }

    @Test func aCommandWhoseReadFaultsExitsSixtyFiveWithTheDamageExplained() async throws {
        _ = try await faultingJournal()
        #expect(try LMDBDataFile.check(path: directory.path("data.mdb").path) != nil, "the check cannot see this damage")
        let path = directory.url.path
        // Each of these reads the last record (the summary's last moment, the journal's tail, every record).
        for arguments in [[path], [path, "events"], [path, "verify", "--json"], [path, "events", "--limit", "1", "--json"]] {
            let result = try runBinary(arguments)
            #expect(result.signal == nil && !result.timedOut, "\(arguments): the tool itself never ends of the fault")
            #expect(result.status == ExitCode.damaged.rawValue, "\(arguments): \(result.errors)")
            // The promise is the exit and the explanation; the signal's name in parentheses is
            // information, whichever the kernel chose.
            #expect(result.errors.hasPrefix("journal-inspect: error: \(path): the journal is damaged: reading it failed at the "
                + "operating-system level ("), "\(arguments): \(result.errors)")
            #expect(result.errors.contains("a length or page reference inside the file points past its end"), "\(result.errors)")
            #expect(result.errors.contains("'journal-inspect \(path) verify' shows which records still read"))
            #expect(result.errors.contains("Outbox.moveAsideDamagedJournal(at:)"))
            #expect(!result.errors.contains("Program crashed") && !result.errors.contains("Fatal error"),
                    "Swift's crash report is left out: the tool reports the fault")
        }
    }

    @Test func whatTheFaultDoesNotTouchStillReads() async throws {
        let ids = try await faultingJournal()
        let path = directory.url.path
        let newest = try #require(ids.last)
        let ops = try runBinary([path, "ops", "--limit", "500"])
        #expect(ops.status == 0 && ops.errors.isEmpty, "ops reads the projections, not the damaged record")
        #expect(ops.output.contains(EventText.shortID(newest)))
        let ledger = try runBinary([path, "ledger", "--csv"])
        #expect(ledger.status == 0 && ledger.output.contains(newest.idempotencyKey))
        // The journal's last seq is read from its key alone: a page from the start still reads.
        let page = try runBinary([path, "events", "--from", "1", "--limit", "3"])
        #expect(page.status == 0 && page.errors.isEmpty, "\(page.errors)")
    }

    @Test(arguments: [
        (ReadingProcess.End.exited(0), ReadingProcess.Outcome.exit(0, message: nil)),
        (.exited(1), .exit(1, message: nil)),
        (.exited(65), .exit(65, message: nil)),
        (.signaled(SIGINT), .raise(SIGINT)),
        (.signaled(SIGTERM), .raise(SIGTERM)),
        (.signaled(SIGHUP), .raise(SIGHUP)),
        (.signaled(SIGPIPE), .raise(SIGPIPE)),
    ])
    func anExitIsPassedOnAndAnInterruptionEndsTheToolAsItEndedTheChild(_ end: ReadingProcess.End, _ outcome: ReadingProcess.Outcome) {
        #expect(ReadingProcess.outcome(of: end, journal: "/tickets/4411") == outcome)
    }

    @Test(arguments: [(SIGBUS, "SIGBUS"), (SIGSEGV, "SIGSEGV")])
    func aFaultIsDamage(_ signal: Int32, _ name: String) throws {
        guard case .exit(let status, let message?) = ReadingProcess.outcome(of: .signaled(signal), journal: "/tickets/4411") else {
            Issue.record("a fault must end in an exit with a message")
            return
        }
        #expect(status == 65)
        #expect(message.hasPrefix("journal-inspect: error: /tickets/4411: the journal is damaged: reading it failed at the "
            + "operating-system level (\(name))"))
        #expect(message.hasSuffix("\n"))
    }

    /// LMDB checks a page it follows and aborts when it is not what the reference says: damage,
    /// found by the fuzzing in a flipped branch page, never an internal error.
    @Test func lmdbsOwnCheckAbortingIsDamage() throws {
        guard case .exit(let status, let message?) = ReadingProcess.outcome(of: .signaled(SIGABRT), journal: "/tickets/4411") else {
            Issue.record("an abort must end in an exit with a message")
            return
        }
        #expect(status == 65)
        #expect(message.hasPrefix("journal-inspect: error: /tickets/4411: the journal is damaged: LMDB stopped on a check of its own (SIGABRT)"))
    }

    @Test(arguments: [(SIGILL, "SIGILL"), (SIGTRAP, "SIGTRAP"), (SIGFPE, "SIGFPE"), (SIGKILL, "SIGKILL"),
                      (SIGXFSZ, "SIGXFSZ")])
    func anyOtherDeathIsAnInternalErrorNamingItsSignal(_ signal: Int32, _ name: String) throws {
        guard case .exit(let status, let message?) = ReadingProcess.outcome(of: .signaled(signal), journal: "/tickets/4411") else {
            Issue.record("\(name) must end in an exit with a message")
            return
        }
        #expect(status == 70)
        #expect(message.hasPrefix("journal-inspect: error: "))
        #expect(message.contains("/tickets/4411") && message.contains("(\(name))"))
    }

    @Test func ctrlCEndsAFollowerCleanlyThroughTheReadingChild() async throws {
        _ = try await writeQueuedJournal(into: directory.url, count: 2)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow"])
        #expect(inspector.nextLine()?.hasPrefix("SEQ") == true, "the child reads and prints")
        let status = inspector.stop(with: SIGINT)
        #expect(!inspector.endedBySignal && status == 0)
    }

    @Test func aHangupEndsTheToolOfTheSameSignalAsItEndedTheChild() async throws {
        _ = try await writeQueuedJournal(into: directory.url, count: 2)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow"])
        #expect(inspector.nextLine()?.hasPrefix("SEQ") == true)
        let status = inspector.stop(with: SIGHUP)
        #expect(inspector.endedBySignal && status == SIGHUP, "a shell sees the hangup, as without the child")
    }
}
