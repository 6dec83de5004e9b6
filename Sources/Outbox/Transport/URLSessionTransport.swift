public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OutboxCore

/// An ``OutboxTransport`` over `URLSession`.
///
/// ```swift
/// let transport = URLSessionTransport(
///     baseURL: URL(string: "https://api.example.com/v1")!,
///     timeoutSeconds: 30,
///     authorize: { ["Authorization": "Bearer \(try await tokens.fresh())"] }
/// )
/// ```
///
/// Credentials are asked for at send time (`authorize`), never stored with a queued row.
/// Redirects are not followed: a write is sent to the endpoint it was queued for, or its answer
/// is recorded as unexpected. Responses are never cached and no cookies are kept.
///
/// The endpoint is sent byte for byte as journaled, never re-encoded: one that cannot be (a row
/// an older engine accepted under a looser rule) throws ``URLSessionTransport.UnsendableEndpoint`` before anything
/// is sent.
public final class URLSessionTransport: OutboxTransport {
    /// The server's base URL; an endpoint `/products` is sent to `baseURL/products`.
    public let baseURL: URL
    /// How long one request may take before it counts as no response.
    public let timeoutSeconds: TimeInterval
    private let authorize: @Sendable () async throws -> [String: String]
    private let session: URLSession
    /// Segments' session: a segment of several MiB takes longer than a write on a slow link, so
    /// only the wait for each packet is bounded, not the whole upload.
    private let uploads: URLSession

    /// - Parameters:
    ///   - authorize: called before every send for fresh headers (authorization). Throwing
    ///     means no request was sent: the attempt is recorded as no response and retried.
    public init(
        baseURL: URL,
        timeoutSeconds: TimeInterval = 30,
        authorize: @escaping @Sendable () async throws -> [String: String] = { [:] }
    ) {
        self.baseURL = baseURL
        self.timeoutSeconds = timeoutSeconds
        self.authorize = authorize
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeoutSeconds
        configuration.timeoutIntervalForResource = timeoutSeconds
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        self.session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
        let uploading = URLSessionConfiguration.ephemeral
        uploading.timeoutIntervalForRequest = timeoutSeconds
        uploading.timeoutIntervalForResource = 24 * 3600
        uploading.urlCache = nil
        uploading.httpShouldSetCookies = false
        uploading.httpCookieAcceptPolicy = .never
        self.uploads = URLSession(configuration: uploading, delegate: NoRedirects(), delegateQueue: nil)
    }

    deinit {
        session.invalidateAndCancel()
        uploads.invalidateAndCancel()
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: try url(for: request.endpoint), timeoutInterval: timeoutSeconds)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in try await authorize() { urlRequest.setValue(value, forHTTPHeaderField: name) }
        #if canImport(FoundationNetworking)
        // On Linux, URLSession (over libcurl) resends a request whose reused connection the
        // server closed without answering, but without its body: the server then waits for a
        // body that never comes, and the attempt ends in a timeout instead of at once. A fresh
        // connection per request makes a lost response fail fast, as on Apple platforms.
        urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        urlRequest.httpBody = request.body
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return TransportResponse(statusCode: http.statusCode, headers: headers, body: data)
    }

    /// `baseURL` with the endpoint (a path, maybe with a query) appended, byte for byte.
    ///
    /// `URL(string:)` percent-encodes what it cannot hold (`%zz` becomes `%25zz`, `\` becomes
    /// `%5C`), and the HTTP client resolves `.` and `..` segments: either would send another
    /// endpoint than the journal holds. So the endpoint must pass the rule `enqueue` applies,
    /// and the URL is parsed without encoding and must print as the text it was made from.
    /// - Throws: ``URLSessionTransport.UnsendableEndpoint`` otherwise; nothing is sent.
    /// PUTs one segment of an attachment to its signed URL, without the app's authorization
    /// (the URL is the credential; the store must never see the server's token). In the
    /// foreground: the segment is read from its file (a few MiB) and sent from memory. An iOS app
    /// that wants uploads to go on while it is suspended gives the engine a transport whose
    /// `upload` hands the segment to a background `URLSession` (Docs/attachments.md).
    public func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: segment.url, timeoutInterval: timeoutSeconds)
        urlRequest.httpMethod = "PUT"
        for (name, value) in segment.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        #if canImport(FoundationNetworking)
        urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        let body = try segment.bytes()
        let (data, response) = try await uploads.upload(for: urlRequest, from: body, delegate: NoRedirects(progress: segment.progress))
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return TransportResponse(statusCode: http.statusCode, headers: headers, body: data)
    }

    func url(for endpoint: String) throws(URLSessionTransport.UnsendableEndpoint) -> URL {
        if let problem = OutboxRequest.endpointProblem(endpoint) {
            throw URLSessionTransport.UnsendableEndpoint(endpoint: endpoint, problem: problem)
        }
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let text = base + endpoint
        guard let url = URL(string: text, encodingInvalidCharacters: false), url.absoluteString == text else {
            throw URLSessionTransport.UnsendableEndpoint(endpoint: endpoint, problem: "would not stay as written in a URL on \(base)")
        }
        return url
    }
}

/// Refuses every redirect, so the 3xx itself is the answer; for a segment, tells its progress
/// as its bytes are sent.
private final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    let progress: (@Sendable (Int64) -> Void)?

    init(progress: (@Sendable (Int64) -> Void)? = nil) {
        self.progress = progress
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        progress?(totalBytesSent)
    }
}
