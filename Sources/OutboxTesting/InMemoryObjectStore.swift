public import Foundation
public import Outbox
import OutboxCrypto
import Synchronization

/// An object store and the server's upload endpoints in memory, speaking the protocol of
/// Docs/wire-attachments.md: `POST /uploads` grants signed segment URLs, a `PUT` of each segment lands it
/// (its ETag back), `POST /uploads/<id>/complete` joins the landed segments into one object and
/// answers its size and SHA-256. ``InMemoryServer`` routes its upload requests here, through
/// its claims and faults, and its ``InMemoryServer/upload(_:)`` here.
///
/// A signed URL carries its grant, its expiry (by ``now``) and a signature: one whose grant
/// expired, or whose signature is not the store's, is answered 401 as a real store answers it.
///
/// ```swift
/// let server = InMemoryServer()
/// server.objectStore.segmentSize = 1024
/// server.objectStore.expireGrants()          // every URL handed out answers 401 from now
/// server.objectStore.object(photo.id)        // the completed object's bytes
/// ```
public final class InMemoryObjectStore: Sendable {
    struct Upload {
        var size: Int64
        var sha256: String
        var contentType: String
        var segments: [Int: (bytes: Data, etag: String)] = [:]
    }

    struct State {
        var segmentSize: Int64 = 4 << 20
        var lifetimeSeconds: Double = 900
        var uploads: [String: Upload] = [:]
        var objects: [String: Data] = [:]
        /// Grants by id, with their expiry.
        var grants: [String: Date] = [:]
        var nextGrant = 1
        var puts: [String: Int] = [:]
        /// Segment `PUT`s that landed after their upload's object was completed, per upload.
        var putsAfterCompletion: [String: Int] = [:]
        var grantRequests = 0
        var completions = 0
        var refuseGrants: (status: Int, message: String)?
        var putFaults: [Int] = []
        var wrongCompletionHash = false
        /// Answers by `Idempotency-Key`, with their request's body: a repeat is answered the same.
        var claimed: [String: (body: Data, response: TransportResponse)] = [:]
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> Date
    /// The store's signing secret: a URL signed with anything else is refused.
    private let secret = UUID().uuidString

    /// - Parameter now: the store's clock, which grants expire by (a test's `ManualClock`).
    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    // MARK: Settings and faults

    /// The segment size grants set (4 MiB unless set).
    public var segmentSize: Int64 {
        get { state.withLock { $0.segmentSize } }
        set { state.withLock { $0.segmentSize = newValue } }
    }

    /// The lifetime grants state, in seconds (900 unless set).
    public var lifetimeSeconds: Double {
        get { state.withLock { $0.lifetimeSeconds } }
        set { state.withLock { $0.lifetimeSeconds = newValue } }
    }

    /// Every URL handed out so far answers 401 from now, as if its lifetime had passed.
    public func expireGrants() {
        state.withLock { $0.grants = $0.grants.mapValues { _ in .distantPast } }
    }

    /// Grant requests are refused with `status` (403, 413) and `message` from now on.
    public func refuseGrants(status: Int, message: String) {
        state.withLock { $0.refuseGrants = (status, message) }
    }

    /// Grant requests are granted again.
    public func acceptGrants() {
        state.withLock { $0.refuseGrants = nil }
    }

    /// The next segment `PUT`s are answered with these statuses, one each, storing nothing.
    public func failNextPuts(_ statuses: Int...) {
        state.withLock { $0.putFaults.append(contentsOf: statuses) }
    }

    /// Completions answer a SHA-256 that is not the object's (a server that joined the wrong
    /// segments).
    public func answerWrongHash() {
        state.withLock { $0.wrongCompletionHash = true }
    }

    // MARK: Reading back

    /// The completed object of attachment `id`; `nil` before its completion.
    public func object(_ id: AttachmentID) -> Data? {
        state.withLock { $0.objects[id.description] }
    }

    /// How many `PUT`s landed segment `number` of `id` (more than one: sent twice).
    public func puts(_ id: AttachmentID, segment number: Int) -> Int {
        state.withLock { $0.puts["\(id)/\(number)"] ?? 0 }
    }

    /// How many segment `PUT`s of `id` landed after its object was completed (none, when every
    /// landing reached the journal before the completion was asked for).
    public func putsAfterCompletion(_ id: AttachmentID) -> Int {
        state.withLock { $0.putsAfterCompletion[id.description] ?? 0 }
    }

    /// The segments of `id` the store holds now, each with the ETag it answered.
    public func etags(_ id: AttachmentID) -> [Int: String] {
        state.withLock { ($0.uploads[id.description]?.segments ?? [:]).mapValues(\.etag) }
    }

    /// The attachment and segment number a signed URL of this store names; `nil` for a URL that
    /// is not one.
    public static func segment(of url: URL) -> (attachment: AttachmentID, number: Int)? {
        let parts = url.path.split(separator: "/")
        guard url.scheme == "memory", url.host == "store", parts.count == 2, let id = AttachmentID(String(parts[0])),
            let number = Int(parts[1])
        else { return nil }
        return (id, number)
    }

    /// Every segment `PUT` that landed, in all.
    public var totalPuts: Int {
        state.withLock { $0.puts.values.reduce(0, +) }
    }

    /// Grant requests answered (replays of a claimed one are the server's, not counted here).
    public var grantRequests: Int {
        state.withLock { $0.grantRequests }
    }

    /// The segments of `id` the store holds now.
    public func landedSegments(_ id: AttachmentID) -> [Int] {
        state.withLock { ($0.uploads[id.description]?.segments.keys).map { Array($0).sorted() } ?? [] }
    }

    // MARK: The protocol

