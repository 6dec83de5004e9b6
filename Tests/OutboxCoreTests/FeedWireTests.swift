import Foundation
import OutboxCrypto
import OutboxWire
import TestHarness
import Testing

@Suite("Feed positions and digests on the wire")
struct FeedWireTests {
    @Test(arguments: ["0-0-0", "3-41-0", "1-18446744073709551615-7", "18446744073709551615-0-18446744073709551615"])
    func aPositionRoundTripsThroughItsText(_ text: String) throws {
        let position = try FeedPosition(text: text)
        #expect(position.text == text)
        #expect(try FeedPosition(text: position.text) == position)
    }

    @Test(arguments: [
        ("", "not three numbers"), ("3-41", "not three numbers"), ("3-41-0-1", "not three numbers"),
        ("03-41-0", "its epoch is not a decimal"), ("3--0", "its major is not a decimal"), ("3-41-", "its minor is not a decimal"),
        ("+3-41-0", "its epoch is not a decimal"), ("3-4x-0", "its major is not a decimal"), ("3-41- 0", "its minor is not a decimal"),
        ("18446744073709551616-0-0", "its epoch is not a decimal"), ("٣-41-0", "its epoch is not a decimal"),
    ])
    func aTextThatIsNotAPositionIsRefusedSayingWhy(_ text: String, _ reason: String) {
        #expect {
            try FeedPosition(text: text)
        } throws: { error in
            guard let problem = error as? FeedPosition.Problem else { return false }
            return problem.description.contains(reason) && problem.description.contains("'\(text)'")
        }
    }

    @Test func positionsOrderByEpochThenMajorThenMinor() {
        let ordered = [
            FeedPosition(epoch: 1, major: 9, minor: 9), FeedPosition(epoch: 2, major: 0, minor: 0),
            FeedPosition(epoch: 2, major: 0, minor: 5), FeedPosition(epoch: 2, major: 1, minor: 0),
            FeedPosition(epoch: 10, major: 0, minor: 0),
        ]
        var generator = SeededRandom(seed: 44)
        for _ in 0..<20 {
            let shuffled = ordered.shuffled(using: &generator)
            #expect(shuffled.sorted() == ordered, "\(shuffled)")
        }
        // Numbers, not text: "10-0-0" sorts after "2-..." although it is smaller as text.
        #expect(FeedPosition(epoch: 10, major: 0, minor: 0) > FeedPosition(epoch: 2, major: 99, minor: 0))
        #expect(FeedPosition.start(of: 4) < FeedPosition(epoch: 4, major: 0, minor: 1))
    }

    @Test func thePageDigestIsTheSHA256OfTheLaidOutFields() {
        let record = Data(#"{"id":"p1","price":14}"#.utf8)
        let changes = [
            FeedDigest.Change(type: "product", id: "p1", revision: 19, recordHash: SHA256Digest(of: record)),
            FeedDigest.Change(type: "product", id: "p2", revision: 4, recordHash: nil),
        ]
        // The same layout written out by hand: a text as a u32 length then its bytes, a u64, a tag.
        func text(_ string: String) -> [UInt8] { withUnsafeBytes(of: UInt32(string.utf8.count).bigEndian, Array.init) + Array(string.utf8) }
        func u64(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        let bytes = text("product") + text("p1") + u64(19) + [1] + SHA256Digest(of: record).bytes
            + text("product") + text("p2") + u64(4) + [0]
        #expect(FeedDigest.page(changes) == SHA256Digest(of: bytes))
        #expect(FeedDigest.page([]) == SHA256Digest(of: Data()))
    }

    @Test func thePageDigestChangesWithOrderBytesRevisionsAndTombstones() {
        let value = SHA256Digest(of: Data("{}".utf8))
        let a = FeedDigest.Change(type: "product", id: "caf\u{E9}", revision: 1, recordHash: value)
        let b = FeedDigest.Change(type: "product", id: "p2", revision: 2, recordHash: value)
        let page = FeedDigest.page([a, b])
        #expect(FeedDigest.page([b, a]) != page)
        // The same id in another normalization is another id.
        var decomposed = a
        decomposed.id = "cafe\u{301}"
        #expect(FeedDigest.page([decomposed, b]) != page)
        var later = a
        later.revision = 3
        #expect(FeedDigest.page([later, b]) != page)
        var tombstone = a
        tombstone.recordHash = nil
        #expect(FeedDigest.page([tombstone, b]) != page)
        // The fields are kept apart: moving a byte from the type to the id is another page.
        let shifted = FeedDigest.Change(type: "produc", id: "tcaf\u{E9}", revision: 1, recordHash: value)
        #expect(FeedDigest.page([shifted, b]) != page)
    }

    @Test func theSummaryDigestIsOverIdsInByteOrderAndTheirRevisions() {
        let records: [(id: String, revision: UInt64)] = [("p2", 7), ("P1", 3), ("\u{E9}", 1), ("p10", 2)]
        let digest = FeedDigest.summary(records)
        #expect(FeedDigest.summary(records.reversed()) == digest)
        // Byte order: "P1" < "p10" < "p2" < "é" (0xC3 0xA9).
        func entry(_ id: String, _ revision: UInt64) -> [UInt8] {
            withUnsafeBytes(of: UInt32(id.utf8.count).bigEndian, Array.init) + Array(id.utf8) + withUnsafeBytes(of: revision.bigEndian, Array.init)
        }
        #expect(digest == SHA256Digest(of: entry("P1", 3) + entry("p10", 2) + entry("p2", 7) + entry("\u{E9}", 1)))
        let oneNewer: [(id: String, revision: UInt64)] = [("p2", 8), ("P1", 3), ("\u{E9}", 1), ("p10", 2)]
        #expect(FeedDigest.summary(oneNewer) != digest)
        #expect(FeedDigest.summary([(id: String, revision: UInt64)]()) == SHA256Digest(of: Data()))
    }
}
