import Foundation
import Testing
import ThrowawaySwiftStore

/// The store the attachments feature will upload to, asked what the feature will rely on: an
/// upload through a TempURL lands, a URL past its expiry or with a bent signature is refused,
/// segments join into a static large object, and a HEAD tells whether a segment landed.
///
/// Expiries are fixed moments, never read from a clock: one in 2100 for a URL that works, one in
/// 2001 for a URL that has expired.
@Suite("The throwaway Swift store", .timeLimit(.minutes(10)))
struct ThrowawaySwiftStoreTests {
    static let future: Int64 = 4_102_444_800   // 2100-01-01
    static let past: Int64 = 1_000_000_000     // 2001-09-09

    let store: TemporarySwiftStore
    let key = TestSwiftStore.tempURLKey

    init() throws {
        store = try TestSwiftStore.shared()
    }

    /// The object's URL with a TempURL query for `method`, signed with the account's key.
    func tempURL(_ method: String, _ container: String, _ object: String, expires: Int64 = future) -> URL {
        let path = store.objectPath(container: container, object: object)
        return store.objectURL(container: container, object: object,
                               query: SwiftTempURL.query(method: method, path: path, expiresUnixSeconds: expires, key: key))
    }

    var token: [String: String] { ["X-Auth-Token": store.authToken] }

    @Test func aPutThroughATempURLLandsAndReadsBackWithTheToken() async throws {
        let container = try TestSwiftStore.freshContainer("tempurl-put")
        let photo = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let put = try await StoreClient.send("PUT", tempURL("PUT", container, "photo.jpg"), body: photo)
        #expect(put.status == 201)
        let get = try await StoreClient.send("GET", store.objectURL(container: container, object: "photo.jpg"), headers: token)
        #expect(get.status == 200)
        #expect(get.body == photo)
    }

    @Test func aTempURLPastItsExpiryIsRefused() async throws {
        let container = try TestSwiftStore.freshContainer("tempurl-expired")
        let put = try await StoreClient.send("PUT", tempURL("PUT", container, "late", expires: Self.past), body: Data("late".utf8))
        #expect(put.status == 401)
        let head = try await StoreClient.send("HEAD", store.objectURL(container: container, object: "late"), headers: token)
        #expect(head.status == 404, "nothing landed")
    }

    @Test func aTamperedSignatureIsRefused() async throws {
        let container = try TestSwiftStore.freshContainer("tempurl-tampered")
        let path = store.objectPath(container: container, object: "bent")
        let signature = SwiftTempURL.signature(method: "PUT", path: path, expiresUnixSeconds: Self.future, key: key)
        let bent = String(signature.dropLast()) + (signature.hasSuffix("0") ? "1" : "0")
        let cases = [
            "one hex digit changed": "temp_url_sig=\(bent)&temp_url_expires=\(Self.future)",
            "the expiry moved by a second": "temp_url_sig=\(signature)&temp_url_expires=\(Self.future + 1)",
            "signed for GET, sent as PUT": SwiftTempURL.query(method: "GET", path: path, expiresUnixSeconds: Self.future, key: key),
            "signed with another key": SwiftTempURL.query(method: "PUT", path: path, expiresUnixSeconds: Self.future, key: "not-the-key"),
        ]
        for (change, query) in cases {
            let put = try await StoreClient.send("PUT", store.objectURL(container: container, object: "bent", query: query), body: Data("x".utf8))
            #expect(put.status == 401, "\(change)")
        }
        // The same request, signed as it should be, lands: the refusals were the signatures'.
        let signed = try await StoreClient.send("PUT", tempURL("PUT", container, "bent"), body: Data("x".utf8))
        #expect(signed.status == 201)
    }

    @Test func segmentsPutThroughTempURLsJoinIntoAStaticLargeObject() async throws {
        let container = try TestSwiftStore.freshContainer("slo")
        let segments = [
            Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 % 251) }),
            Data((0..<12_345).map { UInt8(truncatingIfNeeded: 255 - $0 % 239) }),
        ]
        var manifest: [[String: Any]] = []
        for (index, segment) in segments.enumerated() {
            let name = "photo/segment-\(index)"
            let put = try await StoreClient.send("PUT", tempURL("PUT", container, name), body: segment)
            #expect(put.status == 201)
            let etag = try #require(put.header("Etag")).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            manifest.append(["path": "/\(container)/\(name)", "etag": etag, "size_bytes": segment.count])
        }
        let body = try JSONSerialization.data(withJSONObject: manifest)
        let completed = try await StoreClient.send(
            "PUT", store.objectURL(container: container, object: "photo", query: "multipart-manifest=put"), headers: token, body: body)
        #expect(completed.status == 201)

        let get = try await StoreClient.send("GET", store.objectURL(container: container, object: "photo"), headers: token)
        #expect(get.status == 200)
        #expect(get.body == segments[0] + segments[1])
        let head = try await StoreClient.send("HEAD", store.objectURL(container: container, object: "photo"), headers: token)
        #expect(head.header("Content-Length") == "\(segments[0].count + segments[1].count)")
        #expect(head.header("X-Static-Large-Object")?.lowercased() == "true")
    }

    @Test func aHeadSaysWhetherASegmentLanded() async throws {
        let container = try TestSwiftStore.freshContainer("segment-head")
        let name = "photo/segment-0"
        let url = store.objectURL(container: container, object: name)
        // With the token, and with the segment's own PUT TempURL (tempurl lets a HEAD through on
        // a PUT signature): what a client that holds only its upload URLs can ask.
        #expect(try await StoreClient.send("HEAD", url, headers: token).status == 404)
        #expect(try await StoreClient.send("HEAD", tempURL("PUT", container, name)).status == 404)

        let put = try await StoreClient.send("PUT", tempURL("PUT", container, name), body: Data(repeating: 7, count: 4_096))
        #expect(put.status == 201)
        let head = try await StoreClient.send("HEAD", url, headers: token)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "4096")
        #expect(try await StoreClient.send("HEAD", tempURL("PUT", container, name)).status == 200)
    }
}
