import Foundation
import TestHarness
import JournalInspect
import Outbox
import OutboxAudit
import OutboxTesting
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `journal-inspect events --follow` ends at once on SIGINT and SIGTERM in every step its reading
/// child can be in, and the child never outlives the tool.
///
/// Each test puts the follower in a step on its own word (`JOURNAL_INSPECT_STEPS`: it says it
/// reached the step, or stops there for good as a read or write that never returns would), and
/// only then signals it. "No process left" is read off the output pipes: the test holds their
/// read ends only, so they end when every process that could write to them (the tool and its
/// reading child) has ended. The tool itself is always waiting for its child when a signal
/// comes: it blocks the signals it passes on until the child's pid is known.
@Suite("A follower and its reading child end on a signal", .hangGuard)
struct FollowSignalTests {
    let directory = TemporaryDirectory()

    static let steps = ["following", "reading", "writing", "waiting"]

    @Test(arguments: [SIGINT, SIGTERM], steps)
    func interruptedInAnyStepTheFollowerEndsCleanly(_ signal: Int32, _ step: String) async throws {
        _ = try await writeQueuedJournal(into: directory.url, count: 2)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow"], steps: "hold:\(step)")
        let reader = try inspector.step(step)
        #expect(reader != inspector.process.pid, "the step is the reading child's")
        let status = inspector.stop(with: signal)
        #expect(!inspector.hung && !inspector.endedBySignal && status == 0, "\(step): \(inspector.process.wait())")
        _ = inspector.remainingLines()
        _ = inspector.remainingErrors()
    }

    @Test(arguments: steps, [false, true])
    func theToolKilledItsReadingChildEndsInAnyStep(_ step: String, pipeOnly: Bool) async throws {
        _ = try await writeQueuedJournal(into: directory.url, count: 2)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow"],
                                             steps: "hold:\(step)" + (pipeOnly ? ",pipe-only" : ""))
        let reader = try inspector.step(step)
        let orphanGuard = OrphanGuard(reader)
        defer { orphanGuard.cancel() }
        inspector.process.kill()
        #expect(inspector.process.wait() == .signalled(SIGKILL))
        // Returns once the reading child, the pipes' last other holder, has ended too.
        _ = inspector.remainingLines()
        _ = inspector.remainingErrors()
        #expect(!orphanGuard.fired, "\(step)\(pipeOnly ? ", pipe only" : ""): the reading child outlived the tool")
    }

    /// The snapshot is several times what a pipe holds, and nobody reads it: the child blocks in
    /// its write, and the interruption still ends it at once, the output cut short.
    @Test(arguments: [SIGINT, SIGTERM])
    func interruptedWhileBlockedWritingToAFullPipeTheFollowerEndsCleanly(_ signal: Int32) async throws {
        let ids = try await writeQueuedJournal(into: directory.url, count: 600)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow", "--json"], steps: "announce")
        try inspector.step("writing")
        let status = inspector.stop(with: signal)
        #expect(!inspector.hung && !inspector.endedBySignal && status == 0)
        let printed = inspector.remainingLines()
        #expect(printed.count < ids.count, "the write was cut short: \(printed.count) lines of \(ids.count) events")
    }

    @Test(arguments: [false, true])
    func theToolKilledWhileItsChildIsBlockedWritingLeavesNoChild(pipeOnly: Bool) async throws {
        _ = try await writeQueuedJournal(into: directory.url, count: 600)
        let inspector = try RunningInspector([directory.url.path, "events", "--follow", "--json"],
                                             steps: "announce" + (pipeOnly ? ",pipe-only" : ""))
        let reader = try inspector.step("writing")
        let orphanGuard = OrphanGuard(reader)
        defer { orphanGuard.cancel() }
        inspector.process.kill()
        _ = inspector.remainingLines()
        _ = inspector.remainingErrors()
        #expect(!orphanGuard.fired, "the reading child outlived the tool, blocked in its write")
    }

    /// The output's reader goes away (`journal-inspect ... | head`): the next write ends the
    /// follower as a broken pipe ends any program, and with SIGPIPE ignored by whoever started
    /// it, quietly with the status a shell gives that signal.
    @Test(arguments: [false, true])
    func aReaderThatGoesAwayEndsTheFollower(ignoringBrokenPipes: Bool) async throws {
        let clock = ManualClock(now: fixtureStart)
        _ = try await writeQueuedJournal(into: directory.url, count: 2, clock: clock)
        let wrapper = ignoringBrokenPipes ? ["/bin/sh", "-c", "trap '' PIPE; exec \"$0\" \"$@\""] : []
        let inspector = try RunningInspector([directory.url.path, "events", "--follow"], steps: "announce", through: wrapper)
        #expect(inspector.nextLine()?.hasPrefix("SEQ") == true)
        try inspector.step("waiting")
        inspector.closeOutput()
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent,
                                                                   durability: .processCrash))
        defer { outbox.close() }
        _ = try await outbox.enqueue(product(99))
        _ = inspector.remainingErrors()
        let ending = inspector.process.wait()
        #expect(ending == (ignoringBrokenPipes ? .exited(128 + SIGPIPE) : .signalled(SIGPIPE)), "\(ending)")
    }
}

/// Kills a process this test does not own (the tool's reading child) if it is still there after
/// the hang guard, so that a child that outlives its parent fails the test instead of hanging it.
private final class OrphanGuard: Sendable {
    private let state = Mutex<(cancelled: Bool, fired: Bool)>((false, false))

    init(_ pid: pid_t) {
        DispatchQueue.global().asyncAfter(deadline: .now() + hangGuardSeconds) { [self] in
            state.withLock { state in
                guard !state.cancelled else { return }
                state.fired = kill(pid, SIGKILL) == 0
            }
        }
    }

    var fired: Bool { state.withLock { $0.fired } }

    func cancel() {
        state.withLock { $0.cancelled = true }
    }
}