    /// Answers an upload endpoint's request; `nil` for any other endpoint.
    /// Grants and completions are claimed by their `Idempotency-Key`, as the server claims
    /// every write: a repeat with the same body is answered the same, with another body 409.
    func handle(_ request: TransportRequest, uploadsEndpoint: String = "/uploads") -> TransportResponse? {
        guard request.method == "POST", request.endpoint.hasPrefix(uploadsEndpoint) else { return nil }
        let rest = request.endpoint.dropFirst(uploadsEndpoint.count)
        let parts = rest.split(separator: "/")
        guard rest.isEmpty || (parts.count == 2 && parts[1] == "complete") else { return nil }
        let key = request.headers[OutboxHeader.idempotencyKey] ?? ""
        if let claimed = state.withLock({ $0.claimed[key] }) {
            return claimed.body == request.body ? claimed.response
                : Self.json(409, ["code": "idempotency_conflict", "message": "the key was used with another body"])
        }
        let response = rest.isEmpty ? grant(request.body) : complete(String(parts[0]), request.body)
        // A refusal for now (a 5xx) keeps no claim: the same request may be answered otherwise later.
        if !key.isEmpty, response.statusCode < 500 { state.withLock { $0.claimed[key] = (request.body, response) } }
        return response
    }

    private func grant(_ body: Data) -> TransportResponse {
        guard let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let id = json["attachment_id"] as? String, let size = (json["size"] as? NSNumber)?.int64Value,
            let sha = json["sha256"] as? String, let type = json["content_type"] as? String
        else { return Self.json(400, ["code": "validation_failed", "message": "attachment_id, size, sha256 and content_type are required"]) }
        return state.withLock { state in
            state.grantRequests += 1
            if let refusal = state.refuseGrants { return Self.json(refusal.status, ["code": "upload_refused", "message": refusal.message]) }
            if state.uploads[id] == nil || state.uploads[id]?.sha256 != sha {
                state.uploads[id] = Upload(size: size, sha256: sha, contentType: type)
            }
            let grant = "g\(state.nextGrant)"
            state.nextGrant += 1
            let expires = now().addingTimeInterval(state.lifetimeSeconds)
            state.grants[grant] = expires
            let count = size == 0 ? 1 : Int((size + state.segmentSize - 1) / state.segmentSize)
            let segments: [[String: Any]] = (1...count).map { number in
                let path = "/\(id)/\(number)"
                let stamp = Int64(expires.timeIntervalSince1970)
                return ["number": number, "url": "memory://store\(path)?grant=\(grant)&expires=\(stamp)&sig=\(sign(path, grant, stamp))"]
            }
            return Self.json(200, ["segment_size": state.segmentSize, "expires_in": state.lifetimeSeconds, "segments": segments])
        }
    }

    /// A segment `PUT` to a signed URL.
    func put(_ segment: SegmentUpload) -> TransportResponse {
        let bytes: Data
        do { bytes = try segment.bytes() } catch { return TransportResponse(statusCode: 400) }
        let url = segment.url
        let path = url.path
        let query = Dictionary(uniqueKeysWithValues: (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [])
            .map { ($0.name, $0.value ?? "") })
        let parts = path.split(separator: "/")
        return state.withLock { state in
            if !state.putFaults.isEmpty { return TransportResponse(statusCode: state.putFaults.removeFirst()) }
            guard let grant = query["grant"], let stamp = Int64(query["expires"] ?? ""), query["sig"] == sign(path, grant, stamp),
                let expires = state.grants[grant], expires > now(), Int64(now().timeIntervalSince1970) < stamp,
                parts.count == 2, let number = Int(parts[1]), state.uploads[String(parts[0])] != nil
            else { return TransportResponse(statusCode: 401, body: Data("Temp URL invalid".utf8)) }
            let id = String(parts[0])
            let etag = String(SHA256Digest(of: bytes).hex.prefix(32))
            state.uploads[id]!.segments[number] = (bytes, etag)
            state.puts["\(id)/\(number)", default: 0] += 1
            if state.objects[id] != nil { state.putsAfterCompletion[id, default: 0] += 1 }
            return TransportResponse(statusCode: 201, headers: ["ETag": "\"\(etag)\""])
        }
    }

    private func complete(_ id: String, _ body: Data) -> TransportResponse {
        guard let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let listed = json["segments"] as? [[String: Any]]
        else { return Self.json(400, ["code": "validation_failed", "message": "segments are required"]) }
        return state.withLock { state in
            guard let upload = state.uploads[id] else { return Self.json(404, ["code": "not_found", "message": "no upload \(id)"]) }
            var object = Data()
            for (index, entry) in listed.enumerated() {
                guard let number = entry["number"] as? Int, number == index + 1, let etag = entry["etag"] as? String,
                    let stored = upload.segments[number], stored.etag == etag, (entry["size"] as? NSNumber)?.intValue == stored.bytes.count
                else { return Self.json(400, ["code": "segment_missing", "message": "segment \(index + 1) is not in the store as listed"]) }
                object.append(stored.bytes)
            }
            state.completions += 1
            state.objects[id] = object
            let digest = state.wrongCompletionHash ? SHA256Digest(of: Data("not the file".utf8)) : SHA256Digest(of: object)
            return Self.json(200, ["object": "memory://objects/\(id)", "size": object.count, "sha256": digest.hex])
        }
    }

    private func sign(_ path: String, _ grant: String, _ expires: Int64) -> String {
        SHA256Digest(of: Data("\(secret)\n\(grant)\n\(expires)\n\(path)".utf8)).hex
    }

    private static func json(_ status: Int, _ body: [String: Any]) -> TransportResponse {
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: data)
    }
}
