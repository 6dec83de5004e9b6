import Foundation
import OutboxStorage
import Synchronization
import TestHarness
import Testing

/// Every LMDB call the fault hook was asked about, in order; fails the next one of `failing`.
private final class CallLog: Sendable {
    private let calls = Mutex<[LMDBCall]>([])
    private let failing = Mutex<(call: LMDBCall, error: LMDBError)?>(nil)

    var hook: LMDBFaultHook {
        LMDBFaultHook { [self] call in
            calls.withLock { $0.append(call) }
            return failing.withLock { armed in
                guard let fault = armed, fault.call == call else { return nil }
                armed = nil
                return fault.error
            }
        }
    }

    /// The commits asked about since the last call, of either kind.
    func takeCommits() -> [LMDBCall] {
        calls.withLock { calls in
            defer { calls.removeAll() }
            return calls.filter { $0 == .commit || $0 == .commitWithoutFlush }
        }
    }

    func fail(_ call: LMDBCall, with error: LMDBError) {
        failing.withLock { $0 = (call, error) }
    }
}

@Suite("Commits without a flush")
struct LMDBUnflushedCommitTests {
    private func key(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Runs `body` with a fresh environment of `options`, its calls logged, and one table in it.
    private func withTable(_ options: LMDBEnvironment.Options, _ body: (LMDBEnvironment, LMDBDatabase, CallLog) throws -> Void) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let log = CallLog()
        var options = options
        options.faultHook = log.hook
        let environment = try LMDBEnvironment.open(directory: directory.url, options: options)
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        try environment.sync()
        _ = log.takeCommits()
        try body(environment, table, log)
    }

    /// (flushes every commit?) -> the commit an unflushed write asks about, and whether a
    /// flushing write after it leaves anything unflushed.
    @Test(arguments: [
        (true, LMDBCall.commitWithoutFlush, false),
        (false, LMDBCall.commit, true),
    ])
    func anUnflushedCommitWaitsForTheNextFlush(_ syncOnCommit: Bool, _ asked: LMDBCall, _ unflushedAfterAFlushingWrite: Bool) throws {
        try withTable(.init(syncOnCommit: syncOnCommit)) { environment, table, log in
            #expect(!environment.hasUnflushedCommits)

            try environment.write(flushing: false) { txn in try txn.put(table, key: key(1), value: [1]) }
            #expect(log.takeCommits() == [asked])
            #expect(environment.hasUnflushedCommits)
            #expect(try environment.read { txn in try txn.get(table, key: key(1)) } == [1])

            // The next flushing commit writes the whole file out: the unflushed one with it.
            try environment.write { txn in try txn.put(table, key: key(2), value: [2]) }
            #expect(log.takeCommits() == [.commit])
            #expect(environment.hasUnflushedCommits == unflushedAfterAFlushingWrite)
            try environment.sync()
            #expect(!environment.hasUnflushedCommits)
        }
    }

    @Test(arguments: [LMDBError.io, .noSpace, .mapFull])
    func aFailedUnflushedCommitWritesNothingAndTheNextCommitsFlush(_ failure: LMDBError) throws {
        try withTable(.init(initialMapSizeBytes: 64 << 10, maxMapSizeBytes: 64 << 10)) { environment, table, log in
            log.fail(.commitWithoutFlush, with: failure)
            #expect(throws: failure) {
                try environment.write(flushing: false) { txn in try txn.put(table, key: key(1), value: [1]) }
            }
            #expect(!environment.hasUnflushedCommits, "nothing was committed")
            _ = log.takeCommits()
            try environment.write { txn in try txn.put(table, key: key(2), value: [2]) }
            try environment.write(flushing: false) { txn in try txn.put(table, key: key(3), value: [3]) }
            #expect(log.takeCommits() == [.commit, .commitWithoutFlush])
            let stored = try environment.read { txn in try (1...3).map { try txn.contains(table, key: key(UInt64($0))) } }
            #expect(stored == [false, true, true])
        }
    }

    @Test func anUnflushedWriteGrowsTheMapAndRunsItsBodyAgain() throws {
        try withTable(.init(initialMapSizeBytes: 64 << 10, maxMapSizeBytes: 4 << 20)) { environment, table, log in
            var runs = 0
            // 400 KiB in one transaction: more than the map holds at first.
            try environment.write(flushing: false) { txn in
                runs += 1
                for value in UInt64(0)..<200 { try txn.put(table, key: key(value), value: [UInt8](repeating: 7, count: 2000)) }
            }
            #expect(runs > 1, "the full map was grown and the body run again")
            #expect(environment.mapSizeBytes > 64 << 10)
            #expect(log.takeCommits() == [.commitWithoutFlush], "one commit, of the kind asked for")
            #expect(try environment.read { txn in try txn.count(table) } == 200)
        }
    }

    @Test func readersOfOtherThreadsSeeEachUnflushedCommitWhole() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in UInt64(0)..<200 {
                    // Two records a transaction: a reader sees both or neither.
                    try environment.write(flushing: !round.isMultiple(of: 3)) { txn in
                        try txn.put(table, key: key(round * 2), value: [1])
                        try txn.put(table, key: key(round * 2 + 1), value: [1])
                    }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<200 {
                        let count = try environment.read { txn in try txn.count(table) }
                        #expect(count.isMultiple(of: 2))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try environment.read { txn in try txn.count(table) } == 400)
    }
}
