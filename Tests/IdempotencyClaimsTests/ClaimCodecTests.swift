import Foundation
@testable import IdempotencyClaims
import OutboxCrypto
import Testing

@Suite("The claim codec")
struct ClaimCodecTests {
    let fingerprint = SHA256Digest(of: Data("body".utf8))
    let takenAt = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345)

    @Test func anInProgressClaimRoundTripsExactly() throws {
        let record = ClaimRecord(
            fingerprint: fingerprint, takenAt: takenAt,
            state: .inProgress(token: ClaimToken(), leaseExpiresAt: takenAt.addingTimeInterval(300.000_1)))
        #expect(try ClaimCodec.decode(ClaimCodec.encode(record)) == record)
    }

    @Test func aCompletedClaimRoundTripsItsResponseByteForByte() throws {
        let body = Data([0, 0xff, 0x7b]) + Data(#"{"name":"Zoë 👩🏽‍🍳"}"#.utf8)
        let record = ClaimRecord(
            fingerprint: fingerprint, takenAt: takenAt,
            state: .completed(
                response: ClaimResponse(
                    status: 202,
                    headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Location", value: "/a/ü")],
                    body: body),
                completedAt: takenAt.addingTimeInterval(0.25)))
        #expect(try ClaimCodec.decode(ClaimCodec.encode(record)) == record)
    }

    @Test func everyTruncationOfARecordThrows() throws {
        let record = ClaimRecord(
            fingerprint: fingerprint, takenAt: takenAt,
            state: .completed(response: ClaimResponse(status: 201, headers: [.init(name: "A", value: "b")], body: Data("x".utf8)), completedAt: takenAt))
        let bytes = try ClaimCodec.encode(record)
        for length in 0..<bytes.count {
            #expect(throws: ClaimCodingError.self) { try ClaimCodec.decode(bytes.prefix(length)) }
        }
        #expect(throws: ClaimCodingError.self) { try ClaimCodec.decode(bytes + [0]) }
    }

    @Test func anUnknownVersionOrStateIsRefused() throws {
        var bytes = try ClaimCodec.encode(ClaimRecord(
            fingerprint: fingerprint, takenAt: takenAt,
            state: .inProgress(token: ClaimToken(), leaseExpiresAt: takenAt)))
        bytes[0] = 2
        #expect(throws: ClaimCodingError.self) { try ClaimCodec.decode(bytes) }
        bytes[0] = 1
        bytes[1 + 32 + 8] = 7
        #expect(throws: ClaimCodingError.self) { try ClaimCodec.decode(bytes) }
    }

    @Test func keysRoundTripAndKeepTheirPartsApart() throws {
        let a = ClaimID(scope: ClaimScope(businessID: "ab", operationType: "c"), key: try #require(IdempotencyKey(rawValue: "k")))
        let b = ClaimID(scope: ClaimScope(businessID: "a", operationType: "bc"), key: try #require(IdempotencyKey(rawValue: "k")))
        #expect(try ClaimCodec.key(for: a) != ClaimCodec.key(for: b))
        #expect(try ClaimCodec.id(fromKey: ClaimCodec.key(for: a)) == a)
        #expect(try ClaimCodec.id(fromKey: ClaimCodec.key(for: b)) == b)
    }
}

@Suite("Claim keys in LMDB")
struct ClaimKeyLimitTests {
    @Test func aKeyLongerThanLMDBHoldsIsAnErrorAndTheStoreAnswersNothingHalfDone() throws {
        let key = try #require(IdempotencyKey(rawValue: String(repeating: "k", count: IdempotencyKey.maxBytes)))
        let fits = ClaimID(scope: ClaimScope(businessID: String(repeating: "b", count: 511 - 6 - 14 - 255), operationType: "product.create"), key: key)
        #expect(try ClaimCodec.key(for: fits).count == 511)
        let over = ClaimID(scope: ClaimScope(businessID: String(repeating: "b", count: 511 - 6 - 14 - 255 + 1), operationType: "product.create"), key: key)
        #expect(throws: ClaimCodingError.self) { try ClaimCodec.key(for: over) }
        // Through the LMDB store: thrown (the server's 500), never LMDB's misuse trap.
        let harness = try ClaimsHarness.make(.lmdb)
        #expect(throws: ClaimCodingError.self) { try harness.handle(key: key.rawValue, scope: over.scope) }
        #expect(try harness.totalEffects() == 0)
    }
}
