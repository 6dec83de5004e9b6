import Foundation
import OutboxCore
import OutboxCrypto
import TestHarness
import Testing

@Suite("The record format")
struct RecordCodecTests {
    @Test func everyKindIsSampled() {
        let sampled = Set(Samples.bodies.map(\.kind))
        #expect(sampled == Set(JournalEventKind.allCases))
    }

    @Test(arguments: Samples.events())
    func everyEventRoundTrips(_ event: JournalEvent) throws {
        let record = RecordCodec.encode(event)
        #expect(try RecordCodec.decode(record, seq: event.seq) == event)
    }

    @Test(arguments: Samples.events())
    func aRecordPreparedBeforeItsSeqFinishesAsTheRecordEncodedWithIt(_ event: JournalEvent) throws {
        let prepared = RecordCodec.prepare(operationID: event.operationID, body: event.body)
        // Filled with a pattern first: finishing writes every byte.
        var record = [UInt8](repeating: 0xA5, count: prepared.count)
        record.withUnsafeMutableBytes { prepared.finish(into: $0, seq: event.seq, recordedAt: event.recordedAt, uptime: event.uptime) }
        #expect(try RecordCodec.decode(record, seq: event.seq) == event)
        // The same body under another seq and moment: the checksum follows the header.
        var later = [UInt8](repeating: 0, count: prepared.count)
        let moment = event.recordedAt.addingTimeInterval(61)
        later.withUnsafeMutableBytes { prepared.finish(into: $0, seq: event.seq.next, recordedAt: moment, uptime: nil) }
        let decoded = try RecordCodec.decode(later, seq: event.seq.next)
        #expect(decoded.seq == event.seq.next && decoded.recordedAt == moment && decoded.uptime == nil && decoded.body == event.body)
    }

