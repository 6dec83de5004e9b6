import Foundation
import IdempotencyClaims
import OutboxCrypto
import Synchronization

/// The upload endpoints' work, apart from their claims: a grant's signed URLs, a completion's
/// checks, manifest and hash. What the control API changes at run time (the grants' lifetime, a
/// refusal of grants, a grant signed already expired) is this process's own, as faults are.
final class Uploads: Sendable {
    let client: SwiftStoreClient
    private let settings: Mutex<Settings>

    /// What `POST /_control/uploads` sets and `GET /_control/uploads` reads.
    struct Settings: Codable, Sendable, Equatable {
        var grantLifetimeSeconds: Double
        /// Grants are answered with this refusal while it is set.
        var refuseGrants: Refusal?
        /// The next grant made signs its URLs to expire at a past instant (its `expires_in` still
        /// states the lifetime), so the store refuses them (401) from the first request; making
        /// it sets this back to `false`. A replay answers its claim's URLs as they were.
        var nextGrantExpired = false

        enum CodingKeys: String, CodingKey {
            case grantLifetimeSeconds = "grant_lifetime_seconds"
            case refuseGrants = "refuse_grants"
            case nextGrantExpired = "next_grant_expired"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(grantLifetimeSeconds, forKey: .grantLifetimeSeconds)
            // Always present: `null` says grants are granted.
            try container.encode(refuseGrants, forKey: .refuseGrants)
            try container.encode(nextGrantExpired, forKey: .nextGrantExpired)
        }
    }

    struct Refusal: Codable, Sendable, Equatable {
        var status: Int
        var message: String
    }

    /// A completion that cannot be answered now (the store failed or was unreachable): a 5xx,
    /// which keeps no claim, so the same request is completed when asked again.
    struct Unavailable: Error {
        var response: ClaimResponse
    }

    init(_ store: UploadStore) {
        client = SwiftStoreClient(store)
        settings = Mutex(Settings(grantLifetimeSeconds: store.grantLifetimeSeconds))
    }

    var store: UploadStore { client.store }

    var current: Settings {
        settings.withLock { $0 }
    }

    /// Changes the settings; answers them as they are now.
    func change(_ body: (inout Settings) -> Void) -> Settings {
        settings.withLock { settings in
            body(&settings)
            return settings
        }
    }

    // MARK: The grant

    /// `POST /uploads`'s body.
    struct GrantRequest: Decodable {
        var attachment_id: String
        var size: Int64
        var sha256: String
        var content_type: String
        var name: String?
    }

    struct Grant: Encodable {
        struct Segment: Encodable {
            var number: Int
            var url: String
        }

        var segment_size: Int64
        var expires_in: Double
        var segments: [Segment]
    }

    /// Answers a grant request at `now`: one signed `PUT` URL per segment object, valid for the
    /// grant lifetime (rounded up to the second the store's signature names), or expired a minute
    /// before `now` when the control API said so of the next grant; 400 for a body that is not
    /// one, 413 for a file over the largest, the control API's refusal while it is set.
    func grant(_ body: Data, now: Date) -> ClaimResponse {
        let request: GrantRequest
        do {
            request = try JSONDecoder().decode(GrantRequest.self, from: body)
        } catch {
            return Self.invalid("expected {\"attachment_id\",\"size\",\"sha256\",\"content_type\",\"name\"}: \(Self.reason(error))")
        }
        guard let id = Self.canonicalID(request.attachment_id) else {
            return Self.invalid("attachment_id \(JSONText.quoted(request.attachment_id)) is not a UUID")
        }
        guard request.size >= 0 else { return Self.invalid("size \(request.size) is negative") }
        guard SHA256Digest(hex: request.sha256) != nil else { return Self.invalid("sha256 is not 64 hex digits") }
        guard request.content_type.contains("/") else {
            return Self.invalid("content_type \(JSONText.quoted(request.content_type)) is not a media type")
        }
        let (lifetime, refusal) = settings.withLock { ($0.grantLifetimeSeconds, $0.refuseGrants) }
        if let refusal {
            return .problem(status: refusal.status, code: "upload_refused", message: refusal.message)
        }
        guard request.size <= store.maxObjectBytes else {
            return .problem(status: 413, code: "upload_too_large",
                            message: "The file is \(request.size) bytes; at most \(store.maxObjectBytes) are accepted.")
        }
        let segmentBytes = store.segmentBytes
        let count = request.size == 0 ? 1 : Int((request.size + segmentBytes - 1) / segmentBytes)
        // Taken by the grant that signs URLs, and only by it.
        let expired = settings.withLock { settings in
            defer { settings.nextGrantExpired = false }
            return settings.nextGrantExpired
        }
        let expires = expired ? Int64(now.timeIntervalSince1970.rounded(.down)) - Self.pastExpirySeconds
            : Int64((now.timeIntervalSince1970 + lifetime).rounded(.up))
        let grant = Grant(
            segment_size: segmentBytes, expires_in: lifetime,
            segments: (1...count).map { number in
                .init(number: number, url: client.signedPutURL(of: UploadStore.segmentObject(id, number), expires: expires).absoluteString)
            })
        return Self.json(grant)
    }

