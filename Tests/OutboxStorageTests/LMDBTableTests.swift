import Foundation
import TestHarness
import OutboxStorage
import Testing

@Suite("Typed tables")
struct LMDBTableTests {
    @Test func tablesSharingADatabaseNeverSeeEachOthersEntries() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let database = try environment.openDatabase("shared")
        let numbers = LMDBTable<BigEndianUInt64, NameCodec>(database, prefix: [1])
        let counts = LMDBTable<NameCodec, BigEndianInt64>(database, prefix: [2])
        try environment.write { txn in
            for n: UInt64 in [5, 1, 300, 0xFFFF_FFFF_FFFF_FFFF] { try txn.put(numbers, n, "n\(n)") }
            try txn.put(counts, "a", -3)
            try txn.put(counts, "b", 7)
        }
        try environment.read { txn in
            #expect(try txn.get(numbers, 300) == "n300")
            #expect(try txn.get(numbers, 2) == nil)
            #expect(try txn.get(counts, "a") == -3)
            var seen: [UInt64] = []
            try txn.scan(numbers) { entry in
                seen.append(try entry.key())
                return .next
            }
            #expect(seen == [1, 5, 300, 0xFFFF_FFFF_FFFF_FFFF])
            seen = []
            try txn.scan(numbers, reverse: true) { entry in
                seen.append(try entry.key())
                return .next
            }
            #expect(seen == [0xFFFF_FFFF_FFFF_FFFF, 300, 5, 1])
            #expect(try txn.last(numbers)?.key == 0xFFFF_FFFF_FFFF_FFFF)
            #expect(try txn.last(counts)?.value == 7)
            seen = []
            try txn.scan(numbers, from: BigEndianUInt64.bytes(5)) { entry in
                seen.append(try entry.key())
                return .next
            }
            #expect(seen == [5, 300, 0xFFFF_FFFF_FFFF_FFFF])
            seen = []
            try txn.scan(numbers, from: BigEndianUInt64.bytes(299), reverse: true) { entry in
                seen.append(try entry.key())
                return .next
            }
            #expect(seen == [5, 1])
        }
    }

    @Test func aLeadingPartBoundsTheScanBothWays() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let database = try environment.openDatabase("lanes")
        let lanes = LMDBTable<RawBytes, RawBytes>(database, prefix: [9])
        // Keys right at the edges of the range [0x41 ...]: below, inside, and the successor 0x42.
        let keys: [[UInt8]] = [[0x40, 0xFF], [0x41], [0x41, 0x00], [0x41, 0xFF, 0xFF], [0x42], [0x42, 0x00]]
        try environment.write { txn in
            for key in keys { try txn.put(lanes, key, key) }
            try txn.put(LMDBTable<RawBytes, RawBytes>(database, prefix: [10]), [0x41], [0])
        }
        try environment.read { txn in
            var forward: [[UInt8]] = []
            try txn.scan(lanes, leading: [0x41]) { entry in
                forward.append(try entry.key())
                return .next
            }
            #expect(forward == [[0x41], [0x41, 0x00], [0x41, 0xFF, 0xFF]])
            var backward: [[UInt8]] = []
            try txn.scan(lanes, leading: [0x41], reverse: true) { entry in
                backward.append(try entry.key())
                return .next
            }
            #expect(backward == forward.reversed())
            var last: [[UInt8]] = []
            try txn.scan(lanes, leading: [0x42], reverse: true) { entry in
                last.append(try entry.value())
                return .next
            }
            #expect(last == [[0x42, 0x00], [0x42]])
        }
    }

    @Test func aValueThatDoesNotDecodeThrowsNamingTheTable() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try LMDBEnvironment.open(directory: directory.url)
        defer { environment.close() }
        let database = try environment.openDatabase("counts")
        try environment.write { txn in try txn.put(database, key: Array("x".utf8), value: [1, 2, 3]) }
        let counts = LMDBTable<NameCodec, BigEndianInt64>(database)
        #expect {
            _ = try environment.read { txn in try txn.get(counts, "x") }
        } throws: { error in
            (error as? LMDBCodecError)?.reason.contains("database 'counts'") == true
        }
    }
}

@Suite("LMDB errors")
struct LMDBErrorTests {
    @Test func aCodeMatchesAsACatchPattern() {
        func classify(_ error: any Error) -> String {
            do {
                throw error
            } catch LMDBError.mapFull {
                return "map full"
            } catch LMDBError.noSpace {
                return "disk full"
            } catch {
                return "other"
            }
        }
        #expect(classify(LMDBError.mapFull) == "map full")
        #expect(classify(LMDBError.noSpace) == "disk full")
        #expect(classify(LMDBError.io) == "other")
        #expect(classify(LMDBCodecError(reason: "x")) == "other")
    }
}