    @Test func aChecksumCarriedPastABodyChecksummedAloneIsTheChecksumOfBoth() {
        // Lengths around the eight-byte steps of the table-driven loop, and a record's.
        let lengths = [0, 1, 7, 8, 9, 63, 64, 65, 300, 4099]
        for (index, firstCount) in lengths.enumerated() {
            for secondCount in lengths {
                let first = (0..<firstCount).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
                let second = (0..<secondCount).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 5) }
                let head = first.withUnsafeBytes { CRC32C.register(of: $0, from: 0xFFFF_FFFF) }
                let body = second.withUnsafeBytes { CRC32C.register(of: $0, from: 0) }
                let combined = CRC32C.register(afterZeros: secondCount, from: head) ^ body ^ 0xFFFF_FFFF
                #expect(combined == CRC32C.checksum(first + second), "\(firstCount) + \(secondCount) bytes")
            }
        }
    }

    @Test func aChangeWhoseValueIsThePayloadIsWrittenAsAReferenceToIt() throws {
        let request = Samples.request()
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "p-1")
        func record(value: Data) -> JournalEvent {
            JournalEvent(seq: JournalSequence(rawValue: 9), operationID: Samples.id, recordedAt: Date(timeIntervalSince1970: 1_800_000_000),
                         body: .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42",
                                                  changes: [RecordWrite(key: key, value: value, schemaVersion: 1)])))
        }
        var other = request.payload
        other[other.startIndex] ^= 0x01
        let same = record(value: request.payload), differing = record(value: other)
        let sameBytes = RecordCodec.encode(same), differingBytes = RecordCodec.encode(differing)
        // The payload's bytes and their length are not repeated.
        #expect(differingBytes.count - sameBytes.count == request.payload.count + 4)
        #expect(try RecordCodec.decode(sameBytes, seq: same.seq) == same)
        #expect(try RecordCodec.decode(differingBytes, seq: differing.seq) == differing)
        // The reader that skips the request finds the value all the same.
        #expect(try RecordCodec.change(to: key, of: sameBytes, seq: same.seq)?.value == request.payload)
        #expect(try RecordCodec.change(to: key, of: differingBytes, seq: differing.seq)?.value == other)
    }

    @Test func theHeaderIsReadableWithoutTheBody() throws {
        let event = Samples.events()[0]
        let header = try RecordCodec.decodeHeader(RecordCodec.encode(event), seq: event.seq)
        #expect(header.kind == .enqueued)
        #expect(header.seq == event.seq)
        #expect(header.operationID == Samples.id)
        #expect(header.recordedAt == event.recordedAt)
        #expect(header.formatVersion == RecordCodec.formatVersion)
    }

    @Test(arguments: Samples.events())
    func aFlippedByteAnywhereIsCaughtWithItsSeq(_ event: JournalEvent) {
        let record = RecordCodec.encode(event)
        for index in record.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = record
                damaged[index] ^= flip
                do {
                    _ = try RecordCodec.decode(damaged, seq: event.seq)
                    Issue.record("byte \(index) ^ \(flip) of the \(event.kind) record went unnoticed")
                } catch OutboxError.journalCorrupt(let seq, let reason) {
                    #expect(seq == event.seq)
                    #expect(reason.contains("checksum"), "byte \(index): \(reason)")
                } catch {
                    Issue.record("byte \(index): unexpected \(error)")
                }
            }
        }
    }

    @Test(arguments: ["", "a", "Antiseptic 500 ml", "Crème brûlée", "Ñandú 🍮 ok", "ÅÄÖ", String(repeating: "x", count: 300),
                      String(repeating: "é", count: 9)])
    func textOfEveryLengthAndScriptRoundTrips(_ text: String) throws {
        var request = Samples.request()
        request.entityLabel = text
        request.summary = text + text
        let event = JournalEvent(seq: 4, operationID: Samples.id, recordedAt: Samples.moment, body: .enqueued(Samples.enqueued(request)))
        #expect(try RecordCodec.decode(RecordCodec.encode(event), seq: 4) == event)
    }

    /// A string whose bytes are not UTF-8 is refused even when the checksum matches them (as it
    /// would for a record a buggy writer produced): in the short and the long, word-wise checks.
    @Test(arguments: ["Abc", "Antiseptic 500 ml bottle"])
    func invalidUTF8UnderASoundChecksumIsCorrupt(_ label: String) throws {
        var request = Samples.request()
        request.entityLabel = label
        let event = JournalEvent(seq: 4, operationID: Samples.id, recordedAt: Samples.moment, body: .enqueued(Samples.enqueued(request)))
        var record = RecordCodec.encode(event)
        let start = try #require(record.firstRange(of: Array(label.utf8))).lowerBound
        record[start + label.utf8.count - 2] = 0xFF
        let bodyEnd = record.count - 4
        let checksum = CRC32C.checksum(Array(record[..<bodyEnd]))
        record.replaceSubrange(bodyEnd..., with: withUnsafeBytes(of: checksum.bigEndian) { Array($0) })
        #expect {
            try RecordCodec.decode(record, seq: 4)
        } throws: { error in
            guard case OutboxError.journalCorrupt(let seq, let reason) = error else { return false }
            return seq == 4 && reason.contains("UTF-8")
        }
    }

    @Test func theRoutingHintsReadTheHeaderAsWritten() {
        for event in Samples.events() {
            let record = RecordCodec.encode(event)
            record.withUnsafeBytes { bytes in
                #expect(RecordCodec.uncheckedKind(of: bytes) == event.kind)
                #expect(RecordCodec.uncheckedOperationID(of: bytes) == event.operationID)
            }
        }
        [UInt8]().withUnsafeBytes { #expect(RecordCodec.uncheckedKind(of: $0) == nil) }
    }

    @Test func operationIDsOrderAndHashByTheirBytes() {
        let ids = (0..<500).map { _ in OperationID() }
        for (left, right) in zip(ids, ids.dropFirst()) {
            #expect((left < right) == left.bytes.lexicographicallyPrecedes(right.bytes))
            #expect((left == right) == (left.bytes == right.bytes))
        }
        let copy = OperationID(bytes: ids[0].bytes)
        #expect(copy == ids[0] && copy?.hashValue == ids[0].hashValue)
        #expect(Set(ids + ids).count == ids.count)
    }

    @Test func truncatedRecordsAreCorruptNotCrashes() {
        let event = Samples.events()[0]
        let record = RecordCodec.encode(event)
        for length in [0, 1, 10, 43, record.count - 1] {
            #expect(throws: OutboxError.self) { try RecordCodec.decode(Array(record.prefix(length)), seq: event.seq) }
        }
    }

    @Test func aRecordStoredUnderAnotherSeqIsCorrupt() {
        let event = Samples.events()[2]
        let record = RecordCodec.encode(event)
        #expect {
            try RecordCodec.decode(record, seq: 99)
        } throws: { error in
            guard case OutboxError.journalCorrupt(let seq, let reason) = error else { return false }
            return seq == 99 && reason.contains("seq 3")
        }
    }

    @Test func aSoundRecordOfANewerFormatIsRefusedWithBothVersions() {
        let event = Samples.events()[2]
        var record = RecordCodec.encode(event)
        record[0] = 0
        record[1] = UInt8(RecordCodec.formatVersion + 1)
        // A newer engine's record carries its own valid checksum.
        record = Array(record.dropLast(4))
        record += CRC32CVector.checksum(record).bigEndianBytes
        #expect(throws: OutboxError.newerFormat(found: RecordCodec.formatVersion + 1, supported: RecordCodec.formatVersion)) {
            try RecordCodec.decode(record, seq: event.seq)
        }
    }
}

