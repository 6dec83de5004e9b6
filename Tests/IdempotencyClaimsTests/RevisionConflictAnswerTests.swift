import Foundation
import IdempotencyClaims
import OutboxWire
import Testing

/// A stale edit's 412 is built once, for every server of the package (the loopback test server,
/// `InMemoryServer`, the simulation's model server).
@Suite("A stale edit's answer")
struct RevisionConflictAnswerTests {
    @Test func aStaleEditIsAnswered412WithItsETagRevisionAndCurrentRecord() throws {
        let answer = ClaimResponse.revisionConflict(revision: 7, current: Data(#"{"name":"Gauze","price":"2.25"}"#.utf8),
                                                    message: "changed \"elsewhere\"")
        #expect(answer.status == 412)
        #expect(answer.headers.contains(ClaimResponse.Header(name: WireHeader.eTag, value: "\"7\"")))
        #expect(answer.headers.contains(ClaimResponse.Header(name: "Content-Type", value: "application/json")))
        let body = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
        #expect(body[WireBodyField.code] as? String == WireErrorCode.revisionConflict)
        #expect(body[WireBodyField.message] as? String == "changed \"elsewhere\"")
        #expect(body[WireBodyField.serverRevision] as? String == "7")
        #expect((body[WireBodyField.current] as? [String: Any])?["price"] as? String == "2.25")
    }

    @Test func aDeletedRecordsCurrentIsNull() throws {
        let answer = ClaimResponse.revisionConflict(revision: 9, current: nil, message: "deleted")
        let body = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
        #expect(body[WireBodyField.current] is NSNull)
        #expect(body[WireBodyField.serverRevision] as? String == "9")
    }
}
