import Foundation
import TestHarness
import OutboxStorage
import Synchronization
import Testing

@Suite("The LMDB layer")
struct LMDBEnvironmentTests {
    private func key(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    @Test func returningCommitsAndThrowingAborts() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let table = try environment.openDatabase("table")

        try environment.write { txn in try txn.put(table, key: key(1), value: [1, 2, 3]) }
        struct Refusal: Error {}
        #expect(throws: Refusal.self) {
            try environment.write { txn in
                try txn.put(table, key: key(2), value: [9])
                throw Refusal()
            }
        }
        let (first, second) = try environment.read { txn in
            (try txn.get(table, key: key(1)), try txn.get(table, key: key(2)))
        }
        #expect(first == [1, 2, 3])
        #expect(second == nil)
    }

    @Test func aPathOpensOncePerProcess() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        #expect(throws: LMDBEnvironmentError.alreadyOpen(path: environment.path)) {
            _ = try LMDBEnvironment.open(directory: directory.url)
        }
        #expect(throws: LMDBEnvironmentError.self) {
            _ = try LMDBEnvironment.open(directory: directory.url, options: .init(readOnly: true))
        }
        environment.close()
        let again = try LMDBEnvironment.open(directory: directory.url)
        again.close()
    }

    @Test func aClosedEnvironmentRefusesWork() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        let table = try environment.openDatabase("table")
        environment.close()
        #expect(environment.isClosed)
        #expect(throws: LMDBError.closed) { try environment.read { txn in try txn.count(table) } }
    }

    @Test func appendRefusesAKeyOutOfOrder() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let table = try environment.openDatabase("events")
        try environment.write { txn in
            try txn.put(table, key: key(1), value: [1], flags: .append)
            try txn.put(table, key: key(2), value: [2], flags: .append)
        }
        #expect(throws: LMDBError.keyExists) {
            try environment.write { txn in try txn.put(table, key: key(1), value: [3], flags: .append) }
        }
        #expect(try environment.read { txn in try txn.count(table) } == 2)
    }

    @Test func scansRunForwardAndBackwardFromAnyKey() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        try environment.write { txn in
            for value in stride(from: UInt64(10), through: 50, by: 10) {
                try txn.put(table, key: key(value), value: key(value))
            }
        }
        func collect(from start: UInt64?, reverse: Bool) throws -> [UInt64] {
            try environment.read { txn in
                var seen: [UInt64] = []
                try txn.scan(table, from: start.map(key), reverse: reverse) { key, _ in
                    seen.append(key.reduce(0) { $0 << 8 | UInt64($1) })
                    return .next
                }
                return seen
            }
        }
        #expect(try collect(from: nil, reverse: false) == [10, 20, 30, 40, 50])
        #expect(try collect(from: 25, reverse: false) == [30, 40, 50])
        #expect(try collect(from: 30, reverse: false) == [30, 40, 50])
        #expect(try collect(from: nil, reverse: true) == [50, 40, 30, 20, 10])
        #expect(try collect(from: 25, reverse: true) == [20, 10])
        #expect(try collect(from: 30, reverse: true) == [30, 20, 10])
        #expect(try collect(from: 99, reverse: true) == [50, 40, 30, 20, 10])
        #expect(try collect(from: 5, reverse: true) == [])
        #expect(try collect(from: 99, reverse: false) == [])
    }

    @Test func theMapGrowsUntilItsMaximumThenRefusesWholeTransactions() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(
            directory: directory.url,
            options: .init(initialMapSizeBytes: 64 << 10, maxMapSizeBytes: 1 << 20)
        )
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        let value = [UInt8](repeating: 7, count: 2000)
        var written: UInt64 = 0
        var refusal: (any Error)?
        while refusal == nil {
            do {
                try environment.write { txn in
                    // Two records per transaction: a refused transaction must leave neither.
                    try txn.put(table, key: key(written * 2), value: value)
                    try txn.put(table, key: key(written * 2 + 1), value: value)
                }
                written += 1
            } catch {
                refusal = error
            }
        }
        #expect(refusal as? LMDBError == .mapFull)
        #expect(environment.mapSizeBytes == 1 << 20)
        #expect(written > 100, "the map grew past its initial 64 KiB")
        let count = try environment.read { txn in try txn.count(table) }
        #expect(count == Int(written) * 2)
    }

    @Test func aForcedCommitFailureWritesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let failNext = Atomic<Bool>(false)
        let hook = LMDBFaultHook { call in
            call == .commit && failNext.exchange(false, ordering: .relaxed) ? LMDBError.io : nil
        }
        let environment = try LMDBEnvironment.open(directory: directory.url, options: .init(faultHook: hook))
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        failNext.store(true, ordering: .relaxed)
        #expect(throws: LMDBError.io) {
            try environment.write { txn in try txn.put(table, key: key(1), value: [1]) }
        }
        try environment.write { txn in try txn.put(table, key: key(2), value: [2]) }
        let keys = try environment.read { txn in (try txn.contains(table, key: key(1)), try txn.contains(table, key: key(2))) }
        #expect(keys == (false, true))
    }

    @Test func aReadTransactionKeepsItsSnapshotWhileWritesCommit() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        try environment.write { txn in try txn.put(table, key: key(1), value: [1]) }
        try environment.read { txn in
            #expect(try txn.count(table) == 1)
            // The writer is not blocked by this reader.
            for value in UInt64(2)...20 {
                try environment.write { writeTxn in try writeTxn.put(table, key: key(value), value: [1]) }
            }
            #expect(try txn.count(table) == 1)
            #expect(try txn.get(table, key: key(20)) == nil)
        }
        #expect(try environment.read { txn in try txn.count(table) } == 20)
    }

    @Test func readOnlyOpeningNeedsAnExistingEnvironment() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: LMDBError.noSuchFile) {
            _ = try LMDBEnvironment.open(directory: directory.url, options: .init(readOnly: true))
        }
        let writer = try LMDBEnvironment.open(directory: directory.url)
        let table = try writer.openDatabase("table")
        try writer.write { txn in try txn.put(table, key: key(1), value: [42]) }
        writer.close()
        let reader = try LMDBEnvironment.open(directory: directory.url, options: .init(readOnly: true))
        defer { reader.close() }
        #expect(throws: LMDBEnvironmentError.noSuchDatabase(name: "other")) { _ = try reader.openDatabase("other") }
        let readTable = try reader.openDatabase("table")
        #expect(try reader.read { txn in try txn.get(readTable, key: key(1)) } == [42])
    }

    @Test func infoReportsTheMapAndItsUse() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url, options: .init(initialMapSizeBytes: 1 << 20))
        defer { environment.close() }
        let table = try environment.openDatabase("table")
        let before = try environment.info()
        try environment.write { txn in
            for value in UInt64(0)..<100 { try txn.put(table, key: key(value), value: [UInt8](repeating: 1, count: 500)) }
        }
        let after = try environment.info()
        #expect(after.mapSizeBytes == 1 << 20)
        #expect(after.usedBytes > before.usedBytes + 100 * 500 / 2)
        #expect(after.lastTransactionID > before.lastTransactionID)
    }
}
