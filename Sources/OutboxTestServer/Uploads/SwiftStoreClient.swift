import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OutboxCrypto
import Synchronization

/// The server's side of the object store: TempURLs signed for the client's segment `PUT`s, and
/// the blocking requests a completion makes with the account's token (a connection's thread
/// waits for them, as it waits for its database).
final class SwiftStoreClient: Sendable {
    let store: UploadStore
    private let session: URLSession

    /// An answer of the store.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        /// The value of the header `name`, whatever its case.
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// A request to the store that got no answer (refused, reset, timed out).
    struct NoAnswer: Error, CustomStringConvertible {
        var description: String
    }

    init(_ store: UploadStore) {
        self.store = store
        session = URLSession(configuration: Self.configuration(store))
    }

    deinit {
        session.invalidateAndCancel()
    }

    private static func configuration(_ store: UploadStore) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = store.requestTimeoutSeconds
        // A large object is read whole to be hashed: only the wait for each packet is bounded.
        configuration.timeoutIntervalForResource = 24 * 3600
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return configuration
    }

    // MARK: Names and signatures

    /// The storage URL's text without a trailing `/`.
    private var base: String {
        var text = store.storageURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// `/v1/AUTH_test/<container>/<object>`: what a TempURL signature covers.
    func signedPath(of object: String) -> String {
        var account = store.storageURL.path
        while account.hasSuffix("/") { account.removeLast() }
        return "\(account)/\(store.container)/\(object)"
    }

    /// `/<container>/<object>`: a segment as a manifest names it.
    func manifestPath(of object: String) -> String {
        "/\(store.container)/\(object)"
    }

    /// `<container>/<object>`: the object's reference as a completion answers it.
    func reference(of object: String) -> String {
        "\(store.container)/\(object)"
    }

    /// The object's URL (its name holds only characters a path takes as they are), with `query`.
    func url(of object: String, query: String? = nil) -> URL {
        // The storage URL is a URL and the name holds only path characters.
        URL(string: "\(base)/\(store.container)/\(object)" + (query.map { "?" + $0 } ?? ""))!
    }

    /// A TempURL that lets its holder `PUT` `object` until `expires` (seconds since 1970, the
    /// last second it works): HMAC-SHA256 of `"PUT\n<expires>\n<path>"` under the account's key,
    /// 64 hex digits (Swift's `tempurl` takes that length as SHA-256).
    func signedPutURL(of object: String, expires: Int64) -> URL {
        let message = "PUT\n\(expires)\n\(signedPath(of: object))"
        let signature = HMACSHA256.authenticationCode(for: Array(message.utf8), key: Array(store.tempURLKey.utf8))
        return url(of: object, query: "temp_url_sig=\(Self.hex(signature))&temp_url_expires=\(expires)")
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: Requests

    /// Sends one request with the account's token and waits for its whole answer.
    /// - Throws: ``NoAnswer`` when none came.
    func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil) throws -> Answer {
        var request = request(method, url, headers: headers)
        if let body { request.httpBody = body }
        let waiting = Waiting<Answer>()
        session.dataTask(with: request) { data, response, error in
            if let http = response as? HTTPURLResponse {
                waiting.finish(.success(Answer(status: http.statusCode, headers: Self.headers(of: http), body: data ?? Data())))
            } else {
                waiting.finish(.failure(NoAnswer(description: "\(method) \(url.path): \(error.map { "\($0)" } ?? "no response")")))
            }
        }.resume()
        return try waiting.wait()
    }

    /// What a read of an object found: its status, and for a 2xx the bytes' count and SHA-256.
    struct Read: Sendable {
        var status: Int
        var size: Int64
        var sha256: SHA256Digest
    }

    /// Reads `object` with the account's token and hashes its bytes as they arrive: the object
    /// is never held whole in memory, however large.
    /// - Throws: ``NoAnswer`` when no answer came, or the read broke off.
    func read(_ object: String) throws -> Read {
        let hashing = HashingDelegate()
        let reader = URLSession(configuration: Self.configuration(store), delegate: hashing, delegateQueue: nil)
        defer { reader.finishTasksAndInvalidate() }
        reader.dataTask(with: request("GET", url(of: object))).resume()
        hashing.done.wait()
        return try hashing.state.withLock { state in
            if let error = state.error { throw NoAnswer(description: "GET \(object): \(error)") }
            guard let status = state.status else { throw NoAnswer(description: "GET \(object): no response") }
            return Read(status: status, size: state.count, sha256: state.hasher.finalize())
        }
    }

    private func request(_ method: String, _ url: URL, headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: url, timeoutInterval: store.requestTimeoutSeconds)
        request.httpMethod = method
        request.setValue(store.authToken, forHTTPHeaderField: "X-Auth-Token")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        // A fresh connection per request: on Linux, URLSession resends a request whose reused
        // connection the peer closed, without its body (see URLSessionTransport).
        request.setValue("close", forHTTPHeaderField: "Connection")
        return request
    }

    private static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return headers
    }

    /// One answer awaited by a blocked thread.
    private final class Waiting<Value: Sendable>: Sendable {
        private let result = Mutex<Result<Value, any Error>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        func finish(_ value: Result<Value, any Error>) {
            result.withLock { $0 = value }
            done.signal()
        }

        func wait() throws -> Value {
            done.wait()
            return try result.withLock { $0! }.get()
        }
    }
}

/// Hashes a response's body as its pieces arrive.
private final class HashingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    struct State {
        var status: Int?
        var count: Int64 = 0
        var hasher = SHA256Hasher()
        var error: (any Error)?
    }

    let state = Mutex(State())
    let done = DispatchSemaphore(value: 0)

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        state.withLock { $0.status = (response as? HTTPURLResponse)?.statusCode }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.withLock { state in
            data.withUnsafeBytes { state.hasher.update($0) }
            state.count += Int64(data.count)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state.withLock { $0.error = error }
        done.signal()
    }
}
