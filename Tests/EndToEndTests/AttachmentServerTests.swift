import Foundation
import Outbox
import OutboxAudit
import OutboxCrypto
import PostgresClaimStore
import TestHarness
import Testing

/// The test server's upload endpoints against a real OpenStack Swift store (the tests' throwaway
/// one) and real PostgreSQL claims: a grant's TempURLs take the segments' `PUT`s straight to the
/// store, and stop working once their expiry passed; the completion writes the Static
/// Large Object and answers the SHA-256 of what the store holds; grants and completions are
/// claimed by their keys, so a repeat answers the same.
@Suite("Upload endpoints on Swift and PostgreSQL", .timeLimit(.minutes(10)))
struct AttachmentServerTests {
    /// The segments of `bytes` at the server's segment size.
    static func segments(_ bytes: Data, _ size: Int64) -> [Data] {
        stride(from: 0, to: max(bytes.count, 1), by: Int(size)).map { bytes.subdata(in: $0..<min($0 + Int(size), bytes.count)) }
    }

    static func urls(_ grant: UploadServer.Answer) -> [URL] {
        (grant.json["segments"] as? [[String: Any]] ?? []).map { URL(string: $0["url"] as? String ?? "")! }
    }

    @Test func aGrantsURLsTakeTheSegmentsAndTheCompletionAnswersTheStoresHashOnce() async throws {
        let server = try UploadServer()
        let id = AttachmentID()
        let bytes = seededBytes(700 << 10, seed: 11)
        let grantKey = id.requestKey("grant-1-0")
        let body = UploadServer.grantBody(id: id, bytes: bytes)
        // The first answer is lost on the way back: the grant was claimed all the same.
        let fault = try await server.server("POST", "/_control/faults", #"[{"fault":"drop_after_commit","endpoint":"/uploads"}]"#)
        #expect(fault.status == 200)
        await #expect(throws: (any Error).self) { try await server.server("POST", "/uploads", key: grantKey, body) }
        let grant = try await server.server("POST", "/uploads", key: grantKey, body)
        #expect(grant.status == 200, "\(grant.text)")
        #expect(grant.header("Idempotent-Replayed") == "true", "the repeat is the claim's answer")
        #expect(grant.json["segment_size"] as? Int == 256 << 10)
        #expect(grant.json["expires_in"] as? Double == 900)
        let urls = Self.urls(grant)
        let pieces = Self.segments(bytes, server.segmentBytes)
        #expect(urls.count == 3 && pieces.count == 3)
        #expect(urls.enumerated().allSatisfy { $0.element.path.hasSuffix("/\(server.container)/\(id)/segments/\($0.offset + 1)") })
        #expect(urls.allSatisfy { $0.query?.contains("temp_url_sig=") == true && $0.query?.contains("temp_url_expires=") == true })
        #expect(!grant.text.contains(server.store.authToken), "the token never leaves the server")

        // Each segment straight to the store, with no token: the URL is the credential.
        var landed: [[String: Any]] = []
        for (index, (url, piece)) in zip(urls, pieces).enumerated() {
            let put = try await server.request("PUT", url, body: piece)
            #expect(put.status == 201, "segment \(index + 1): \(put.status) \(put.text)")
            let etag = try #require(put.header("Etag")).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            landed.append(["number": index + 1, "etag": etag, "size": piece.count])
        }
        let completeKey = id.requestKey("complete-0")
        let completion = String(decoding: try JSONSerialization.data(withJSONObject: ["segments": landed], options: [.sortedKeys]), as: UTF8.self)
        let completed = try await server.server("POST", "/uploads/\(id)/complete", key: completeKey, completion)
        #expect(completed.status == 200, "\(completed.text)")
        #expect(completed.json["object"] as? String == "\(server.container)/\(id)")
        #expect(completed.json["size"] as? Int == bytes.count)
        #expect(completed.json["sha256"] as? String == SHA256Digest(of: bytes).hex)

        // The object in the store is the file, as a Static Large Object of the segments.
        let object = try await server.storeRequest("GET", id.description)
        #expect(object.status == 200)
        #expect(object.body == bytes)
        #expect(object.header("X-Static-Large-Object")?.lowercased() == "true")

        // A repeat of each answers the same bytes, and the object was completed once.
        let again = try await server.server("POST", "/uploads/\(id)/complete", key: completeKey, completion)
        #expect(again.status == 200 && again.body == completed.body && again.header("Idempotent-Replayed") == "true")
        let grantAgain = try await server.server("POST", "/uploads", key: grantKey, body)
        #expect(grantAgain.body == grant.body)
        #expect(try await server.applied() == [completeKey: 1])
        // Claimed in PostgreSQL, under their own operation types.
        #expect(try server.claims() == ["upload.complete \(completeKey) completed 200", "upload.grant \(grantKey) completed 200"])
        // The same key with another body is the claims' conflict.
        let other = try await server.server("POST", "/uploads", key: grantKey, UploadServer.grantBody(id: id, bytes: Data("other".utf8)))
        #expect(other.status == 409 && other.json["code"] as? String == "idempotency_conflict")
    }

    @Test func aGrantSignedExpiredIsRefusedByTheStoreAtOnceAndTheNextIsLive() async throws {
        let server = try UploadServer()
        let settings = try await server.setUploads(#"{"grant_lifetime_seconds":60,"next_grant_expired":true}"#)
        #expect(settings["grant_lifetime_seconds"] as? Double == 60)
        #expect(settings["next_grant_expired"] as? Bool == true)
        let id = AttachmentID()
        let bytes = seededBytes(1000, seed: 12)
        // The next grant states its lifetime, and its URLs are signed to expire in the past: the
        // store, which judges the expiry by its own clock, refuses them from the first request.
        let grant = try await server.server("POST", "/uploads", key: id.requestKey("grant-1-0"), UploadServer.grantBody(id: id, bytes: bytes))
        #expect(grant.status == 200)
        #expect(grant.json["expires_in"] as? Double == 60)
        let url = try #require(Self.urls(grant).first)
        let expires = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "temp_url_expires" }?.value
        #expect(try #require(expires.flatMap { Int64($0) }) < Int64(Date().timeIntervalSince1970), "\(url)")
        #expect(try await server.request("HEAD", url).status == 401)
        let put = try await server.request("PUT", url, body: bytes)
        #expect(put.status == 401, "\(put.status) \(put.text)")
        #expect(try await server.storeRequest("HEAD", "\(id)/segments/1").status == 404, "nothing landed")
        // That grant only: a grant asked for afterwards (a new key) is live, its URL finds no
        // object yet and takes the segment.
        #expect(try await server.server("GET", "/_control/uploads").json["next_grant_expired"] as? Bool == false)
        let fresh = try await server.server("POST", "/uploads", key: id.requestKey("grant-2-0"), UploadServer.grantBody(id: id, bytes: bytes))
        let freshURL = try #require(Self.urls(fresh).first)
        #expect(try await server.request("HEAD", freshURL).status == 404, "a live URL finds no object yet")
        let again = try await server.request("PUT", freshURL, body: bytes)
        #expect(again.status == 201)
    }

    @Test func refusalsNameWhyAndAFailureOfNowKeepsNoClaim() async throws {
        let server = try UploadServer(maxUploadBytes: 1 << 20)
        let id = AttachmentID()
        let bytes = seededBytes(2000, seed: 13)
        let body = UploadServer.grantBody(id: id, bytes: bytes)

        // The control API refuses grants: the member reads the message.
        try await server.setUploads(#"{"refuse_grants":{"status":403,"message":"Photos may be at most 5 MB."}}"#)
        let refused = try await server.server("POST", "/uploads", key: id.requestKey("grant-1-0"), body)
        #expect(refused.status == 403)
        #expect(refused.json["code"] as? String == "upload_refused")
        #expect(refused.json["message"] as? String == "Photos may be at most 5 MB.")
        // A 5xx is a failure of now: no claim, so the same key is granted once grants are back.
        try await server.setUploads(#"{"refuse_grants":{"status":503,"message":"maintenance"}}"#)
        let busy = try await server.server("POST", "/uploads", key: id.requestKey("grant-1-1"), body)
        #expect(busy.status == 503)
        let settings = try await server.setUploads(#"{"refuse_grants":null}"#)
        #expect(settings["refuse_grants"] is NSNull)
        let granted = try await server.server("POST", "/uploads", key: id.requestKey("grant-1-1"), body)
        #expect(granted.status == 200 && granted.header("Idempotent-Replayed") == nil, "\(granted.text)")

        // Over the largest file: 413. A body that is not one: 400.
        let large = try await server.server("POST", "/uploads", key: "large", UploadServer.grantBody(id: AttachmentID(), bytes: seededBytes((1 << 20) + 1, seed: 1)))
        #expect(large.status == 413 && large.json["code"] as? String == "upload_too_large", "\(large.text)")
        for bad in [#"{"attachment_id":"not-a-uuid","size":1,"sha256":"\#(String(repeating: "0", count: 64))","content_type":"image/jpeg"}"#,
                    #"{"attachment_id":"\#(AttachmentID())","size":-1,"sha256":"00","content_type":"image/jpeg"}"#, "[1,2"] {
            let answer = try await server.server("POST", "/uploads", key: UUID().uuidString, bad)
            #expect(answer.status == 400 && answer.json["code"] as? String == "validation_failed", "\(bad): \(answer.text)")
        }
        let noKey = try await server.server("POST", "/uploads", body)
        #expect(noKey.status == 400 && noKey.json["code"] as? String == "idempotency_key_required")

        // A completion listing a segment the store does not hold, or holds otherwise: 400.
        let missing = try await server.server("POST", "/uploads/\(id)/complete", key: id.requestKey("complete-0"),
                                              #"{"segments":[{"etag":"0123456789abcdef0123456789abcdef","number":1,"size":2000}]}"#)
        #expect(missing.status == 400 && missing.json["code"] as? String == "segment_missing", "\(missing.text)")
        #expect((missing.json["message"] as? String)?.contains("segment 1 is not in the store") == true)
        let put = try await server.request("PUT", try #require(Self.urls(granted).first), body: bytes)
        #expect(put.status == 201)
        let wrongTag = try await server.server("POST", "/uploads/\(id)/complete", key: id.requestKey("complete-1"),
                                               #"{"segments":[{"etag":"0123456789abcdef0123456789abcdef","number":1,"size":2000}]}"#)
        #expect(wrongTag.status == 400 && wrongTag.json["code"] as? String == "segment_missing", "\(wrongTag.text)")
        let outOfOrder = try await server.server("POST", "/uploads/\(id)/complete", key: id.requestKey("complete-2"),
                                                 #"{"segments":[{"etag":"x","number":2,"size":2000}]}"#)
        #expect(outOfOrder.status == 400 && outOfOrder.json["code"] as? String == "validation_failed")
        #expect(try await server.applied().isEmpty, "nothing was completed")
        #expect(try await server.storeRequest("HEAD", id.description).status == 404, "no manifest was written")
    }
}