    // MARK: The completion

    /// `POST /uploads/<id>/complete`'s body.
    struct CompleteRequest: Decodable {
        struct Segment: Decodable {
            var number: Int
            var etag: String
            var size: Int64
        }

        var segments: [Segment]
    }

    struct Completed: Encodable {
        var object: String
        var size: Int64
        var sha256: String
    }

    /// Completes attachment `id` from the listed segments: each is looked up in the store (its
    /// size and ETag must be the listed ones), a Static Large Object manifest of them is written
    /// at `<container>/<id>`, and the object is read back and hashed: the answer's size and
    /// SHA-256 are the store's, never the client's word.
    /// - Returns: 200 `{"object","sha256","size"}`; 400 for a body that is not one, 400
    ///   `segment_missing` for a segment the store does not hold as listed, 413 for more bytes
    ///   than the largest file.
    /// - Throws: ``Unavailable`` when the store failed or did not answer.
    func complete(_ rawID: String, _ body: Data) throws(Unavailable) -> ClaimResponse {
        guard let id = Self.canonicalID(rawID) else {
            return Self.invalid("\(JSONText.quoted(rawID)) in the path is not an attachment id (a UUID)")
        }
        let request: CompleteRequest
        do {
            request = try JSONDecoder().decode(CompleteRequest.self, from: body)
        } catch {
            return Self.invalid("expected {\"segments\":[{\"number\",\"etag\",\"size\"}, ...]}: \(Self.reason(error))")
        }
        guard !request.segments.isEmpty else { return Self.invalid("segments is empty: list every segment, from 1") }
        var total: Int64 = 0
        for (index, segment) in request.segments.enumerated() {
            guard segment.number == index + 1 else {
                return Self.invalid("segments[\(index)] is number \(segment.number); list them in order from 1")
            }
            guard segment.size >= 0, !segment.etag.isEmpty else {
                return Self.invalid("segment \(segment.number) needs a size of 0 or more and an etag")
            }
            total += segment.size
            guard total <= store.maxObjectBytes else {
                return .problem(status: 413, code: "upload_too_large",
                                message: "The segments hold more than \(store.maxObjectBytes) bytes, the most accepted.")
            }
        }
        for segment in request.segments {
            let object = UploadStore.segmentObject(id, segment.number)
            let answer = try ask("HEAD", client.url(of: object))
            switch answer.status {
            case 200...299:
                let size = answer.header("Content-Length").flatMap { Int64($0) }
                let etag = answer.header("Etag").map(Self.bareTag)
                guard size == segment.size, etag == Self.bareTag(segment.etag) else {
                    return Self.segmentMissing("segment \(segment.number) is in the store as \(size.map(String.init) ?? "?") bytes with ETag \(etag ?? "none"), not \(segment.size) bytes with ETag \(segment.etag)")
                }
            case 404:
                return Self.segmentMissing("segment \(segment.number) is not in the store")
            default:
                throw Self.unavailable("the store answered HEAD \(object) with \(answer.status)")
            }
        }
        let put = try ask("PUT", client.url(of: id, query: "multipart-manifest=put"),
                          headers: ["Content-Type": "application/octet-stream"], body: manifest(of: id, request.segments))
        switch put.status {
        case 200...299: break
        case 400, 409:
            // The store found a segment other than the HEADs did (changed meanwhile).
            return Self.segmentMissing("the store refused the manifest: \(String(decoding: put.body.prefix(500), as: UTF8.self))")
        default:
            throw Self.unavailable("the store answered the manifest's PUT with \(put.status)")
        }
        let read: SwiftStoreClient.Read
        do {
            read = try client.read(id)
        } catch {
            throw Self.unavailable("the object could not be read back: \(error)")
        }
        guard (200...299).contains(read.status), read.size == total else {
            throw Self.unavailable("the object read back answered \(read.status) with \(read.size) bytes, not the segments' \(total)")
        }
        return Self.json(Completed(object: client.reference(of: id), size: read.size, sha256: read.sha256.hex))
    }

