import Foundation
import TestHarness
import Testing

/// The tests' own process launcher: `posix_spawn`, pipes, `waitpid`.
@Suite("A spawned process", .timeLimit(.minutes(10)))
struct SpawnedProcessTests {
    @Test func bothStreamsAndTheExitStatusComeBack() throws {
        let finished = try SpawnedProcess.run("/bin/sh", ["-c", "printf 'out line\\n'; printf 'error line\\n' >&2; exit 7"])
        #expect(finished.termination == .exited(7))
        #expect(finished.outputText == "out line\n")
        #expect(finished.errorText == "error line\n")
    }

    @Test func aChildKilledByASignalReportsTheSignal() throws {
        let finished = try SpawnedProcess.run("/bin/sh", ["-c", "kill -TERM $$"])
        #expect(finished.termination == .signalled(SIGTERM))
    }

    @Test func aKilledChildEndsOfSIGKILLAndCannotBeKilledTwice() throws {
        let child = try SpawnedProcess("/bin/cat", [], input: .pipe, output: .pipe)
        try child.input!.write("echoed\n")
        var lines = LineReader(child.output!)
        #expect(lines.next() == "echoed")
        #expect(child.poll() == nil, "still reading its input")
        #expect(child.kill())
        #expect(child.wait() == .signalled(SIGKILL))
        #expect(!child.kill(), "a reaped child is never signalled")
        #expect(child.wait() == .signalled(SIGKILL), "the end is remembered")
    }

    @Test func writingToAChildThatHasEndedThrowsInsteadOfRaisingSIGPIPE() throws {
        let child = try SpawnedProcess("/bin/sh", ["-c", "exit 0"], input: .pipe)
        #expect(child.wait() == .exited(0))
        #expect(throws: WriteEnd.Closed.self) { try child.input!.write(Array(repeating: 1, count: 1 << 20)) }
        child.input!.close()
        #expect(throws: WriteEnd.Closed.self) { try child.input!.write("after close") }
    }

    @Test func moreThanAPipeFullOnBothStreamsDoesNotDeadlock() throws {
        // 3 MiB on standard error before a byte of standard output, then 2 MiB of it: a reader
        // that waited on one stream alone would leave the child blocked on the other.
        let finished = try SpawnedProcess.run("/bin/sh", ["-c", "head -c 3145728 /dev/zero >&2; head -c 2097152 /dev/zero; exit 3"])
        #expect(finished.termination == .exited(3))
        #expect(finished.errors.count == 3 << 20)
        #expect(finished.output.count == 2 << 20)
        #expect(finished.output.allSatisfy { $0 == 0 })
    }

    @Test func theChildGetsTheGivenEnvironmentAndDirectory() throws {
        let finished = try SpawnedProcess.run(
            "/bin/sh", ["-c", "printf '%s|%s|%s' \"$GREETING\" \"${HOME-unset}\" \"$(pwd -P)\""],
            environment: ["GREETING": "hello there", "PATH": "/usr/bin:/bin"], workingDirectory: "/")
        #expect(finished.termination == .exited(0), "\(finished.errorText)")
        #expect(finished.outputText == "hello there|unset|/")
    }

    @Test func noOtherDescriptorOfThisProcessReachesTheChild() throws {
        // A descriptor opened without close-on-exec, numbered high enough to be seen.
        let stray = open("/dev/null", O_RDONLY)
        try #require(stray >= 0)
        let high = fcntl(stray, F_DUPFD, 200)
        close(stray)
        try #require(high >= 200)
        defer { close(high) }
        let finished = try SpawnedProcess.run("/bin/sh", ["-c", "ls /dev/fd/"])
        #expect(finished.termination == .exited(0), "\(finished.errorText)")
        let open = finished.outputText.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        #expect(open.contains(1), "the listing shows the child's descriptors: \(open)")
        #expect(!open.contains(high), "\(open)")
    }

    @Test func aMissingExecutableIsAClearError() {
        #expect {
            _ = try SpawnedProcess("/nonexistent/outbox-nothing", [])
        } throws: { error in
            let description = String(describing: error)
            return description.contains("/nonexistent/outbox-nothing") && description.contains("posix_spawn")
        }
    }

    @Test func aScheduledSignalEndsAHang() throws {
        let hung = try SpawnedProcess("/bin/cat", [], input: .pipe, output: .null)
        let deadline = hung.signal(SIGKILL, after: 0)
        #expect(hung.wait() == .signalled(SIGKILL))
        #expect(deadline.fired)
    }

    @Test func sixtyFourLaunchesAtOnceEachGetTheirOwnOutputAndEnd() async throws {
        let results = try await withThrowingTaskGroup(of: (Int, SpawnedProcess.Finished, SpawnedProcess.Termination).self) { group in
            for index in 0..<64 {
                group.addTask {
                    // Each launch on a thread of its own, so that all of them overlap.
                    try await onThread {
                        let echoed = try SpawnedProcess.run("/bin/sh", ["-c", "printf %s \"$1\"", "sh", String(index)])
                        let trueEnd = try SpawnedProcess("/bin/true", [], input: .null, output: .null, errors: .null).wait()
                        return (index, echoed, trueEnd)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 64)
        for (index, echoed, trueEnd) in results {
            #expect(echoed.termination == .exited(0))
            #expect(echoed.outputText == String(index))
            #expect(trueEnd == .exited(0))
        }
    }
}

/// Runs blocking work on a thread of its own, off Swift concurrency's few threads.
private func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// The test process itself meets a reader that went away as an error, never as the signal that
/// would end the whole run.
@Suite("The test process")
struct TestProcessTests {
    @Test func aWriteToAPipeWhoseReaderIsGoneFailsWithEPIPE() {
        #expect(TestProcess.ignoresBrokenPipes, "set as the process loaded")
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        var byte: UInt8 = 1
        let written = write(ends[1], &byte, 1)
        let failure = errno
        close(ends[1])
        #expect(written == -1 && failure == EPIPE, "the process is still here to see it")
    }
}