/// Recomputes checksums for tests that forge records.
enum CRC32CVector {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

@Suite("Checksums and hashes")
struct ChecksumTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        // The CRC-32C check value from the catalogue of parametrised CRC algorithms.
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32CVector.checksum(Array("123456789".utf8)) == 0xE306_9283)
    }

    @Test func theSlicedChecksumEqualsTheBitwiseOneAtEveryLength() {
        var generator = SeededRandom(seed: 44)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(CRC32C.checksum(bytes) == CRC32CVector.checksum(bytes), "length \(length)")
        }
    }

    @Test func theTablesAndTheProcessorsInstructionGiveTheSameRegister() {
        // Whichever this processor uses, the other path is held to the bitwise definition too,
        // at every length around the eight-byte steps and from unaligned starts.
        var generator = SeededRandom(seed: 44)
        let bytes = (0..<4200).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for (offset, length) in [(0, 0), (1, 1), (3, 7), (5, 8), (7, 9), (1, 63), (2, 64), (3, 65), (0, 300), (1, 4099)] {
            let slice = Array(bytes[offset..<(offset + length)])
            let start = UInt32.random(in: 0...UInt32.max, using: &generator)
            let table = slice.withUnsafeBytes { CRC32C.tableChecksum($0, start: start) }
            let either = slice.withUnsafeBytes { CRC32C.register(of: $0, from: start) } ^ 0xFFFF_FFFF
            #expect(table == either, "\(length) bytes from offset \(offset), instruction: \(CRC32C.usesInstruction)")
            #expect(slice.withUnsafeBytes { CRC32C.tableChecksum($0, start: 0xFFFF_FFFF) } == CRC32CVector.checksum(slice))
        }
    }

    @Test func sha256MatchesTheFIPSVector() {
        #expect(SHA256Digest(of: Data("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Digest(ofConcatenated: [Array("a".utf8), Array("bc".utf8)]) == SHA256Digest(of: Data("abc".utf8)))
        #expect(SHA256Digest(bytes: [1, 2, 3]) == nil)
    }
}

extension JournalEvent: CustomTestStringConvertible {
    public var testDescription: String { "\(kind)#\(seq)" }
}

@Suite("Moments in records")
struct MomentTests {
    /// Moments as the system clock makes them (whole seconds since 1970 and nanoseconds, as
    /// `Date()` builds them on Linux from `clock_gettime`), drawn from a fixed seed: the same
    /// moments every run, not whichever the machine's clock read.
    @Test func aMomentFromTheSystemClockRoundTripsExactly() throws {
        var generator = SeededRandom(seed: 44)
        var moments: [Date] = (0..<1000).map { _ in
            Date(timeIntervalSinceReferenceDate: Double.random(in: 0...2_000_000_000, using: &generator))
        }
        moments += (0..<1000).map { _ in
            let seconds = Int64.random(in: 1_600_000_000...2_200_000_000, using: &generator)
            let nanoseconds = Int64.random(in: 0..<1_000_000_000, using: &generator)
            return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1_000_000_000)
        }
        for moment in moments {
            let event = JournalEvent(seq: 1, operationID: nil, recordedAt: moment, body: .sessionResumed)
            #expect(try RecordCodec.decode(RecordCodec.encode(event), seq: 1).recordedAt == moment, "\(moment.timeIntervalSince1970)")
        }
    }

    @Test(arguments: [-1e12, 3.2e11, 1.6e16, -4e15])
    func aMomentNoClockWritesIsDamageNotADate(_ seconds: Double) throws {
        // A record whose checksum holds but whose moment is ten thousand years off: the bytes
        // were bent before the checksum was taken, or by a writer that was not this engine.
        let event = JournalEvent(seq: 1, operationID: nil, recordedAt: Date(timeIntervalSinceReferenceDate: seconds), body: .sessionResumed)
        #expect(throws: OutboxError.self) { try RecordCodec.decode(RecordCodec.encode(event), seq: 1) }
        let plausible = JournalEvent(seq: 1, operationID: nil, recordedAt: Date(timeIntervalSinceReferenceDate: -1e9), body: .sessionResumed)
        #expect(try RecordCodec.decode(RecordCodec.encode(plausible), seq: 1).recordedAt == plausible.recordedAt, "1969 is a clock's moment")
    }
}
