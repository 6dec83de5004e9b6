import Foundation
import OutboxCore
import OutboxCrypto

/// The wire of an attachment's upload (Docs/wire-attachments.md), as pure pieces: the bodies the engine
/// sends, the answers it reads, and what each status means. No I/O here.
enum UploadProtocol {
    /// `POST <uploads>`: the grant request.
    struct GrantRequest: Encodable {
        var attachment_id: String
        var size: Int64
        var sha256: String
        var content_type: String
        var name: String

        init(_ manifest: AttachmentManifest) {
            attachment_id = manifest.id.description
            size = manifest.size
            sha256 = manifest.sha256.hex
            content_type = manifest.contentType
            name = manifest.name
        }
    }

    /// A request's JSON body, its keys sorted: the same request sent again is the same bytes,
    /// which the server's claim compares.
    static func body(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Strings, integers and arrays of them: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data()
    }

    /// The grant: the segment size, each segment's signed URL, and how long they last.
    struct Grant: Decodable {
        struct Segment: Decodable {
            var number: Int
            var url: String
        }

        var segment_size: Int64
        var expires_in: Double
        var segments: [Segment]
    }

    /// `POST <uploads>/<id>/complete`.
    struct CompleteRequest: Encodable {
        struct Segment: Encodable {
            var number: Int
            var etag: String
            var size: Int64
        }

        var segments: [Segment]

        init(_ landed: [LandedSegment]) {
            segments = landed.map { Segment(number: $0.number, etag: $0.etag, size: $0.size) }
        }
    }

    /// The completed object.
    struct Completed: Decodable {
        var object: String
        var size: Int64
        var sha256: String
    }

    /// An error body's code and message, when it has them.
    struct Refusal: Decodable {
        var code: String?
        var message: String?
    }

    /// A grant checked against the file it is for: its URLs by segment number, each parsed.
    /// - Returns: `nil` (with why) when the grant does not cover the file: the server's mistake,
    ///   retried like an unreadable answer.
    static func checked(_ grant: Grant, for manifest: AttachmentManifest) -> Result<[Int: URL], GrantProblem> {
        guard grant.segment_size > 0, grant.expires_in > 0, grant.expires_in.isFinite else {
            return .failure(GrantProblem("segment size \(grant.segment_size) or lifetime \(grant.expires_in) is not positive"))
        }
        let count = AttachmentUpload.segmentCount(size: manifest.size, segmentSize: grant.segment_size)
        var urls: [Int: URL] = [:]
        for segment in grant.segments {
            guard (1...count).contains(segment.number), let url = URL(string: segment.url), url.scheme != nil else {
                return .failure(GrantProblem("segment \(segment.number)'s URL is not one of \(count) absolute URLs"))
            }
            urls[segment.number] = url
        }
        guard urls.count == count else { return .failure(GrantProblem("\(urls.count) URLs for \(count) segments")) }
        return .success(urls)
    }

    struct GrantProblem: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// What a status from the server (a grant, a completion) or the store (a segment) means.
    enum Meaning: Equatable {
        case success
        /// The signed URL expired or its signature is refused (the store's 401, 403): a new
        /// grant, never a failure.
        case grantExpired
        /// Try again later: 408, 429, 5xx, a 401 of the server's (a session to refresh).
        case later
        /// The attachment cannot go as it is: the write is held with the reason.
        case refused
    }

    /// The meaning of `status`, from the store (`fromStore`) or the server.
    static func meaning(of status: Int, fromStore: Bool) -> Meaning {
        switch status {
        case 200...299: .success
        case 401 where fromStore, 403 where fromStore: .grantExpired
        case 401, 408, 429, 500...599: .later
        case 400...499: .refused
        default: .later
        }
    }

    /// The meaning of a server's or store's answer: as its status says, but for the server's
    /// 409 `idempotency_in_progress` (a copy of the request is still being answered under its
    /// key), which is asked again later, as a write's outcome takes it.
    static func meaning(of response: TransportResponse, fromStore: Bool) -> Meaning {
        if !fromStore, response.statusCode == 409,
            (try? JSONDecoder().decode(Refusal.self, from: response.body))?.code == ErrorCode.idempotencyInProgress
        {
            return .later
        }
        return meaning(of: response.statusCode, fromStore: fromStore)
    }

    /// The store's ETag of a segment, without its quotes.
    static func etag(of response: TransportResponse) -> String? {
        guard var tag = response.header("ETag"), !tag.isEmpty else { return nil }
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        return tag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