    /// The Static Large Object manifest of attachment `id`'s segments, in order:
    /// `[{"etag":"<md5>","path":"/<container>/<id>/segments/<n>","size_bytes":n}, ...]`.
    private func manifest(of id: String, _ segments: [CompleteRequest.Segment]) -> Data {
        let entries = segments.map { segment in
            "{" + JSONText.quoted("etag") + ":" + JSONText.quoted(Self.bareTag(segment.etag))
                + "," + JSONText.quoted("path") + ":" + JSONText.quoted(client.manifestPath(of: UploadStore.segmentObject(id, segment.number)))
                + "," + JSONText.quoted("size_bytes") + ":" + String(segment.size) + "}"
        }
        return Data(("[" + entries.joined(separator: ",") + "]").utf8)
    }

    /// One request to the store; no answer is a 503 of the server's.
    private func ask(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil) throws(Unavailable) -> SwiftStoreClient.Answer {
        do {
            return try client.send(method, url, headers: headers, body: body)
        } catch {
            throw Unavailable(response: .problem(status: 503, code: "store_unreachable", message: "the object store did not answer: \(error)"))
        }
    }

    // MARK: Pieces

    /// How long before the grant a URL signed already expired expires: well past, whatever the
    /// rounding of the store's clock.
    static let pastExpirySeconds: Int64 = 60

    /// The canonical (upper-case) form of an attachment id; `nil` for a text that is no UUID.
    static func canonicalID(_ text: String) -> String? {
        UUID(uuidString: text)?.uuidString
    }

    /// An ETag without its quotes or weak mark, lower-cased: as the store and the client may
    /// each write the same MD5.
    static func bareTag(_ tag: String) -> String {
        var bare = Substring(tag.trimmingCharacters(in: .whitespaces))
        if bare.hasPrefix("W/") { bare = bare.dropFirst(2) }
        return bare.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
    }

    static func invalid(_ message: String) -> ClaimResponse {
        .problem(status: 400, code: "validation_failed", message: message)
    }

    static func segmentMissing(_ message: String) -> ClaimResponse {
        .problem(status: 400, code: "segment_missing", message: message)
    }

    static func unavailable(_ message: String) -> Unavailable {
        Unavailable(response: .problem(status: 502, code: "store_failed", message: message))
    }

    private static func json(_ value: some Encodable) -> ClaimResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, integers, doubles and arrays of them: encoding cannot fail.
        let body = (try? encoder.encode(value)) ?? Data()
        return ClaimResponse(status: 200, headers: [.init(name: "Content-Type", value: "application/json")], body: body)
    }

    /// A decoding error's gist, for a message.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "\(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: "not JSON"
        }
    }
}
